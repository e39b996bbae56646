// Package objects keeps a run's keyed objects: node and grade memos, rankings, the response cache, embeddings and
// the attempt and call records, each under a slash-separated key, in a local folder (the run folder on one machine,
// or a file:// store) or in an object store (store/bucket's, over S3). Objects whose key names what they were
// computed from are written once (Create): the first writer wins and every later one gets the first one's bytes,
// so however many workers on however many machines computed a value, every reader sees the same one.
//
// It is infrastructure, below the activities: it imports the standard library and internal/flock only.
package objects

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
)

// ErrNotFound is returned for a key the store does not hold.
var ErrNotFound = errors.New("object not found")

// Store holds objects by key. Keys are slash-separated relative paths ("nodes/i-1/checkout.json"); CheckKey says
// which are valid.
type Store interface {
	// Get returns the object's bytes (ErrNotFound when there is none).
	Get(ctx context.Context, key string) ([]byte, error)
	// Create writes data under key unless an object is there already: then it writes nothing and returns that
	// object's bytes (nil when this call created it). Durable asks a local folder to sync the bytes to its disk
	// before they are published (for what was paid for); an object store always holds what it acknowledged.
	Create(ctx context.Context, key string, data []byte, durable bool) (existing []byte, err error)
	// Put writes data under key, replacing what was there.
	Put(ctx context.Context, key string, data []byte) error
	// Delete removes the object (no error when there is none).
	Delete(ctx context.Context, key string) error
	// List returns the keys under prefix (a folder: "runlog/calls/") that sort after after, sorted.
	List(ctx context.Context, prefix, after string) ([]string, error)
	// Lock makes the caller the only holder of key's lock among the processes sharing the store until unlock: a
	// file lock in a local folder, a lease object in an object store.
	Lock(ctx context.Context, key string) (unlock func(), err error)
	// String names the store for messages.
	String() string
}

// CheckKey refuses a key that is not a clean relative slash path: empty, absolute, with an empty, "." or ".."
// element, or a backslash or NUL byte. The run's code builds every key (runfolder, safename), so a bad one is a bug
// or a hostile id that got past them; it must not name a place outside the store.
func CheckKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsAny(key, "\\\x00") || path.Clean(key) != key {
		return fmt.Errorf("objects: invalid key %q", key)
	}
	for _, el := range strings.Split(key, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("objects: invalid key %q", key)
		}
	}
	return nil
}
