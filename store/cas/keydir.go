package cas

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// KeyDir keeps JSON values under caller-chosen hex keys in a folder (key[:2]/key.json): the lookups a content
// store cannot do, such as "the answer to this request" or "the vector of this text". Writes are atomic, so
// processes sharing the folder never read half a value.
type KeyDir struct{ Root string }

func (d KeyDir) path(key string) string {
	shard := key
	if len(shard) > 2 {
		shard = shard[:2]
	}
	return filepath.Join(d.Root, shard, key+".json")
}

// Get decodes the value stored under key into v; it reports false when there is none or it does not decode.
func (d KeyDir) Get(key string, v any) bool {
	b, err := os.ReadFile(d.path(key))
	if err != nil {
		return false
	}
	return json.Unmarshal(b, v) == nil
}

// Put stores v under key, replacing what was there.
func (d KeyDir) Put(key string, v any) error {
	p := d.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return renameio.WriteFile(p, b, 0o600, renameio.WithTempDir(filepath.Dir(p)))
}
