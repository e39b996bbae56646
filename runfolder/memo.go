package runfolder

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// A memo file (NodeMemo) holds what a node last computed on an instance, as the JSON object of its output with one
// more member first: "key", the digest of the inputs it was computed from. A node reuses a memo only under its own
// key; audits and reports read one whatever its key.

// WriteMemo writes the memo of output (a value whose JSON form is an object without a "key" member) computed from
// the inputs key names, at path: through a temporary file and a rename, so a reader sees a whole memo or none.
func WriteMemo(path, key string, output any) error {
	memo, err := EncodeMemo(key, output)
	if err != nil {
		return fmt.Errorf("memo %s: %w", path, err)
	}
	return WriteAtomic(path, memo)
}

// EncodeMemo is the memo of output computed from the inputs key names, as WriteMemo writes it.
func EncodeMemo(key string, output any) ([]byte, error) {
	b, err := json.Marshal(output)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("the output is not a JSON object")
	}
	k, err := json.Marshal(key)
	if err != nil {
		return nil, err
	}
	memo := append([]byte(`{"key":`), k...)
	if len(b) > 2 {
		memo = append(memo, ',')
	}
	return append(memo, b[1:]...), nil
}

// ReadMemo decodes the memo at path into output and returns the key it was written under; false when there is no
// memo or it does not decode.
func ReadMemo(path string, output any) (key string, ok bool) {
	b, err := ReadFile(path)
	if err != nil {
		return "", false
	}
	return DecodeMemo(b, output)
}

// DecodeMemo decodes a memo's bytes into output and returns the key it was written under; false when they do not
// decode.
func DecodeMemo(b []byte, output any) (key string, ok bool) {
	var k struct {
		Key string `json:"key"`
	}
	if json.Unmarshal(b, &k) != nil || json.Unmarshal(b, output) != nil {
		return "", false
	}
	return k.Key, true
}

// WriteAtomic writes b to path through a temporary file of its own beside it and a rename (making path's folder),
// so a reader, in this process or another, sees the old file or one writer's new one, never a part, even while
// other writers write the same path. It does not fsync, unlike renameio (which the content store uses for what was
// paid for): a run-folder file is written at every node, an fsync there cost about 0.4 ms of the 0.9 ms an activity
// costs in BenchmarkOrchestration, and a file a crash loses or tears is made again (a memo that does not decode is a
// miss; the other files are written anew by every run).
func WriteAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A random name of its own, created with 0644 under the process's umask as os.WriteFile would.
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.%016x.tmp", filepath.Base(path), rand.Uint64()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
