package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"ctxlab/internal/jsonl"
	"ctxlab/runfolder"
)

// keyIndex is what this process knows of a results file: the keys of the rows in its first off bytes, which end on
// a line boundary and hold no torn line. Re-reading the whole file on every Append cost O(rows) per issue (0.7 s at
// 300 issues x 72 arms); with the index an Append reads only what other processes appended since.
//
// The index is trusted only while it still describes the file: the locked file is the one it read (Repair, or a
// new sweep putting results aside, renames another file over the path), no shorter than off, and its first bytes
// and those just before off are unchanged (a file rewritten in place). Otherwise it is read again from the start.
type keyIndex struct {
	mu   sync.Mutex // taken after the file's lock, so only one goroutine of a process uses it
	file os.FileInfo
	off  int64
	// head and last are the file's first bytes and its bytes just before off, up to window each: both hold whole
	// rows (with their keys), so a file rewritten in place with other rows differs in them.
	head, last []byte
	keys       map[Key]bool
}

// window is how many bytes at the start of the file and before off the index compares to notice a rewritten file.
const window = 4096

// indexes holds a keyIndex per results path (a *keyIndex per Store.Path), for the life of the process.
var indexes sync.Map

func indexFor(path string) *keyIndex {
	v, _ := indexes.LoadOrStore(path, &keyIndex{})
	return v.(*keyIndex)
}

// forget drops the index of path, for a change that rewrote the file under the lock (Repair, Remove): the next
// Append reads it again rather than trusting keys that may have gone.
func forget(path string) {
	x := indexFor(path)
	x.mu.Lock()
	x.reset()
	x.mu.Unlock()
}

func (x *keyIndex) reset() {
	x.file, x.off, x.head, x.last, x.keys = nil, 0, nil, nil, nil
}

// describes reports whether the index still describes the open file f, whose stat is st.
func (x *keyIndex) describes(f *os.File, st os.FileInfo) bool {
	if x.file == nil || !os.SameFile(x.file, st) || st.Size() < x.off {
		return false
	}
	return bytesAt(f, 0, len(x.head), x.head) && bytesAt(f, x.off-int64(len(x.last)), len(x.last), x.last)
}

// bytesAt reports whether f holds want at off.
func bytesAt(f *os.File, off int64, n int, want []byte) bool {
	if n == 0 {
		return true
	}
	b := make([]byte, n)
	_, err := f.ReadAt(b, off)
	return err == nil && bytes.Equal(b, want)
}

// readNew reads the rows appended to f after the index's offset. whole is false when what it found needs a repair:
// a torn line, or a last line without its newline; the index then stops before them.
func (x *keyIndex) readNew(f *os.File) (whole bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !x.describes(f, st) {
		x.reset()
		x.file, x.keys = st, map[Key]bool{}
	}
	if st.Size() == x.off {
		return true, nil
	}
	torn := false
	n, err := jsonl.Scan(io.NewSectionReader(f, x.off, st.Size()-x.off), jsonl.LeavePartial,
		func(_ int, line []byte) error {
			var row Row
			if err := json.Unmarshal(line, &row); err != nil {
				// Lines that are whole JSON but no row, or no JSON at all, are left for readers to report, as
				// Repair leaves them; only JSON cut short is torn.
				torn = torn || runfolder.IsTorn(append(line, '\n'))
				return nil
			}
			if row.keyed() {
				x.keys[row.Key()] = true
			}
			return nil
		})
	if err != nil {
		return false, err
	}
	if torn {
		return false, nil
	}
	x.advance(f, x.off+n)
	return x.off == st.Size(), nil
}

// advance moves the offset to off, remembering the bytes at the start and before it.
func (x *keyIndex) advance(f *os.File, off int64) {
	x.off = off
	n := min(off, window)
	x.head, x.last = make([]byte, n), make([]byte, n)
	_, err1 := f.ReadAt(x.head, 0)
	_, err2 := f.ReadAt(x.last, off-n)
	if err1 != nil || err2 != nil {
		x.file = nil // unverifiable: the next Append reads the file again
	}
}

// wrote records rows this process appended at the offset: b, the lines of the rows with the given keys.
func (x *keyIndex) wrote(f *os.File, b []byte, keys []Key) {
	for _, k := range keys {
		x.keys[k] = true
	}
	x.advance(f, x.off+int64(len(b)))
}

// lockIndexed locks the results file, creating it, with any torn line cut out (so rows appended now start on a line
// of their own), and returns it with its index caught up to the file's end. The caller unlocks both.
func (s Store) lockIndexed() (*os.File, *keyIndex, error) {
	x := indexFor(s.Path)
	for {
		f, err := s.lock(true)
		if err != nil {
			return nil, nil, err
		}
		x.mu.Lock()
		replaced, err := s.catchUp(f, x)
		if err == nil && !replaced {
			return f, x, nil
		}
		x.mu.Unlock()
		unlock(f)
		if err != nil {
			return nil, nil, err
		}
		// f is the old file now: lock the new one.
	}
}

// catchUp brings the index up to the end of the locked file f, repairing the file when it holds a torn line.
// replaced says a repair renamed a new file over f's path.
func (s Store) catchUp(f *os.File, x *keyIndex) (replaced bool, err error) {
	// One repair makes the file whole; the second round only reads it.
	for range 3 {
		whole, err := x.readNew(f)
		if err != nil {
			x.reset()
			return false, fmt.Errorf("results: reading %s: %w", s.Path, err)
		}
		if whole {
			return false, nil
		}
		_, replaced, err := s.cutTorn(f)
		x.reset() // repaired: read it again from the start
		if err != nil || replaced {
			return replaced, err
		}
	}
	return false, fmt.Errorf("results: %s still has a torn line after its repair", s.Path)
}
