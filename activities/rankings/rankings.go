// Package rankings computes a repository snapshot's BM25 ranking against an issue once and shares it: every retrieve
// step that ranks the same snapshot, cut into the same unit, with the same BM25 parameters, against the same issue
// text (whatever its method, model or budget) reads one ranking. A ranking is stored under the digest of
// everything it depends on (Key) in a run's rankings folder, so steps of other worker processes read it too; a
// worker also keeps the snapshots it chunked (the chunks and each file's line count), bounded by their size, so a
// step whose ranking was already made does not cut the snapshot again.
package rankings

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"ctxlab/activities/bm25"
	"ctxlab/activities/chunk"
	"ctxlab/activities/repo"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// Version names the code a ranking is computed with: package chunk's units, package bm25's tokenizer and scoring,
// and this package's documents and file filter. Change it when any of them changes what a ranking is, so that
// rankings stored by the old code are not read.
const Version = "ctxlab-ranking-v1"

// MaxFileBytes skips generated or data files that no retriever should index whole.
const MaxFileBytes = 1 << 20

// Ranker is how a snapshot is ranked: the unit it is cut into (with the window of the window unit and of other
// units' fallback) and BM25's parameters.
type Ranker struct {
	Unit   specs.RetrieveUnit `json:"unit"`
	Window int                `json:"window"`
	K1     float64            `json:"k1"`
	B      float64            `json:"b"`
}

// RankerOf is the ranking a BM25 retrieve step asks for, its defaults filled in, so that steps that spell the same
// ranking differently share it.
func RankerOf(p specs.RetrieveParams) (Ranker, error) {
	r := Ranker{Unit: p.Unit, Window: p.Window, K1: bm25.DefaultK1, B: bm25.DefaultB}
	if r.Window < 1 {
		r.Window = chunk.DefaultWindow
	}
	if p.K1 != 0 {
		r.K1 = p.K1
	}
	if p.B != nil {
		r.B = *p.B
	}
	if _, err := ChunkUnit(r.Unit); err != nil {
		return r, err
	}
	return r, bm25.Params{K1: r.K1, B: r.B}.Check()
}

// ChunkUnit is the chunk unit a retrieval unit cuts files into: SWE-bench's file-level documents are whole files;
// every other retrieval unit is package chunk's of the same name.
func ChunkUnit(unit specs.RetrieveUnit) (chunk.Unit, error) {
	if unit == specs.UnitSWEBenchFile {
		return chunk.File, nil
	}
	return chunk.ParseUnit(string(unit))
}

// Doc is the text a chunk is ranked by: its text, or for SWE-bench's file-level unit its path and text.
func Doc(unit specs.RetrieveUnit, c chunk.Chunk) string {
	if unit == specs.UnitSWEBenchFile {
		return c.Path + "\n" + c.Text
	}
	return c.Text
}

// rank builds the BM25 index of the chunks' documents and ranks them for the query.
func (r Ranker) rank(c *Chunked, query string) []int {
	ix := bm25.New(bm25.Params{K1: r.K1, B: r.B})
	for _, ch := range c.Chunks {
		ix.Add(Doc(r.Unit, ch))
	}
	return ix.Rank(query)
}

// Key is everything a BM25 ranking depends on: the code, the snapshot (its manifest's content address), the ranker
// and the query's text (by its SHA-256).
type Key struct {
	Version  string  `json:"version"`
	Snapshot cas.Ref `json:"snapshot"`
	Ranker
	Query string `json:"query_sha256"`
}

// KeyOf is the key of ranking the snapshot with r against query.
func KeyOf(snapshot cas.Ref, r Ranker, query string) Key {
	sum := sha256.Sum256([]byte(query))
	return Key{Version: Version, Snapshot: snapshot, Ranker: r, Query: hex.EncodeToString(sum[:])}
}

// Digest is the key's hex SHA-256 (struct fields marshal in declaration order: a stable encoding).
func (k Key) Digest() string {
	b, err := json.Marshal(k)
	if err != nil {
		panic(fmt.Sprintf("rankings: a key of plain fields does not marshal: %v", err)) // unreachable
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Chunked is a snapshot cut into one unit: its chunks in snapshot order (each file's together) and the line count
// of each file chunked.
type Chunked struct {
	Chunks    []chunk.Chunk
	FileLines map[string]int
	// spans are where each bare chunk's text is in its file's text, and fileBytes each file's length, so that
	// withText gives a bare chunk its text back by slicing, without walking the file's lines again.
	spans     []span
	fileBytes map[string]int
}

// span is a chunk's text as byte offsets into its file's text.
type span struct{ from, to int32 }

// Snapshot is a repository snapshot to chunk: its manifest, the manifest's content address (which keys the
// chunk cache) and how a file's text is read.
type Snapshot struct {
	Ref      cas.Ref
	Manifest repo.Manifest
	Read     func(ctx context.Context, path string) (string, error)
}

// chunkSnapshot reads every text file of the snapshot and cuts it into the unit. Symlinks, empty files, files over
// MaxFileBytes and binary files (a NUL in the first 8,000 bytes) are left out. A chunk whose text is its file's
// lines Start..End, as package chunk cuts every chunk, holds that part of the file's text, or, when bare, no text
// at all (withText gives it back): a memo then keeps a chunked snapshot for the size of its chunks' bounds, the
// text being the worker's text cache's.
func chunkSnapshot(ctx context.Context, s Snapshot, unit chunk.Unit, window int, bare bool) (*Chunked, error) {
	out := &Chunked{FileLines: map[string]int{}, fileBytes: map[string]int{}}
	for _, e := range s.Manifest.Files {
		if e.Mode == repo.ModeSymlink || e.Size > MaxFileBytes || e.Size == 0 {
			continue
		}
		text, err := s.Read(ctx, e.Path)
		if err != nil {
			return nil, err
		}
		b := []byte(text)
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			continue // binary
		}
		chunks := chunk.Split(e.Path, b, unit, window)
		walk := lineWalker{text: text}
		for i, c := range chunks {
			var at span
			if lines, from, ok := walk.span(c.Start, c.End); ok && lines == c.Text && c.Text != "" {
				chunks[i].Text = lines
				at = span{from: int32(from), to: int32(from + len(lines))}
				if bare {
					chunks[i].Text = ""
				}
			}
			out.spans = append(out.spans, at)
		}
		out.FileLines[e.Path] = lineCount(text)
		out.fileBytes[e.Path] = len(text)
		out.Chunks = append(out.Chunks, chunks...)
	}
	return out, nil
}

// withText returns c's chunks with their text: a bare chunk's (no text: package chunk never cuts an empty one) is
// its span of its file, read again. A file whose length is not the one it was chunked with fails.
func withText(ctx context.Context, s Snapshot, c *Chunked) (*Chunked, error) {
	out := &Chunked{Chunks: slices.Clone(c.Chunks), FileLines: c.FileLines}
	var path, text string
	for i, ch := range out.Chunks {
		if ch.Text != "" {
			continue
		}
		if ch.Path != path {
			var err error
			if text, err = s.Read(ctx, ch.Path); err != nil {
				return nil, err
			}
			if len(text) != c.fileBytes[ch.Path] {
				return nil, fmt.Errorf("rankings: %s of snapshot %s has %d bytes, chunked with %d", ch.Path, s.Ref,
					len(text), c.fileBytes[ch.Path])
			}
			path = ch.Path
		}
		at := c.spans[i]
		out.Chunks[i].Text = text[at.from:at.to]
	}
	return out, nil
}

// lineCount is the number of lines of text (the last one may lack its "\n").
func lineCount(text string) int {
	n := strings.Count(text, "\n")
	if text != "" && text[len(text)-1] != '\n' {
		n++
	}
	return n
}

// lineWalker finds lines of a text (a line ends after its "\n"), front to back: a file's chunks come in order.
type lineWalker struct {
	text string
	// passed lines end before pos.
	passed, pos int
}

// span is lines start..end of the text, and the offset they start at.
func (w *lineWalker) span(start, end int) (string, int, bool) {
	if start < 1 || end < start {
		return "", 0, false
	}
	if start-1 < w.passed {
		w.passed, w.pos = 0, 0
	}
	if !w.pass(start - 1) {
		return "", 0, false
	}
	from := w.pos
	if !w.pass(end) {
		return "", 0, false
	}
	return w.text[from:w.pos], from, true
}

// pass moves past the first n lines, reporting whether the text has them.
func (w *lineWalker) pass(n int) bool {
	for w.passed < n {
		if w.pos >= len(w.text) {
			return false
		}
		if i := strings.IndexByte(w.text[w.pos:], '\n'); i >= 0 {
			w.pos += i + 1
		} else {
			w.pos = len(w.text)
		}
		w.passed++
	}
	return true
}
