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

// SWEBenchFile is the retrieval unit beyond package chunk's: SWE-bench's file-level baseline, whose documents are
// a file's path and contents together.
const SWEBenchFile = "swebench_file"

// MaxFileBytes skips generated or data files that no retriever should index whole.
const MaxFileBytes = 1 << 20

// Ranker is how a snapshot is ranked: the unit it is cut into (with the window of the window unit and of other
// units' fallback) and BM25's parameters.
type Ranker struct {
	Unit   string  `json:"unit"`
	Window int     `json:"window"`
	K1     float64 `json:"k1"`
	B      float64 `json:"b"`
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

// ChunkUnit is the chunk unit a retrieval unit cuts files into: SWE-bench's file-level documents are whole files.
func ChunkUnit(unit string) (chunk.Unit, error) {
	if unit == SWEBenchFile {
		return chunk.File, nil
	}
	u, err := chunk.ParseUnit(unit)
	if err != nil {
		return "", fmt.Errorf("%v (or %s)", err, SWEBenchFile)
	}
	return u, nil
}

// Doc is the text a chunk is ranked by: its text, or for SWEBenchFile its path and text.
func Doc(unit string, c chunk.Chunk) string {
	if unit == SWEBenchFile {
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

// Chunked is a snapshot cut into one unit: its chunks in snapshot order and the line count of each file chunked.
type Chunked struct {
	Chunks    []chunk.Chunk
	FileLines map[string]int
}

// Snapshot is a repository snapshot to chunk: its manifest, the manifest's content address (which keys the
// chunk cache) and how a file's text is read.
type Snapshot struct {
	Ref      cas.Ref
	Manifest repo.Manifest
	Read     func(ctx context.Context, path string) (string, error)
}

// chunkSnapshot reads every text file of the snapshot and cuts it into the unit. Symlinks, empty files, files over
// MaxFileBytes and binary files (a NUL in the first 8,000 bytes) are left out.
func chunkSnapshot(ctx context.Context, s Snapshot, unit chunk.Unit, window int) (*Chunked, error) {
	out := &Chunked{FileLines: map[string]int{}}
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
		out.FileLines[e.Path] = shareText(text, chunks)
		out.Chunks = append(out.Chunks, chunks...)
	}
	return out, nil
}

// shareText points each chunk's text into the file's text when it is exactly lines Start..End of it, as package
// chunk cuts them, so that the chunks of every unit of a file hold one copy of its text (the worker's text cache's);
// a chunk whose text is anything else keeps its own. It returns the file's line count.
func shareText(text string, chunks []chunk.Chunk) int {
	starts := []int{0} // starts[i] is where line i+1 begins; the last entry is the text's end
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' && i+1 < len(text) {
			starts = append(starts, i+1)
		}
	}
	starts = append(starts, len(text))
	lines := len(starts) - 1
	if text == "" {
		lines = 0
	}
	for i, c := range chunks {
		if c.Start < 1 || c.End < c.Start || c.End > lines {
			continue
		}
		if s := text[starts[c.Start-1]:starts[c.End]]; s == c.Text {
			chunks[i].Text = s
		}
	}
	return lines
}
