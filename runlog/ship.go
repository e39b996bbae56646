package runlog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"ctxlab/internal/flock"
	"ctxlab/store/objects"
)

// With a store that several machines share, a worker's records do not go to a file of its disk, which no other
// machine reads: a Shipper gathers them into segments, each a write-once object of JSON lines under the file's
// folder of the run's objects (runlog/attempts.jsonl/...), and the starter, status and audit Gather the segments
// into the run folder's file of their own machine, which stays the one place readers look.

// SegmentsKey is the folder of the run's objects that holds the segments of a records file (AttemptsFile,
// CallsFile).
func SegmentsKey(file string) string { return path.Join("runlog", file) }

// FlushEvery is how long a record waits in a Shipper before it is in the store: what a worker killed with SIGKILL
// can lose of its records (its rows and memos are never lost this way).
const FlushEvery = 500 * time.Millisecond

// Shipper batches one process's records of one file into segments. It is safe for concurrent use.
type Shipper struct {
	objs   objects.Store
	folder string
	proc   string

	mu   sync.Mutex
	buf  bytes.Buffer
	seq  int
	err  error // the last failure to store a segment (its records are kept and tried again)
	stop chan struct{}
	done chan struct{}
}

// NewShipper starts shipping records of file (AttemptsFile, CallsFile) into objs; Close flushes and stops it.
func NewShipper(objs objects.Store, file string) *Shipper {
	var id [6]byte
	_, _ = rand.Read(id[:])
	s := &Shipper{objs: objs, folder: SegmentsKey(file), proc: hex.EncodeToString(id[:]),
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *Shipper) loop() {
	defer close(s.done)
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.Flush(context.Background())
		}
	}
}

// Append adds one record.
func (s *Shipper) Append(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(append(b, '\n'))
	return s.err
}

// Flush stores the records appended since the last flush as one segment, named by the time, this process and a
// sequence number, so segments sort by when they were written and never collide.
func (s *Shipper) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buf.Len() == 0 {
		return nil
	}
	s.seq++
	key := fmt.Sprintf("%s/%020d-%s-%06d.jsonl", s.folder, time.Now().UnixNano(), s.proc, s.seq)
	if _, err := s.objs.Create(ctx, key, s.buf.Bytes(), true); err != nil {
		s.err = fmt.Errorf("storing records in %s: %w", s.objs, err)
		return s.err
	}
	s.buf.Reset()
	s.err = nil
	return nil
}

// Close flushes the records left and stops shipping.
func (s *Shipper) Close() error {
	close(s.stop)
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Flush(ctx)
}

// gatherWindow is how far before the last segment it gathered a gatherer lists again: segments of machines whose
// clocks are behind sort before segments it already has.
const gatherWindow = 10 * time.Minute

// Gather appends to the records file at localPath the lines of every segment of its file in objs that it has not
// appended before, in the segments' order, and returns how many segments it appended. The segments appended are
// kept in localPath+".gathered" under a lock, so two processes of one machine gathering into one run folder (a
// starter and `starter status`) append each once.
func Gather(ctx context.Context, objs objects.Store, localPath string) (int, error) {
	unlock, err := flock.Lock(ctx, localPath+".gather.lock", 20*time.Millisecond)
	if err != nil {
		return 0, err
	}
	defer unlock()
	statePath := localPath + ".gathered"
	state, err := os.ReadFile(statePath)
	if err != nil && !os.IsNotExist(err) {
		return 0, err
	}
	seen := map[string]bool{}
	last := ""
	for _, k := range strings.Fields(string(state)) {
		seen[k] = true
		last = max(last, k)
	}
	folder := SegmentsKey(filepath.Base(localPath))
	keys, err := objs.List(ctx, folder+"/", listFrom(folder, last))
	if err != nil {
		return 0, err
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return seen[k] })
	if len(keys) == 0 {
		return 0, nil
	}
	var lines, names bytes.Buffer
	for _, k := range keys {
		b, err := objs.Get(ctx, k)
		if err != nil {
			return 0, err
		}
		lines.Write(b)
		names.WriteString(k + "\n")
	}
	if err := appendFile(localPath, lines.Bytes()); err != nil {
		return 0, err
	}
	return len(keys), appendFile(statePath, names.Bytes())
}

// listFrom is the key a gatherer lists segments after: gatherWindow before the time of the last one it has.
func listFrom(folder, last string) string {
	if last == "" {
		return ""
	}
	ns, err := strconv.ParseInt(strings.SplitN(strings.TrimPrefix(last, folder+"/"), "-", 2)[0], 10, 64)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s/%020d", folder, max(ns-int64(gatherWindow), 0))
}

func appendFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
