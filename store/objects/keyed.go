package objects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
)

// Keyed keeps JSON values under hex keys (digests) in a folder of a Store: Prefix/ab/abcdef....json, as cas.KeyDir
// laid them out in a run folder, and their locks under Locks/ab/abcdef.... Durable values are synced before they
// are published in a local folder (paid answers).
type Keyed struct {
	S       Store
	Prefix  string
	Locks   string
	Durable bool
}

func (k Keyed) key(key string) string {
	shard := key
	if len(shard) > 2 {
		shard = shard[:2]
	}
	return path.Join(k.Prefix, shard, key+".json")
}

// Get decodes the value stored under key into v; it reports false when there is none or it does not decode.
func (k Keyed) Get(ctx context.Context, key string, v any) bool {
	b, err := k.S.Get(ctx, k.key(key))
	return err == nil && json.Unmarshal(b, v) == nil
}

// Create stores v (a pointer) under key once. When a value is there already it is decoded into v instead and
// created is false: the caller goes on with the value every other reader sees. A stored value that does not decode,
// or that valid (when not nil) refuses, is replaced by v.
func (k Keyed) Create(ctx context.Context, key string, v any, valid func(stored any) bool) (created bool, err error) {
	b, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	existing, err := k.S.Create(ctx, k.key(key), b, k.Durable)
	if err != nil || existing == nil {
		return err == nil, err
	}
	// Decoded into a fresh value first, so one that does not decode or is refused leaves v as it was.
	fresh := reflect.New(reflect.TypeOf(v).Elem())
	if json.Unmarshal(existing, fresh.Interface()) == nil && (valid == nil || valid(fresh.Interface())) {
		reflect.ValueOf(v).Elem().Set(fresh.Elem())
		return false, nil
	}
	return true, k.S.Put(ctx, k.key(key), b)
}

// Put stores v under key, replacing what was there.
func (k Keyed) Put(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return k.S.Put(ctx, k.key(key), b)
}

// Lock holds key's lock (Store.Lock) until unlock.
func (k Keyed) Lock(ctx context.Context, key string) (unlock func(), err error) {
	if k.Locks == "" {
		return nil, errors.New("objects: no lock folder")
	}
	shard := key
	if len(shard) > 2 {
		shard = shard[:2]
	}
	unlock, err = k.S.Lock(ctx, path.Join(k.Locks, shard, key))
	if err != nil {
		return nil, fmt.Errorf("%s: lock %s: %w", k.S, key, err)
	}
	return unlock, nil
}
