package diff

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// Outcome says how a patch was applied, as recorded on a results row.
type Outcome string

// Outcomes of Apply. The first three are for patches that parsed; the others name the error class.
const (
	Applied         Outcome = "applied"           // strict: every hunk matched exactly (possibly shifted, as git apply allows)
	AppliedWithFuzz Outcome = "applied_with_fuzz" // some hunk matched only after ignoring context lines (patch --fuzz)
	Failed          Outcome = "failed"            // some hunk or file matched under no strategy
	Empty           Outcome = "empty"             // nothing to apply
	Malformed       Outcome = "malformed"         // not a patch
	Escapes         Outcome = "escapes"           // a path leaves the worktree: refused
	Unsupported     Outcome = "unsupported"       // submodules, binary changes without data
)

// OutcomeOf classifies an error of Parse, ApplyDir, ApplyFiles or Apply.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Applied
	case errors.Is(err, ErrEmpty):
		return Empty
	case errors.Is(err, ErrEscapes):
		return Escapes
	case errors.Is(err, ErrMalformed):
		return Malformed
	case errors.Is(err, ErrUnsupported):
		return Unsupported
	default:
		return Failed
	}
}

// DefaultFuzz is the fuzz factor of the fuzzy fallback: SWE-bench's harness runs `patch --batch --fuzz=5 -p1`.
const DefaultFuzz = 5

// Hunk names one hunk of a patch and how it applied or why it did not.
type Hunk struct {
	Path string `json:"path"`
	// Hunk is the one-based hunk number within its file's entry; 0 for the file as a whole.
	Hunk int `json:"hunk"`
	// Offset is how many lines away from its stated position the hunk matched.
	Offset int `json:"offset,omitempty"`
	// Fuzz is how many context lines at each end were ignored to match.
	Fuzz   int    `json:"fuzz,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// mode selects how hunks are matched.
type mode struct {
	// fuzz is the largest number of context lines that may be ignored at each end of a hunk (0: exact).
	fuzz int
	// reject sets hunks and files that do not match aside instead of failing.
	reject bool
}

// Report says what Apply did.
type Report struct {
	Outcome Outcome `json:"outcome"`
	// Stage is the strategy that applied the patch, or the last one tried: strict, reject or fuzz.
	Stage string `json:"stage"`
	// Files written, created, deleted (empty unless the patch applied).
	Result
	// Shifted lists the hunks that applied away from their stated position or with fuzz.
	Shifted []Hunk `json:"shifted,omitempty"`
	// Rejected lists the hunks (and whole files, Hunk 0) that strict matching could not place, with why: what
	// `git apply --reject` would leave in .rej files. Set whenever the strict stage failed.
	Rejected []Hunk `json:"rejected,omitempty"`
}

// Options of Apply.
type Options struct {
	// Fuzz is the fuzz factor of the last fallback (DefaultFuzz when 0; negative turns fallbacks off).
	Fuzz int
}

// Apply applies a patch to dir with SWE-bench's harness's ladder of strategies, all or nothing at each step:
//
//  1. strict, as `git apply`: every hunk's lines must match exactly, at the stated position or shifted;
//  2. reject, as `git apply --reject`: the hunks that match are kept and the others listed (Report.Rejected). The
//     harness accepts this step only when nothing is rejected, so it decides nothing strict did not; what it adds is
//     the record of which hunks failed and why;
//  3. fuzzy, as `patch --fuzz=5`: a hunk may match after ignoring up to Fuzz of its leading and trailing context
//     lines, nearest its stated position. Changed lines (- lines) must always match exactly.
//
// Unlike the harness, the fuzzy step starts from the original files, not from the tree step 2 left half-patched,
// and a patch that still has rejected hunks is never applied in part. Path checks are the same in every step:
// escapes, empty and malformed patches are errors (classify them with OutcomeOf) and nothing is written.
func Apply(dir, patch string, o Options) (Report, error) {
	files, err := Parse(patch)
	if err != nil {
		return Report{Outcome: OutcomeOf(err)}, err
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return Report{Outcome: Failed}, fmt.Errorf("worktree %s: %w", dir, err)
	}
	root, err := os.OpenRoot(realDir)
	if err != nil {
		return Report{Outcome: Failed}, fmt.Errorf("worktree %s: %w", dir, err)
	}
	defer root.Close()
	src := func(p string) ([]byte, bool, error) { return readInside(root, realDir, p) }
	done := func(rep Report, pl *plan, outcome Outcome) (Report, error) {
		res, err := commit(root, pl)
		rep.Result, rep.Shifted, rep.Outcome = res, pl.hunks, outcome
		if err != nil {
			rep.Outcome = Failed
		}
		return rep, err
	}

	strict := newPlan(src, mode{})
	err = strict.apply(files)
	if err == nil {
		return done(Report{Stage: "strict"}, strict, Applied)
	}
	if !errors.Is(err, ErrConflict) || o.Fuzz < 0 {
		return Report{Outcome: OutcomeOf(err), Stage: "strict"}, err
	}

	rej := newPlan(src, mode{reject: true})
	if rerr := rej.apply(files); rerr != nil {
		return Report{Outcome: OutcomeOf(rerr), Stage: "reject"}, rerr
	}
	rep := Report{Stage: "reject", Rejected: rej.rejected}
	if len(rej.rejected) == 0 {
		// Cannot happen with this matcher (strict failed on some hunk), but if it does, the patch applied.
		return done(rep, rej, Applied)
	}

	fuzz := o.Fuzz
	if fuzz == 0 {
		fuzz = DefaultFuzz
	}
	fz := newPlan(src, mode{fuzz: fuzz})
	rep.Stage = "fuzz"
	if gnu := asGNUPatchReads(patch); gnu != patch {
		if files, err = Parse(gnu); err != nil {
			rep.Outcome = OutcomeOf(err)
			return rep, err
		}
	}
	if ferr := fz.apply(files); ferr != nil {
		rep.Outcome = OutcomeOf(ferr)
		return rep, ferr
	}
	outcome := Applied
	for _, h := range fz.hunks {
		if h.Fuzz > 0 {
			outcome = AppliedWithFuzz
		}
	}
	return done(rep, fz, outcome)
}

// asGNUPatchReads is the patch as `patch` reads it, the harness's last step: once a +++ line ends in CRLF, every
// line from it on loses its CR ("Stripping trailing CRs from patch; use --binary to disable.").
func asGNUPatchReads(patch string) string {
	at := -1
	for i := 0; i < len(patch); {
		end := strings.IndexByte(patch[i:], '\n')
		if end < 0 {
			break
		}
		if line := patch[i : i+end]; strings.HasPrefix(line, "+++ ") && strings.HasSuffix(line, "\r") {
			at = i
			break
		}
		i += end + 1
	}
	if at < 0 {
		return patch
	}
	return patch[:at] + strings.ReplaceAll(patch[at:], "\r\n", "\n")
}

// lineEndsNote says, of a hunk whose lines are not in the file, whether they are there with other line ends (what
// GNU patch reports as "different line endings"), so the failure names its cause; "" when they are not.
func lineEndsNote(lines, probe []string) string {
	plain := func(ls []string) []string {
		out := make([]string, len(ls))
		for i, l := range ls {
			out[i] = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		}
		return out
	}
	if len(probe) == 0 || find(plain(lines), plain(probe), 0, 0) < 0 {
		return ""
	}
	end := func(ls []string) string {
		for _, l := range ls {
			if strings.HasSuffix(l, "\r\n") {
				return "CRLF"
			}
		}
		return "LF"
	}
	return fmt.Sprintf("; its lines are in the file with other line ends (the patch's end in %s, the file's in %s)",
		end(probe), end(lines))
}

// hunkLines splits a fragment into the lines it expects (context and deletions) and the lines it leaves (context and
// additions), and counts its leading and trailing context.
func hunkLines(fr *gitdiff.TextFragment) (old, new []string, lead, trail int) {
	for _, l := range fr.Lines {
		if l.Op != gitdiff.OpAdd {
			old = append(old, l.Line)
		}
		if l.Op != gitdiff.OpDelete {
			new = append(new, l.Line)
		}
	}
	for _, l := range fr.Lines {
		if l.Op != gitdiff.OpContext {
			break
		}
		lead++
	}
	for i := len(fr.Lines) - 1; i >= 0 && fr.Lines[i].Op == gitdiff.OpContext; i-- {
		trail++
	}
	if lead == len(fr.Lines) { // a hunk of context only
		trail = 0
	}
	return old, new, lead, trail
}

// applyShifted applies the fragments (sorted by position) to src, searching for each hunk's lines nearest to where
// the patch says they are, below the end of the previous hunk. With m.fuzz > 0 a hunk that does not match is
// tried again ignoring context lines at its ends, as GNU patch does: at fuzz f it ignores up to f lines of the
// longer context and correspondingly fewer of the shorter one.
func applyShifted(name string, frags []*gitdiff.TextFragment, index map[*gitdiff.TextFragment]int, src []byte,
	m mode) ([]byte, []Hunk, []Hunk, error) {
	// Hunks apply in order and never overlap, so the result is built front to back: done holds the finished lines,
	// lines[si:] the part of the source no hunk has touched yet, where the next hunk is searched. Positions "in the
	// result" are len(done) + (source index - si).
	lines := splitLines(src)
	done := make([]string, 0, len(lines)+16)
	si := 0
	var shifted, rejected []Hunk
	delta := 0 // where the last hunk was found relative to its stated line, plus the lines it added
	for _, fr := range frags {
		old, new, lead, trail := hunkLines(fr)
		stated := int(fr.OldPosition) - 1
		if fr.OldLines == 0 {
			stated = int(fr.OldPosition) // an insertion is stated after the line it follows
		}
		want := max(stated+delta, len(done)) // in the result
		wantSrc := want - len(done) + si
		context := max(lead, trail)
		maxFuzz := min(m.fuzz, context)
		pos, fuzz, skipLead, skipTrail := -1, 0, 0, 0 // pos: source index of the hunk's first line
		for f := 0; f <= maxFuzz && pos < 0; f++ {
			var pl, pt int
			var atStart, atEnd bool
			if m.fuzz == 0 {
				// git apply: a hunk stated at the file's first line must match there, and one without trailing
				// context must match at the end (apply.c match_beginning, match_end).
				atStart = fr.OldPosition <= 1
				atEnd = trail == 0 && fr.LinesAdded+fr.LinesDeleted > 0
			} else {
				// GNU patch (locate_hunk): the shorter context is fuzzed less; where that goes below zero the hunk
				// is anchored to the start (if stated there) or the end of the file.
				pf, sf := f+lead-context, f+trail-context
				atStart = pf < 0 && fr.OldPosition <= 1
				atEnd = sf < 0
				pl, pt = clamp(pf, 0, lead), clamp(sf, 0, trail)
			}
			probe := old[pl : len(old)-pt]
			if p := findAnchored(lines, probe, wantSrc+pl, si, atStart, atEnd); p >= 0 {
				pos, fuzz, skipLead, skipTrail = p-pl, f, pl, pt
			}
		}
		if pos < 0 {
			ends := lineEndsNote(lines[si:], old)
			h := Hunk{Path: name, Hunk: index[fr], Reason: fmt.Sprintf("%s: hunk #%d (@@ -%d,%d): its lines are not in the file%s",
				name, index[fr], fr.OldPosition, fr.OldLines, ends)}
			if m.reject {
				rejected = append(rejected, h)
				continue
			}
			return nil, nil, nil, &ConflictError{Path: name, Hunk: index[fr], Reason: "no matching lines found" +
				fuzzNote(m.fuzz) + ends}
		}
		at := len(done) + pos - si // the hunk's position in the result
		if at != want || fuzz > 0 {
			shifted = append(shifted, Hunk{Path: name, Hunk: index[fr], Offset: at - stated, Fuzz: fuzz})
		}
		start, end := pos+skipLead, pos+len(old)-skipTrail
		done = append(done, lines[si:start]...)
		done = append(done, new[skipLead:len(new)-skipTrail]...)
		si = end
		delta = at - stated + len(new) - len(old)
	}
	done = append(done, lines[si:]...)
	n := 0
	for _, l := range done {
		n += len(l)
	}
	out := make([]byte, 0, n)
	for _, l := range done {
		out = append(out, l...)
	}
	return out, shifted, rejected, nil
}

func fuzzNote(f int) string {
	if f == 0 {
		return " (exact match, any offset)"
	}
	return fmt.Sprintf(" (with fuzz up to %d)", f)
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

// findAnchored is find restricted to the start of lines, its end, or both (the whole file).
func findAnchored(lines, probe []string, want, floor int, atStart, atEnd bool) int {
	switch {
	case atStart && atEnd:
		if floor == 0 && len(probe) == len(lines) && matchAt(lines, probe, 0) {
			return 0
		}
		return -1
	case atStart:
		if floor == 0 && len(probe) <= len(lines) && matchAt(lines, probe, 0) {
			return 0
		}
		return -1
	case atEnd:
		if p := len(lines) - len(probe); p >= floor && matchAt(lines, probe, p) {
			return p
		}
		return -1
	}
	return find(lines, probe, want, floor)
}

// find returns the start of the occurrence of probe in lines nearest to want, not before floor; -1 if none. An empty
// probe matches at want.
func find(lines, probe []string, want, floor int) int {
	last := len(lines) - len(probe) // last possible start
	if last < floor {
		return -1
	}
	want = clamp(want, floor, last)
	if len(probe) == 0 {
		return want
	}
	for d := 0; ; d++ {
		lo, hi := want-d, want+d
		if lo < floor && hi > last {
			return -1
		}
		if lo >= floor && matchAt(lines, probe, lo) {
			return lo
		}
		if d > 0 && hi <= last && matchAt(lines, probe, hi) {
			return hi
		}
	}
}

func matchAt(lines, probe []string, at int) bool {
	for i, l := range probe {
		if lines[at+i] != l {
			return false
		}
	}
	return true
}
