package sweepclient

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/repo"
	"ctxlab/dataset/swebench"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/archive"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
)

// instanceRefs stores each dataset row in the run's content store and returns their references, in dataset order,
// for the sweep's input: workers read rows by content address, never the dataset file of the starter's machine.
func instanceRefs(ctx context.Context, store cas.Store, rows []swebench.Instance) ([]api.InstanceRef, error) {
	refs := make([]api.InstanceRef, 0, len(rows))
	for _, r := range rows {
		ref, err := cas.PutJSON(ctx, store, r)
		if err != nil {
			return nil, fmt.Errorf("storing dataset row %s: %w", r.InstanceID, err)
		}
		refs = append(refs, api.InstanceRef{ID: r.InstanceID, Ref: ref})
	}
	return refs, nil
}

// WriteRunMarker writes the run's marker (runfolder.RunMarkerKey) to the shared store, where its workers check it.
func WriteRunMarker(ctx context.Context, setting, run, runDir string) error {
	objs, err := bucket.OpenObjects(ctx, setting, run, runDir)
	if err != nil {
		return err
	}
	b, err := json.Marshal(map[string]string{"run": run, "store": objs.String()})
	if err != nil {
		return err
	}
	if err := objs.Put(ctx, runfolder.RunMarkerKey, b); err != nil {
		return fmt.Errorf("the shared store: %w", err)
	}
	return nil
}

// shippedFolders are the folders of this machine the sweep reads: each instance's repository when the spec's
// repos template names a local folder, every file:// folder of grading.goproxy and the folder of
// grading.python_wheels, by the paths the templates give them here.
func shippedFolders(e *specs.Experiment, rows []swebench.Instance) []string {
	datasetDir := filepath.Dir(e.Dataset.File)
	var out []string
	add := func(p string) {
		if st, err := os.Stat(p); err == nil && st.IsDir() && !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	for _, r := range rows {
		// A row whose repository resolves nowhere is refused by its checkout, naming it.
		if src, err := repo.SourceFor(e.Dataset.Repos, r, datasetDir); err == nil {
			add(src)
		}
	}
	if w := e.Grading.PythonWheels; w != "" && !strings.Contains(w, "://") {
		add(strings.ReplaceAll(w, "{dataset_dir}", datasetDir))
	}
	proxy := strings.ReplaceAll(e.Grading.GoProxy, "{dataset_dir}", datasetDir)
	for _, entry := range strings.FieldsFunc(proxy, func(r rune) bool { return r == ',' || r == '|' }) {
		if folder, ok := strings.CutPrefix(entry, "file://"); ok {
			add(folder)
		}
	}
	slices.Sort(out)
	return out
}

// shipFolders archives the folders of this machine the sweep reads into the run's content store, for workers that
// share no disk with the starter, and returns the reference of their list (api.ShippedFolders); "" when there is
// none.
func shipFolders(ctx context.Context, store cas.Store, e *specs.Experiment, rows []swebench.Instance,
	log zerolog.Logger) (cas.Ref, error) {
	folders := api.ShippedFolders{}
	size := 0
	for _, dir := range shippedFolders(e, rows) {
		b, err := archive.Pack(dir)
		if err != nil {
			return "", err
		}
		if folders[dir], err = store.Put(ctx, b); err != nil {
			return "", fmt.Errorf("shipping %s: %w", dir, err)
		}
		size += len(b)
	}
	if len(folders) == 0 {
		return "", nil
	}
	log.Info().Int("folders", len(folders)).Int("bytes", size).
		Msg("the sweep's local folders (repositories, module proxy) are in the shared store for the workers")
	return cas.PutJSON(ctx, store, folders)
}
