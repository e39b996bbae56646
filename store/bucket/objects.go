package bucket

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"ctxlab/internal/flock"
	"ctxlab/store/objects"
)

// Objects is an objects.Store in an object store, under a prefix (the run's name): Create is a conditional write
// (If-None-Match: *, which S3 and S3-compatible servers answer with 412 when the key exists), so two workers on two
// machines that store the same memo at once agree on one.
type Objects struct {
	b      *blob.Bucket
	prefix string // "" or "run/"
	name   string
}

var _ objects.Store = (*Objects)(nil)

func (o *Objects) String() string { return o.name }

func (o *Objects) key(key string) (string, error) {
	if err := objects.CheckKey(key); err != nil {
		return "", err
	}
	return o.prefix + key, nil
}

// Get reads the object.
func (o *Objects) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := o.key(key)
	if err != nil {
		return nil, err
	}
	b, err := o.b.ReadAll(ctx, k)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%s: %s: %w", o.name, key, objects.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.name, err)
	}
	return b, nil
}

// Create writes the object only if the key is free (a conditional write), else returns the object there.
func (o *Objects) Create(ctx context.Context, key string, data []byte, _ bool) ([]byte, error) {
	k, err := o.key(key)
	if err != nil {
		return nil, err
	}
	err = o.b.WriteAll(ctx, k, data, &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		existing, rerr := o.winner(ctx, key)
		if rerr == nil && existing == nil {
			existing = []byte{}
		}
		return existing, rerr
	}
	if err != nil {
		return nil, fmt.Errorf("%s: writing %s: %w", o.name, key, err)
	}
	return nil, nil
}

// winnerWait bounds the wait for the object of a create another writer won.
const winnerWait = 10 * time.Second

// winner reads the object a refused conditional write lost to. The refusal can come before the object is readable
// (versitygw answers 412 while the winner's write is still in flight), so a missing object is read again, with a
// growing pause, for up to winnerWait.
func (o *Objects) winner(ctx context.Context, key string) ([]byte, error) {
	deadline := time.Now().Add(winnerWait)
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		b, err := o.Get(ctx, key)
		if !errors.Is(err, objects.ErrNotFound) || time.Now().After(deadline) {
			return b, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// Put writes the object.
func (o *Objects) Put(ctx context.Context, key string, data []byte) error {
	k, err := o.key(key)
	if err != nil {
		return err
	}
	if err := o.b.WriteAll(ctx, k, data, &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("%s: writing %s: %w", o.name, key, err)
	}
	return nil
}

// Delete removes the object.
func (o *Objects) Delete(ctx context.Context, key string) error {
	k, err := o.key(key)
	if err != nil {
		return err
	}
	if err := o.b.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("%s: deleting %s: %w", o.name, key, err)
	}
	return nil
}

// List lists the prefix, from after on where the server can start there (S3's StartAfter).
func (o *Objects) List(ctx context.Context, prefix, after string) ([]string, error) {
	folder := strings.TrimSuffix(prefix, "/")
	if err := objects.CheckKey(folder); err != nil {
		return nil, err
	}
	it := o.b.List(&blob.ListOptions{Prefix: o.prefix + folder + "/", BeforeList: func(as func(any) bool) error {
		var in *s3.ListObjectsV2Input
		if after != "" && as(&in) {
			in.StartAfter = aws.String(o.prefix + after)
		}
		return nil
	}})
	var keys []string
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: listing %s: %w", o.name, prefix, err)
		}
		if key := strings.TrimPrefix(obj.Key, o.prefix); key > after && !obj.IsDir {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// Lease timing: a holder rewrites its lease every leaseRefresh; a lease nobody rewrote for leaseStale (measured on
// the waiter's own clock, so skewed clocks between machines do not matter) belongs to a holder that died.
const (
	leaseRefresh = 5 * time.Second
	leaseStale   = 30 * time.Second
)

// Lock takes a lease: the object at key, created only if absent, rewritten while held and deleted at unlock. A
// waiter polls it; one whose holder stopped rewriting it takes it over. Two waiters that find the same stale lease
// may both take it (a duplicate, never a deadlock): what the lock guards is written once (Create), so they agree.
func (o *Objects) Lock(ctx context.Context, key string) (func(), error) {
	k, err := o.key(key)
	if err != nil {
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	holder := []byte(hex.EncodeToString(id[:]))
	var seen time.Time // the lease's last change we saw, and when we first saw it so
	var since time.Time
	poll := 50 * time.Millisecond
	for {
		err := o.b.WriteAll(ctx, k, holder, &blob.WriterOptions{IfNotExist: true})
		if err == nil {
			return o.holdLease(k, holder), nil
		}
		if gcerrors.Code(err) != gcerrors.FailedPrecondition {
			return nil, fmt.Errorf("%s: taking the lease %s: %w", o.name, key, err)
		}
		attrs, aerr := o.b.Attributes(ctx, k)
		switch {
		case gcerrors.Code(aerr) == gcerrors.NotFound:
			continue // released in between
		case aerr != nil:
			return nil, fmt.Errorf("%s: reading the lease %s: %w", o.name, key, aerr)
		case !attrs.ModTime.Equal(seen):
			seen, since = attrs.ModTime, time.Now()
		case time.Since(since) > leaseStale:
			_ = o.b.Delete(ctx, k)
			continue
		}
		if err := flock.Sleep(ctx, poll); err != nil {
			return nil, err
		}
		poll = min(2*poll, time.Second)
	}
}

// holdLease rewrites the lease at k until the returned unlock, which deletes it if it is still this holder's.
func (o *Objects) holdLease(k string, holder []byte) func() {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(leaseRefresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = o.b.WriteAll(ctx, k, holder, nil)
			}
		}
	}()
	return func() {
		stop()
		<-done
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if b, err := o.b.ReadAll(dctx, k); err == nil && string(b) == string(holder) {
			_ = o.b.Delete(dctx, k)
		}
	}
}

// OpenObjects returns the objects store a setting names, as Open does for blobs: under prefix in the object store
// of an s3:// URL, in the folder of a file:// URL (a Dir: its Create is atomic across processes, fileblob's is
// not), or in dir when the setting is empty (the run folder).
func OpenObjects(ctx context.Context, setting, prefix, dir string) (objects.Store, error) {
	switch {
	case setting == "":
		return objects.Dir{Root: dir}, nil
	case !strings.Contains(setting, "://"):
		return objects.Dir{Root: filepath.Join(setting, prefix)}, nil
	case strings.HasPrefix(setting, "file://"):
		root, err := fileRoot(setting)
		if err != nil {
			return nil, err
		}
		return objects.Dir{Root: filepath.Join(root, prefix)}, nil
	}
	b, err := OpenURL(ctx, setting, "")
	if err != nil {
		return nil, err
	}
	o := &Objects{b: b.b, name: b.name}
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		o.prefix, o.name = prefix+"/", b.name+" ("+prefix+"/)"
	}
	return o, nil
}

// fileRoot is the folder a file:// URL names.
func fileRoot(setting string) (string, error) {
	u, err := url.Parse(setting)
	if err != nil {
		return "", fmt.Errorf("content store URL %q: %w", setting, err)
	}
	if u.Path == "" || (u.Host != "" && u.Host != "localhost") {
		return "", fmt.Errorf("content store URL %q names no local folder (want file:///absolute/folder)", setting)
	}
	return filepath.FromSlash(u.Path), nil
}

// ProbeTimeout bounds Probe: a store that cannot be written, read and cleaned in this long is not one to run on.
const ProbeTimeout = 20 * time.Second

// Probe writes, reads back and deletes an object in the shared store a setting names, within ProbeTimeout, so
// that a worker or starter given a URL that does not work (no endpoint=, so the AWS SDK asks AWS's own servers and
// retries for minutes; another region; no credentials) says so at once, naming the store, instead of failing its
// first node minutes later. A setting that is no shared store is not probed.
func Probe(ctx context.Context, setting string) error {
	if !Shared(setting) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	s, err := OpenObjects(ctx, setting, "", "")
	if err != nil {
		return err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	key, data := "ctxlab-probe/"+hex.EncodeToString(id[:]), []byte("probe")
	err = s.Put(ctx, key, data)
	if err == nil {
		var back []byte
		if back, err = s.Get(ctx, key); err == nil && string(back) != string(data) {
			err = fmt.Errorf("read back %q, wrote %q", back, data)
		}
		err = errors.Join(err, s.Delete(ctx, key))
	}
	if err != nil {
		return fmt.Errorf("the store %s cannot be used (tried for at most %s): %w; check the URL (for an "+
			"S3-compatible server its endpoint=, region= and use_path_style=true) and the credentials in the "+
			"environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or AWS_PROFILE)", s, ProbeTimeout, err)
	}
	return nil
}
