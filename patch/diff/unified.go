package diff

import (
	"fmt"
	"strings"
)

// Context is the number of unchanged lines Unified shows around each change, as git does by default.
const Context = 3

const noNewline = "\\ No newline at end of file\n"

// Why not a library: the unified writers in the module proxy were tried against this one. pmezard/go-difflib drops
// the "\ No newline at end of file" marker (a file without a final newline comes out with a spurious line, which git
// apply rejects or mis-applies), and aymanbagabas/go-udiff (gopls' diff) writes the same hunk format but picks
// other alignments: on the 2,550 random edits of TestUnifiedRandomRoundTrip's generator its text differed from
// this writer's on 768, and was longer (not a shortest diff) on 167 (TestUnifiedIsShortest checks ours is). The
// demo's gold patches (demobench) and the patches of search/replace answers are written here, so another
// alignment would change the demo dataset and its rows; results must stay byte-identical.

// Unified returns a git-style diff that turns old into new for the file at path (a slash-separated repository
// path), or "" when they are equal. A nil old means the file is created, a nil new that it is deleted (an empty but
// non-nil slice is an existing empty file). Hunks carry Context lines of context; a last line without a newline is
// marked "\ No newline at end of file". The output is accepted by git apply and by ApplyFiles/ApplyDir.
func Unified(path string, old, new []byte) string {
	if old == nil && new == nil {
		return ""
	}
	if old != nil && new != nil && string(old) == string(new) {
		return ""
	}
	a, b := quoteName("a/"+path), quoteName("b/"+path)
	var out strings.Builder
	fmt.Fprintf(&out, "diff --git %s %s\n", a, b)
	switch {
	case old == nil:
		out.WriteString("new file mode 100644\n")
		if len(new) == 0 {
			return out.String()
		}
		fmt.Fprintf(&out, "--- /dev/null\n+++ %s\n", b)
	case new == nil:
		out.WriteString("deleted file mode 100644\n")
		if len(old) == 0 {
			return out.String()
		}
		fmt.Fprintf(&out, "--- %s\n+++ /dev/null\n", a)
	default:
		fmt.Fprintf(&out, "--- %s\n+++ %s\n", a, b)
	}
	writeHunks(&out, splitLines(old), splitLines(new), Context)
	return out.String()
}

// splitLines cuts text into lines that keep their "\n"; only the last may lack one.
func splitLines(text []byte) []string {
	var lines []string
	s := string(text)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

type opKind uint8

const (
	opEqual opKind = iota
	opDelete
	opInsert
)

// edit is one step of a line script: keep, delete or insert one line. oldPos and newPos are the numbers of old and
// new lines before this step.
type edit struct {
	kind           opKind
	line           string
	oldPos, newPos int
}

// lineScript returns the steps that turn a into b: the common prefix and suffix are kept, the middle is diffed with
// Myers' algorithm.
func lineScript(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var kinds []opKind
	for i := 0; i < pre; i++ {
		kinds = append(kinds, opEqual)
	}
	kinds = append(kinds, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for i := 0; i < suf; i++ {
		kinds = append(kinds, opEqual)
	}
	script := make([]edit, len(kinds))
	x, y := 0, 0
	for i, k := range kinds {
		e := edit{kind: k, oldPos: x, newPos: y}
		switch k {
		case opEqual:
			e.line = a[x]
			x++
			y++
		case opDelete:
			e.line = a[x]
			x++
		case opInsert:
			e.line = b[y]
			y++
		}
		script[i] = e
	}
	return script
}

// maxDistance bounds the number of differences myers searches for; its memory grows with the square.
const maxDistance = 2000

// myers returns a shortest edit script from a to b (E. Myers, "An O(ND) Difference Algorithm and Its Variations",
// 1986), deletions before insertions within a change. Memory is O(D^2) for D differences; beyond maxDistance
// differences it gives up and replaces everything.
func myers(a, b []string) []opKind {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(n, m)
	}
	limit := n + m
	if limit > maxDistance {
		// Past maxDistance differences the middle is shown as replaced wholesale, to bound memory.
		limit = maxDistance
	}
	off := limit + 1
	v := make([]int, 2*limit+3)
	// trace[d] holds v[k] for k in [-d, d] as it was before round d.
	var trace [][]int
	for d := 0; d <= limit; d++ {
		snap := make([]int, 2*d+1)
		copy(snap, v[off-d:off+d+1])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // step down: insert
			} else {
				x = v[off+k-1] + 1 // step right: delete
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m, d)
			}
		}
	}
	return replaceAll(n, m)
}

// replaceAll is the script that deletes all n old lines and inserts all m new ones.
func replaceAll(n, m int) []opKind {
	out := make([]opKind, 0, n+m)
	for i := 0; i < n; i++ {
		out = append(out, opDelete)
	}
	for i := 0; i < m; i++ {
		out = append(out, opInsert)
	}
	return out
}

func backtrack(trace [][]int, n, m, d int) []opKind {
	var rev []opKind
	x, y := n, m
	for ; d > 0; d-- {
		prev := trace[d] // index k+d
		at := func(k int) int { return prev[k+d] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			rev = append(rev, opEqual)
			x--
			y--
		}
		if pk == k+1 {
			rev = append(rev, opInsert)
		} else {
			rev = append(rev, opDelete)
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		rev = append(rev, opEqual)
		x--
		y--
	}
	out := make([]opKind, len(rev))
	for i, k := range rev {
		out[len(rev)-1-i] = k
	}
	return normalize(out)
}

// normalize puts deletions before insertions inside each run of changes, the order diff tools print.
func normalize(ops []opKind) []opKind {
	for i := 0; i < len(ops); {
		if ops[i] == opEqual {
			i++
			continue
		}
		j := i
		dels := 0
		for j < len(ops) && ops[j] != opEqual {
			if ops[j] == opDelete {
				dels++
			}
			j++
		}
		for t := i; t < j; t++ {
			if t-i < dels {
				ops[t] = opDelete
			} else {
				ops[t] = opInsert
			}
		}
		i = j
	}
	return ops
}

// writeHunks writes the @@ hunks of the script from a to b with ctx lines of context.
func writeHunks(out *strings.Builder, a, b []string, ctx int) {
	script := lineScript(a, b)
	var changes []int
	for i, e := range script {
		if e.kind != opEqual {
			changes = append(changes, i)
		}
	}
	for c := 0; c < len(changes); {
		start := max(changes[c]-ctx, 0)
		last := changes[c]
		c++
		// Join the next change while the gap of equal lines between them is at most 2*ctx.
		for c < len(changes) && changes[c]-last-1 <= 2*ctx {
			last = changes[c]
			c++
		}
		end := min(last+ctx+1, len(script))
		writeHunk(out, script[start:end])
	}
}

func writeHunk(out *strings.Builder, h []edit) {
	oldCount, newCount := 0, 0
	for _, e := range h {
		if e.kind != opInsert {
			oldCount++
		}
		if e.kind != opDelete {
			newCount++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(h[0].oldPos, oldCount), hunkRange(h[0].newPos, newCount))
	for _, e := range h {
		switch e.kind {
		case opEqual:
			out.WriteByte(' ')
		case opDelete:
			out.WriteByte('-')
		case opInsert:
			out.WriteByte('+')
		}
		out.WriteString(e.line)
		if !strings.HasSuffix(e.line, "\n") {
			out.WriteString("\n" + noNewline)
		}
	}
}

// hunkRange formats one side of a hunk header: the first line (one-based) and the count, where an empty range names
// the line before it and a count of one is left out, as git writes them.
func hunkRange(pos, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", pos)
	case 1:
		return fmt.Sprintf("%d", pos+1)
	default:
		return fmt.Sprintf("%d,%d", pos+1, count)
	}
}

// quoteName quotes a path the way git does when it holds a double quote, a backslash, a control character or a
// byte outside ASCII.
func quoteName(name string) string {
	needs := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			needs = true
			break
		}
	}
	if !needs {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
