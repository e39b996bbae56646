// Package agent is the agent method's read-only tools over one repository snapshot (search fixed strings or a
// regex, open a file or a line range, list a folder, find a Go or Python definition), the budget on the tokens of
// tool output the agent may see, and the record of every line it saw, which is the method's context. It knows
// nothing of Temporal: activities/agent*.go drive it one turn at a time.
package agent

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"ctxlab/activities/search"
	"ctxlab/internal/offlinetask"
)

// Snapshot is the repository at base_commit as the tools read it: every path, the symlinks' targets, and a reader
// of a regular file's text.
type Snapshot struct {
	// Paths lists every entry, sorted; symlinks included.
	Paths []string
	// Links maps a symlink's path to its target as stored in the tree.
	Links map[string]string
	// Read returns a regular file's text; false when it cannot be read.
	Read func(path string) (string, bool)
}

// ErrOutside is the error of a path that names something outside the snapshot.
var ErrOutside = errors.New("path is outside the repository")

// maxFileBytes is search.Grep's bound: a larger file is not searched.
const maxFileBytes = 1 << 20

// maxLinkHops bounds symlink resolution (a cycle of links ends here).
const maxLinkHops = 16

// Resolve turns a path a tool call names into a snapshot path: relative, slash-separated, no ".." component, and
// every symlink on the way followed inside the snapshot. An absolute path, a ".." component, or a link whose target
// leaves the repository is refused with ErrOutside.
func (s Snapshot) Resolve(p string) (string, error) {
	p = strings.TrimSpace(strings.ReplaceAll(p, "\\", "/"))
	if strings.HasPrefix(p, "/") || (len(p) >= 2 && p[1] == ':') {
		return "", fmt.Errorf("%q: %w (absolute)", p, ErrOutside)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("%q: %w (..)", p, ErrOutside)
		}
	}
	cur := path.Clean("/" + p)[1:]
	for hops := 0; ; hops++ {
		if hops > maxLinkHops {
			return "", fmt.Errorf("%q: too many symlinks", p)
		}
		next, followed, err := s.followOne(cur)
		if err != nil {
			return "", fmt.Errorf("%q: %w", p, err)
		}
		if !followed {
			return cur, nil
		}
		cur = next
	}
}

// followOne replaces the first symlink among p's prefixes by its target; followed is false when p has none.
func (s Snapshot) followOne(p string) (string, bool, error) {
	if p == "" {
		return p, false, nil
	}
	parts := strings.Split(p, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		target, ok := s.Links[prefix]
		if !ok {
			continue
		}
		if strings.HasPrefix(target, "/") {
			return "", false, fmt.Errorf("symlink %s points to an absolute path: %w", prefix, ErrOutside)
		}
		joined := path.Join(path.Dir(prefix), target)
		if joined == ".." || strings.HasPrefix(joined, "../") {
			return "", false, fmt.Errorf("symlink %s points out of the repository: %w", prefix, ErrOutside)
		}
		rest := parts[i+1:]
		if joined == "." {
			joined = ""
		}
		return strings.TrimPrefix(strings.Join(append([]string{joined}, rest...), "/"), "/"), true, nil
	}
	return p, false, nil
}

// Line is one line of a tool's output and, when it shows a repository line, which one.
type Line struct {
	Text string
	Path string // "" for a line that shows no repository text (a header, a folder listing)
	No   int    // 1-based line number in Path
}

// Result is a tool's output before the budget cuts it.
type Result struct {
	Lines []Line
}

func (r *Result) note(format string, args ...any) {
	r.Lines = append(r.Lines, Line{Text: fmt.Sprintf(format, args...)})
}

// Limits bound one tool call's output before the token budget does.
type Limits struct {
	MaxHits  int // search hits listed (default 50)
	MaxLines int // lines an open shows (default 400)
}

func (l Limits) withDefaults() Limits {
	if l.MaxHits <= 0 {
		l.MaxHits = 50
	}
	if l.MaxLines <= 0 {
		l.MaxLines = 400
	}
	return l
}

// Run executes one tool call. An error is the call's fault (an unknown tool, a path outside the snapshot, a bad
// regex) and is shown to the agent as the result; it never fails the step.
func (s Snapshot) Run(c offlinetask.AgentCall, lim Limits) (Result, error) {
	lim = lim.withDefaults()
	switch c.Tool {
	case offlinetask.ToolSearch:
		return s.search(c.String("pattern"), c.Bool("regex"), c.String("path"), lim)
	case offlinetask.ToolOpen:
		return s.open(c.String("path"), c.Int("start"), c.Int("end"), lim)
	case offlinetask.ToolList:
		return s.list(c.String("path"))
	case offlinetask.ToolDefinition:
		return s.definition(c.String("name"), lim)
	}
	return Result{}, fmt.Errorf("unknown tool %q (tools: %s)", c.Tool, strings.Join(offlinetask.AgentTools, ", "))
}

// files returns the regular files under a folder prefix ("" for all), with their text.
func (s Snapshot) files(under string) []search.File {
	var out []search.File
	for _, p := range s.Paths {
		if _, link := s.Links[p]; link {
			continue // a link's target is listed itself when it is inside the snapshot
		}
		if under != "" && p != under && !strings.HasPrefix(p, under+"/") {
			continue
		}
		if text, ok := s.Read(p); ok {
			out = append(out, search.File{Path: p, Text: text})
		}
	}
	return out
}

func (s Snapshot) search(pattern string, regex bool, under string, lim Limits) (Result, error) {
	var res Result
	if pattern == "" {
		return res, errors.New("search needs a pattern")
	}
	if under != "" {
		var err error
		if under, err = s.Resolve(under); err != nil {
			return res, err
		}
	}
	files := s.files(under)
	var hits []search.Hit
	if regex {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return res, fmt.Errorf("bad regex: %w", err)
		}
		for _, f := range files {
			if len(f.Text) > maxFileBytes || strings.IndexByte(f.Text, 0) >= 0 {
				continue // as search.Grep does: generated, data and binary files are not code
			}
			for i, l := range strings.Split(f.Text, "\n") {
				if re.MatchString(l) {
					hits = append(hits, search.Hit{Path: f.Path, Line: i + 1, Pattern: pattern})
				}
			}
		}
	} else {
		hits = search.Grep(files, []string{pattern})
	}
	// Only files with a hit shown are split into lines: splitting every file took a fifth of a search's time.
	byPath := map[string]string{}
	for _, f := range files {
		byPath[f.Path] = f.Text
	}
	texts := map[string][]string{}
	res.note("%d matches for %q", len(hits), pattern)
	for i, h := range hits {
		if i == lim.MaxHits {
			res.note("... %d more matches not shown", len(hits)-lim.MaxHits)
			break
		}
		lines, ok := texts[h.Path]
		if !ok {
			lines = strings.Split(byPath[h.Path], "\n")
			texts[h.Path] = lines
		}
		text := lines[h.Line-1]
		res.Lines = append(res.Lines, Line{Text: fmt.Sprintf("%s:%d: %s", h.Path, h.Line, text), Path: h.Path, No: h.Line})
	}
	return res, nil
}

func (s Snapshot) open(p string, start, end int, lim Limits) (Result, error) {
	var res Result
	resolved, err := s.Resolve(p)
	if err != nil {
		return res, err
	}
	text, ok := s.Read(resolved)
	if !ok {
		return res, fmt.Errorf("%s: no such file", p)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return res, fmt.Errorf("%s is a binary file", p)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if start < 1 {
		start = 1
	}
	if end < 1 || end > len(lines) {
		end = len(lines)
	}
	if start > end {
		return res, fmt.Errorf("%s has %d lines; cannot show %d-%d", p, len(lines), start, end)
	}
	cut := false
	if end-start+1 > lim.MaxLines {
		end, cut = start+lim.MaxLines-1, true
	}
	res.note("[%s lines %d-%d of %d]", resolved, start, end, len(lines))
	for n := start; n <= end; n++ {
		res.Lines = append(res.Lines, Line{Text: fmt.Sprintf("%5d| %s", n, lines[n-1]), Path: resolved, No: n})
	}
	if cut {
		res.note("... open %s with start=%d to read on", resolved, end+1)
	}
	return res, nil
}

func (s Snapshot) list(p string) (Result, error) {
	var res Result
	dir := ""
	if strings.TrimSpace(p) != "" && strings.TrimSpace(p) != "." {
		var err error
		if dir, err = s.Resolve(p); err != nil {
			return res, err
		}
	}
	seen := map[string]bool{}
	var names []string
	for _, q := range s.Paths {
		rest := q
		if dir != "" {
			var ok bool
			if rest, ok = strings.CutPrefix(q, dir+"/"); !ok {
				continue
			}
		}
		name := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			name = rest[:i+1]
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return res, fmt.Errorf("%s: no such folder", p)
	}
	sort.Strings(names)
	res.note("[%s]", cmpOr(dir, "."))
	for _, n := range names {
		res.note("%s", n)
	}
	return res, nil
}

func (s Snapshot) definition(name string, lim Limits) (Result, error) {
	var res Result
	if name == "" {
		return res, errors.New("definition needs a name")
	}
	short := name
	if i := strings.LastIndex(name, "."); i >= 0 {
		short = name[i+1:]
	}
	var found int
	for _, f := range s.files("") {
		if !strings.HasSuffix(f.Path, ".go") && !strings.HasSuffix(f.Path, ".py") {
			continue
		}
		lines := strings.Split(f.Text, "\n")
		for i, l := range lines {
			if !search.DefinesName(l, short) {
				continue
			}
			sn := search.Around(f.Path, f.Text, i+1, 0)
			found++
			res.note("[%s lines %d-%d: %s]", f.Path, sn.Start, sn.End, cmpOr(sn.Name, short))
			for n := sn.Start; n <= sn.End && n-sn.Start < lim.MaxLines; n++ {
				res.Lines = append(res.Lines, Line{Text: fmt.Sprintf("%5d| %s", n, lines[n-1]), Path: f.Path, No: n})
			}
			break // one definition per file: the first
		}
	}
	if found == 0 {
		return res, fmt.Errorf("no Go or Python definition of %s", name)
	}
	return res, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
