package steps

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/specs"
)

// TestGoProxyFoldersAreThisMachines: {dataset_dir} is the dataset's folder as the spec named it, and every file://
// folder of the list becomes the absolute folder it is on this machine (the one the starter shipped, when it did),
// the separators and the other entries kept.
func TestGoProxyFoldersAreThisMachines(t *testing.T) {
	shipped := map[string]string{filepath.Join("data", "goproxy"): "/scratch/shipped/abc"}
	j := &job{in: api.NodeInput{Dataset: specs.Dataset{File: filepath.Join("data", "instances.jsonl")}},
		env: Env{Shipped: func(_ context.Context, p string) (string, error) {
			if local, ok := shipped[p]; ok {
				return local, nil
			}
			return p, nil
		}}}
	got, err := j.goProxy(context.Background(), "file://{dataset_dir}/goproxy,https://proxy.golang.org|file:///abs/p,off")
	if err != nil {
		t.Fatal(err)
	}
	if want := "file:///scratch/shipped/abc,https://proxy.golang.org|file:///abs/p,off"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	j.env.Shipped = nil
	got, _ = j.goProxy(context.Background(), "file://{dataset_dir}/goproxy")
	if abs, _ := filepath.Abs(filepath.Join("data", "goproxy")); got != "file://"+filepath.ToSlash(abs) ||
		strings.Contains(got, "{") {
		t.Errorf("one machine: %s, want the absolute folder", got)
	}
}
