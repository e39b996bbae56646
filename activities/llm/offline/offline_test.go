package offline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/contexts"
	"ctxlab/activities/llm"
	"ctxlab/patch/diff"
	"ctxlab/specs"
)

var repoFiles = map[string]string{
	"calc.go":               file,
	"calc_test.go":          "package calc\n\nfunc TestAdd(t *testing.T) { if Add(1, 2) != 3 { t.Fatal(\"Add subtracts\") } }\n",
	"docs/calc.md":          "# calc\n\nAdd adds two numbers; Mul multiplies them.\n",
	"format.go":             "package calc\n\n// Format prints a result.\nfunc Format(n int) string { return fmt.Sprint(n) }\n",
	"internal/util/util.go": "package util\n\nfunc Clamp(x int) int { return x }\n",
	"cmd/calc/main.go":      "package main\n\nfunc main() { fmt.Println(calc.Add(1, 2), calc.Mul(2, 3)) }\n",
}

func read(p string) (string, bool) { t, ok := repoFiles[p]; return t, ok }

const issue = "`calc.Add` subtracts instead of adding, and `calc.Mul` adds\n\n" +
	"**Describe the bug**\nAdd(1, 2) returns -1. The error says \"calculation went wrong here\". Run `calc --mode add`.\n"

func paths() []string {
	var out []string
	for p := range repoFiles {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestLocalizeAnswersParse sends the localizer's answers through the parser the activities use: every sample's
// list parses to repository paths, the best is the file that declares the named functions, a sample repeats itself,
// and the answers come in several list styles.
func TestLocalizeAnswersParse(t *testing.T) {
	in := LocalizeInput{Issue: issue, Paths: paths(), Read: read}
	styles := map[string]bool{}
	for s := range 3 {
		ans := Localize(in, s)
		if ans != Localize(in, s) {
			t.Errorf("sample %d is not reproducible", s)
		}
		got := llm.ParseRankedPaths(ans, func(p string) bool { _, ok := repoFiles[p]; return ok })
		if len(got) == 0 || got[0] != "calc.go" {
			t.Errorf("sample %d: parsed %v from\n%s", s, got, ans)
		}
		if len(got) > 5 {
			t.Errorf("sample %d lists %d paths", s, len(got))
		}
		styles[strings.SplitN(strings.Split(ans, "\n")[2], " ", 2)[0]] = true
	}
	if len(styles) < 2 {
		t.Errorf("all samples use one list style: %v", styles)
	}
	if got := Localize(LocalizeInput{Issue: issue, Read: read}, 0); len(llm.ParseRankedPaths(got, nil)) != 0 {
		t.Errorf("empty inventory gave paths: %q", got)
	}
}

// TestLocalizeSamplesDisagree checks that the per-sample seed changes answers on some issues.
func TestLocalizeSamplesDisagree(t *testing.T) {
	differ := 0
	for _, q := range []string{issue, "Format prints the wrong number for Clamp", "the docs say Mul multiplies",
		"main prints Add and Mul results in the wrong order; util Clamp is fine", "calc test fails for Add"} {
		in := LocalizeInput{Issue: q, Paths: paths(), Read: read}
		if Localize(in, 0) != Localize(in, 1) || Localize(in, 1) != Localize(in, 2) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("samples never differ: the localizer ignores its seed")
	}
}

// TestEvidencePlanParses sends the planner's answer through ParseSearchPlan.
func TestEvidencePlanParses(t *testing.T) {
	ans := PlanEvidence(EvidenceInput{Issue: issue, Files: []string{"format.go"}, Read: read, MaxSearches: 4, MaxStrings: 8})
	plan, err := llm.ParseSearchPlan(ans, 4, 8)
	if err != nil {
		t.Fatalf("%v\n%s", err, ans)
	}
	kinds := map[string][]string{}
	for _, s := range plan.Searches {
		kinds[s.Kind] = append(kinds[s.Kind], s.Strings...)
	}
	if !slices.Contains(kinds[llm.SearchDefinition], "Add") || !slices.Contains(kinds[llm.SearchDefinition], "Mul") {
		t.Errorf("no definition search for the named functions: %v", kinds)
	}
	if !slices.Contains(kinds[llm.SearchString], "calculation went wrong here") || !slices.Contains(kinds[llm.SearchString], `"mode"`) {
		t.Errorf("no string search for the quoted message and the flag: %v", kinds)
	}
	// A selected file that declares Add turns it into a callers search.
	ans = PlanEvidence(EvidenceInput{Issue: issue, Files: []string{"calc.go"}, Read: read, MaxSearches: 1, MaxStrings: 1})
	plan, err = llm.ParseSearchPlan(ans, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Searches) != 1 || len(plan.Searches[0].Strings) != 1 {
		t.Errorf("limits ignored: %+v", plan)
	}
	ans = PlanEvidence(EvidenceInput{Issue: issue, Files: []string{"calc.go"}, Read: read})
	if !strings.Contains(ans, `"callers"`) || !strings.Contains(ans, `"Add("`) {
		t.Errorf("no callers search for a function the selected file declares:\n%s", ans)
	}
}

// TestPatchFormatsRoundTrip writes the oracle's patch in both edit formats and reads each back with the parsers the
// patch activity uses: both give a diff that changes the file exactly as the gold patch does.
func TestPatchFormatsRoundTrip(t *testing.T) {
	c := contexts.Context{Blocks: []contexts.Block{{Path: "calc.go", Kind: contexts.KindFile, Text: file}}}
	res, err := OraclePatch(gold, c)
	if err != nil {
		t.Fatal(err)
	}
	readBytes := func(p string) ([]byte, bool) { s, ok := read(p); return []byte(s), ok }
	want, err := diff.ApplyFiles(readBytes, gold)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{FormatDiff, FormatSearchReplace} {
		ans, err := FormatPatch(res.Patch, format)
		if err != nil {
			t.Fatal(err)
		}
		var patch string
		if format == FormatDiff {
			patch, err = llm.ExtractDiff(ans)
		} else {
			var blocks []llm.Replace
			if blocks, err = llm.ParseSearchReplace(ans); err == nil {
				if len(blocks) != 2 {
					t.Errorf("%d blocks, want one per hunk", len(blocks))
				}
				patch, err = llm.SearchReplaceDiff(blocks, read)
			}
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, ans)
		}
		got, err := diff.ApplyFiles(readBytes, patch)
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, patch)
		}
		if string(got["calc.go"]) != string(want["calc.go"]) {
			t.Errorf("%s: result differs from the gold patch's:\n%s", format, got["calc.go"])
		}
	}
	// Nothing to emit: an answer without an edit, which the parsers report as ErrNoDiff.
	ans, _ := FormatPatch("", FormatSearchReplace)
	if _, err := llm.ParseSearchReplace(ans); !errors.Is(err, llm.ErrNoDiff) {
		t.Errorf("empty answer: %v", err)
	}
	if _, err := FormatPatch(res.Patch, "whole"); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestProviderAnswersByTask(t *testing.T) {
	p := Provider{}
	resp, err := p.Complete(context.Background(), llm.Request{Task: specs.Localize.Task,
		Messages: []llm.Message{{Role: "user", Content: "Which files? " + issue}},
		Offline:  &LocalizeInput{Issue: issue, Paths: paths(), Read: read}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.PromptTokens < 20 || resp.Usage.CompletionTokens < 5 || resp.CostUSD != 0 || resp.Model != Name {
		t.Errorf("response %+v", resp)
	}
	_, err = p.Complete(context.Background(), llm.Request{Task: specs.Patch.Task})
	if llm.KindOf(err) != errkind.BadRequest {
		t.Errorf("request without offline input: %v", err)
	}
}

// TestEvidencePlanFollowsCallsNamedLikeTheIssue: a selected file calls displayWidth, which it does not declare, and
// the issue is about widths, so the plan looks for displayWidth's definition (and not for fmt.Sprintf's).
func TestEvidencePlanFollowsCallsNamedLikeTheIssue(t *testing.T) {
	files := map[string]string{"table.go": "package t\n\nfunc (t *Table) cellWidth(s string) int {\n\treturn displayWidth(s) + padding(s)\n}\n\nfunc x() { fmt.Sprintf(\"\") }\n"}
	ans := PlanEvidence(EvidenceInput{Issue: "Columns have the wrong width with accents", Files: []string{"table.go"},
		Read: func(p string) (string, bool) { s, ok := files[p]; return s, ok }})
	plan, err := llm.ParseSearchPlan(ans, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Searches) != 1 || plan.Searches[0].Kind != llm.SearchDefinition ||
		!slices.Equal(plan.Searches[0].Strings, []string{"displayWidth"}) {
		t.Errorf("plan %+v, want a definition search for displayWidth only", plan)
	}
}
