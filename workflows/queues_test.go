package workflows

import (
	"testing"

	"ctxlab/specs"
)

// TestQueuesFor: every declared queue kind has a queue of its own, and a kind nothing declares is an error, where it
// used to be sent to the cpu queue.
func TestQueuesFor(t *testing.T) {
	seen := map[string]string{}
	for _, kind := range specs.QueueKinds {
		q, err := DefaultQueues.For(kind)
		if err != nil || q == "" {
			t.Errorf("%s: %q %v", kind, q, err)
		}
		if other, dup := seen[q]; dup {
			t.Errorf("%s and %s share queue %s", kind, other, q)
		}
		seen[q] = kind
	}
	if q, err := DefaultQueues.For("gpu"); err == nil {
		t.Errorf("kind gpu went to %q", q)
	}
}
