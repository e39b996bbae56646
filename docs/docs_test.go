package docs

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"ctxlab/internal/cluster"
	"ctxlab/jsonnet"
	"ctxlab/starter/cli"
)

// page is a Markdown file split into what the checks read.
type page struct {
	path string
	// prose is the text outside code blocks; spans are its inline code spans.
	prose string
	spans []string
	// blocks are the fenced code blocks, by info string ("" for none).
	blocks []block
	// anchors are the GitHub anchors of its headings.
	anchors map[string]bool
}

type block struct {
	lang, text string
	line       int
}

var (
	fenceRe   = regexp.MustCompile("^\\s*```")
	spanRe    = regexp.MustCompile("`([^`]+)`")
	linkRe    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	headingRe = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*$`)
)

// pages reads README.md and every page of docs/.
func pages(t *testing.T) []page {
	t.Helper()
	files, err := filepath.Glob("*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs pages: %v", err)
	}
	files = append([]string{filepath.Join("..", "README.md")}, files...)
	var out []page
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parsePage(f, string(b)))
	}
	return out
}

func parsePage(path, text string) page {
	p := page{path: path, anchors: map[string]bool{}}
	var prose strings.Builder
	var cur *block
	var body strings.Builder
	for i, line := range strings.Split(text, "\n") {
		if fenceRe.MatchString(line) {
			if cur == nil {
				cur = &block{lang: strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "`")), line: i + 1}
				body.Reset()
			} else {
				cur.text = body.String()
				p.blocks = append(p.blocks, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil {
			body.WriteString(line + "\n")
			continue
		}
		prose.WriteString(line + "\n")
		if m := headingRe.FindStringSubmatch(line); m != nil {
			p.anchors[slug(m[2])] = true
		}
	}
	p.prose = prose.String()
	for _, m := range spanRe.FindAllStringSubmatch(p.prose, -1) {
		p.spans = append(p.spans, m[1])
	}
	return p
}

// slug is GitHub's anchor for a heading: lower case, punctuation dropped (but - and _), spaces as -.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Paying once: the response cache and spend control":            "paying-once-the-response-cache-and-spend-control",
		"A Temporal server on PostgreSQL: `starter server`":            "a-temporal-server-on-postgresql-starter-server",
		"Per-instance test commands and parsers (the harness's table)": "per-instance-test-commands-and-parsers-the-harnesss-table",
		"Running specs/paper.jsonnet":                                  "running-specspaperjsonnet",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestLinks checks that every relative link names a file that exists and, with #anchor, a heading of that page.
func TestLinks(t *testing.T) {
	all := pages(t)
	abs := func(path string) string {
		a, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	byPath := map[string]page{}
	for _, p := range all {
		byPath[abs(p.path)] = p
	}
	links := 0
	for _, p := range all {
		for _, m := range linkRe.FindAllStringSubmatch(p.prose, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			resolved := abs(p.path)
			if file != "" {
				resolved = abs(filepath.Join(filepath.Dir(p.path), file))
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s: link %s: %v", p.path, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			tp, ok := byPath[resolved]
			if !ok {
				t.Errorf("%s: link %s: an anchor into a file that is not a checked page", p.path, target)
				continue
			}
			if !tp.anchors[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", p.path, target, tp.path, anchor)
			}
		}
	}
	if links < 20 {
		t.Errorf("only %d relative links found: the link parser is broken", links)
	}
}

// help is what the starter and the worker accept: each starter command and its flags, and the worker's flags.
type help struct {
	commands map[string]map[string]bool // "run", "images build", ...
	worker   map[string]bool
}

// flagLineRe matches a flag line of a command's help: "  -J, --jpath DIR" or "      --runs string".
var flagLineRe = regexp.MustCompile(`(?m)^\s+(?:-(\w), )?--([\w.-]+)`)

func starterHelp(t *testing.T) help {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"-h"}, &out, &errb); code != 0 {
		t.Fatalf("starter -h: exit %d", code)
	}
	h := help{commands: map[string]map[string]bool{}, worker: map[string]bool{}}
	_, list, _ := strings.Cut(out.String(), "commands:")
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+)( build| pull)?\b`).FindAllStringSubmatch(list, -1) {
		name := m[1] + m[2]
		var o, e bytes.Buffer
		code := cli.Main(append(strings.Fields(name), "-h"), &o, &e)
		if code != 0 {
			t.Fatalf("starter %s -h: exit %d: %s", name, code, e.String())
		}
		flags := map[string]bool{"h": true, "help": true}
		for _, f := range flagLineRe.FindAllStringSubmatch(o.String()+e.String(), -1) {
			flags[f[2]] = true
			if f[1] != "" {
				flags[f[1]] = true
			}
		}
		h.commands[name] = flags
	}
	if len(h.commands) < 10 {
		t.Fatalf("starter -h lists %d commands: %v", len(h.commands), h.commands)
	}
	// The worker is a main package: its flags are its connection flags and those its main registers.
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	new(cluster.Options).Register(fs, "", "")
	fs.VisitAll(func(f *flag.Flag) { h.worker[f.Name] = true })
	src, err := os.ReadFile(filepath.Join("..", "worker", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`flag\.\w+\(\s*(?:&[\w.]+,\s*)?"([\w-]+)"`).FindAllStringSubmatch(string(src), -1) {
		h.worker[m[1]] = true
	}
	if !h.worker["queues"] || !h.worker["tls-ca"] {
		t.Fatalf("worker flags not found: %v", h.worker)
	}
	return h
}

// foreignFlags are flags the pages quote of other tools, alone in a code span: they are not the starter's.
var foreignFlags = map[string]string{
	"network":   "docker run --network",
	"verbosity": "Django's runtests.py",
	"v":         "pytest and unittest -v",
	"vv":        "pytest -vv",
	"rA":        "pytest -rA",
	"mod":       "go build -mod=mod",
	"test.v":    "a Go test binary's -test.v",
	"p":         "pytest -p PLUGIN",
	"m":         "python -m MODULE",
}

var (
	// starterRe matches a command line that runs the starter (after environment assignments), not the word in prose.
	starterRe   = regexp.MustCompile(`^\s*(?:[A-Z_]+=\S*\s+)*(?:go run \./starter|\./starter|starter)((?:\s+[a-z][\w-]*)*)`)
	workerRe    = regexp.MustCompile(`(?:^|\s)(?:go run \./worker|\./worker)\s`)
	flagTokenRe = regexp.MustCompile(`^\[?(--?[A-Za-z][\w.-]*)`)
)

// commandUnits are the texts a command may be written in: each inline code span, and each line of a code block
// (with its backslash continuations) other than Jsonnet and diffs.
func commandUnits(p page) []string {
	units := slices.Clone(p.spans)
	for _, b := range p.blocks {
		if b.lang == "jsonnet" || b.lang == "diff" { // a diff's "-" lines are removed lines, not flags
			continue
		}
		units = append(units, strings.Split(strings.ReplaceAll(b.text, "\\\n", " "), "\n")...)
	}
	return units
}

// TestCommandsAndFlags checks that every `starter COMMAND` the pages write is a command of the starter and that
// every flag written after it is one of that command's flags (as its -h lists them); flags of `./worker` lines are
// the worker's, and a code span that is a flag alone (`--runs DIR`) must be a flag of some command or the worker.
func TestCommandsAndFlags(t *testing.T) {
	h := starterHelp(t)
	anyFlag := map[string]bool{}
	for _, flags := range h.commands {
		for f := range flags {
			anyFlag[f] = true
		}
	}
	for f := range h.worker {
		anyFlag[f] = true
	}
	checked := map[string]int{}
	for _, p := range pages(t) {
		for _, unit := range commandUnits(p) {
			// A comment ends the command.
			if i := strings.Index(unit, " #"); i >= 0 {
				unit = unit[:i]
			}
			if strings.HasPrefix(unit, "-") && !strings.HasPrefix(unit, "---") {
				name := strings.TrimLeft(strings.Fields(unit)[0], "-")
				name, _, _ = strings.Cut(name, "=")
				if _, foreign := foreignFlags[name]; !foreign && !anyFlag[name] {
					t.Errorf("%s: `%s`: no starter command or worker has the flag -%s", p.path, unit, name)
				}
				checked["span flag"]++
				continue
			}
			if workerRe.MatchString(unit) {
				for _, tok := range strings.Fields(unit) {
					if m := flagTokenRe.FindStringSubmatch(tok); m != nil {
						name, _, _ := strings.Cut(strings.TrimLeft(m[1], "-"), "=")
						if !h.worker[name] {
							t.Errorf("%s: %q: the worker has no flag -%s", p.path, unit, name)
						}
						checked["worker flag"]++
					}
				}
				continue
			}
			for _, seg := range splitCommands(unit) {
				m := starterRe.FindStringSubmatchIndex(seg)
				if m == nil {
					continue
				}
				words := strings.Fields(seg[m[2]:m[3]])
				if len(words) == 0 {
					continue // `starter -h`, or the word in prose
				}
				name := words[0]
				if name == "images" && len(words) > 1 {
					name += " " + words[1]
				}
				flags, ok := h.commands[name]
				if !ok {
					t.Errorf("%s: %q: starter has no command %q", p.path, seg, name)
					continue
				}
				checked["command"]++
				for _, tok := range strings.Fields(seg[m[3]:]) {
					fm := flagTokenRe.FindStringSubmatch(tok)
					if fm == nil {
						continue
					}
					flagName, _, _ := strings.Cut(strings.TrimLeft(fm[1], "-"), "=")
					if !flags[flagName] {
						t.Errorf("%s: %q: starter %s has no flag -%s", p.path, seg, name, flagName)
					}
					checked["flag"]++
				}
			}
		}
	}
	t.Logf("checked: %v", checked)
	if checked["command"] < 30 || checked["flag"] < 50 || checked["span flag"] < 20 || checked["worker flag"] < 5 {
		t.Errorf("too few mentions checked (%v): the parser is broken", checked)
	}
}

// splitCommands cuts a line at shell separators between commands (a spaced pipe, &&, ;).
func splitCommands(s string) []string {
	for _, sep := range []string{" | ", " && ", "; "} {
		s = strings.ReplaceAll(s, sep, "\x00")
	}
	return strings.Split(s, "\x00")
}

// TestJsonnetBlocks compiles every ```jsonnet block: a whole spec as it is, any other block as a method of a
// minimal experiment (after `local ctxlab = import 'ctxlab.libsonnet';`).
func TestJsonnetBlocks(t *testing.T) {
	n := 0
	for _, p := range pages(t) {
		for _, b := range p.blocks {
			if b.lang != "jsonnet" {
				continue
			}
			n++
			src := b.text
			if !strings.Contains(src, "ctxlab.experiment(") {
				src = fmt.Sprintf(`local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({ name: 'docs', dataset: ctxlab.datasets.swebench('d.jsonl'), models: [ctxlab.models.offline],
  methods: [(
%s
  )] })
`, src)
			}
			spec := filepath.Join(t.TempDir(), "spec.jsonnet")
			if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := jsonnet.Compile(spec, jsonnet.Options{}); err != nil {
				t.Errorf("%s:%d: the jsonnet block does not compile: %v", p.path, b.line, err)
			}
		}
	}
	if n < 3 {
		t.Errorf("only %d jsonnet blocks found", n)
	}
}

// TestCompileCommandsRun runs each `starter compile` line of a code block whose arguments are real files of the
// repository (no placeholder), from the repository's root, and expects it to succeed.
func TestCompileCommandsRun(t *testing.T) {
	all := pages(t)
	t.Chdir("..")
	ran := 0
	for _, p := range all {
		for _, b := range p.blocks {
			if b.lang == "jsonnet" {
				continue
			}
			for _, line := range strings.Split(strings.ReplaceAll(b.text, "\\\n", " "), "\n") {
				if i := strings.Index(line, " #"); i >= 0 {
					line = line[:i]
				}
				line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "go run ./starter "))
				args, ok := shellWords(strings.TrimPrefix(line, "starter "))
				if !ok || len(args) < 2 || args[0] != "compile" || !runnable(args[1:]) {
					continue
				}
				var out, errb bytes.Buffer
				if code := cli.Main(args, &out, &errb); code != 0 {
					t.Errorf("%s: %q: exit %d: %s", p.path, line, code, errb.String())
				}
				ran++
			}
		}
	}
	if ran == 0 {
		t.Error("no runnable starter compile line in the docs")
	}
}

// runnable reports whether compile arguments name only files that exist (the spec) and hold no placeholders.
func runnable(args []string) bool {
	for i, a := range args {
		if strings.ContainsAny(a, "$<>") {
			return false
		}
		if i == 0 {
			if _, err := os.Stat(a); err != nil {
				return false
			}
		}
	}
	return true
}

// shellWords splits a command line into words as a shell would for the simple quoting docs use.
func shellWords(s string) ([]string, bool) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, true
}
