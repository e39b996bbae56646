// Package predictions reads and writes SWE-bench prediction files (instance_id, model_name_or_path, model_patch) and
// Multi-SWE-bench ones (org, repo, number, fix_patch), and exports them from a finished ctxlab run, so that the same
// patches can be graded by the official harnesses and predictions made elsewhere can be graded by ctxlab.
//
// It is not an activity: it sits above results (it reads a run's rows) and below the starter, which uses it.
package predictions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"ctxlab/dataset/swebench"
	"ctxlab/internal/safename"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// Prediction is one row of a predictions file.
type Prediction struct {
	InstanceID      string `json:"instance_id"`
	ModelNameOrPath string `json:"model_name_or_path"`
	ModelPatch      string `json:"model_patch"`
}

// fileRow is a row of a predictions file: a SWE-bench prediction, or a Multi-SWE-bench one (org, repo, number,
// fix_patch), read as the instance org__repo-number.
type fileRow struct {
	Prediction
	// multiSWEBench marks a row in Multi-SWE-bench's format, which names no model.
	multiSWEBench bool
}

func (p *fileRow) UnmarshalJSON(b []byte) error {
	var aux struct {
		Prediction
		Org      string          `json:"org"`
		Repo     string          `json:"repo"`
		Number   json.RawMessage `json:"number"`
		FixPatch *string         `json:"fix_patch"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*p = fileRow{Prediction: aux.Prediction}
	if p.InstanceID == "" && aux.Org != "" && aux.Repo != "" && len(aux.Number) > 0 {
		n, err := strconv.Atoi(strings.Trim(string(aux.Number), `"`))
		if err != nil {
			return fmt.Errorf("number %.40s is not a pull request number", aux.Number)
		}
		p.InstanceID = swebench.MultiSWEBenchID(aux.Org, aux.Repo, n)
		p.multiSWEBench = true
	}
	if p.ModelPatch == "" && aux.FixPatch != nil {
		p.ModelPatch = *aux.FixPatch
	}
	return nil
}

// MultiSWEBench is one row of a Multi-SWE-bench predictions file.
type MultiSWEBench struct {
	Org      string `json:"org"`
	Repo     string `json:"repo"`
	Number   int    `json:"number"`
	FixPatch string `json:"fix_patch"`
}

// ToMultiSWEBench converts predictions whose instance ids have the form org__repo-number; the ids of the others are
// returned, unconverted.
func ToMultiSWEBench(ps []Prediction) (out []MultiSWEBench, unconverted []string) {
	for _, p := range ps {
		org, repo, number, ok := swebench.ParseMultiSWEBenchID(p.InstanceID)
		if !ok {
			unconverted = append(unconverted, p.InstanceID)
			continue
		}
		out = append(out, MultiSWEBench{Org: org, Repo: repo, Number: number, FixPatch: p.ModelPatch})
	}
	return out, unconverted
}

// ReadFile reads predictions as the harness accepts them: JSONL (one object a line), a JSON list, or a JSON object
// keyed by instance id, each on one line or indented. The format is told by decoding the file as a stream of JSON
// values, never by the shape of its lines: a list is its elements, an object holding a prediction's fields is one
// prediction, and any other object is a map of predictions keyed by instance id. Every row needs an instance_id; a
// missing model_patch is an empty patch (graded as such). A repeated instance_id with the same model is an error
// naming both places.
func ReadFile(path string) ([]Prediction, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("predictions: %w", err)
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // a byte order mark some editors write
	var out []placedRow
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		at := lineAt(b, dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("predictions %s:%d: not JSON: %w", path, at, err)
		}
		rows, err := rowsOf(v)
		if err != nil {
			return nil, fmt.Errorf("predictions %s:%d: %w", path, at, err)
		}
		for _, r := range rows {
			r.where = fmt.Sprintf("%s:%d", path, at) + r.where
			out = append(out, r)
		}
	}
	// Multi-SWE-bench files name no model: their file does (gold.multi-swe-bench.jsonl is model gold).
	model := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), MultiSWEBenchSuffix)
	for i := range out {
		if out[i].multiSWEBench && out[i].ModelNameOrPath == "" {
			out[i].ModelNameOrPath = model
		}
	}
	seen := map[[2]string]string{}
	for _, p := range out {
		if strings.TrimSpace(p.InstanceID) == "" {
			return nil, fmt.Errorf("predictions %s: prediction has no instance_id", p.where)
		}
		k := [2]string{p.InstanceID, p.ModelNameOrPath}
		if prev, dup := seen[k]; dup {
			return nil, fmt.Errorf("predictions %s: repeats instance %s of model %q (%s)", p.where,
				p.InstanceID, p.ModelNameOrPath, prev)
		}
		seen[k] = p.where
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("predictions %s: no predictions", path)
	}
	ps := make([]Prediction, len(out))
	for i, r := range out {
		ps[i] = r.Prediction
	}
	return ps, nil
}

// placedRow is a row with where it was read, for errors.
type placedRow struct {
	fileRow
	where string
}

// predictionKeys are the fields that make a JSON object one prediction rather than a map of them: none of them
// holds an object, while every value of a map keyed by instance id does.
var predictionKeys = []string{"instance_id", "model_name_or_path", "model_patch", "org", "repo", "number", "fix_patch"}

// rowsOf reads one top-level JSON value of a predictions file: a list of predictions, one prediction, or a map of
// predictions keyed by instance id (sorted by id, so the order does not depend on the map).
func rowsOf(v json.RawMessage) ([]placedRow, error) {
	switch v[0] {
	case '[':
		var list []json.RawMessage
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, fmt.Errorf("not a JSON list of predictions: %w", err)
		}
		out := make([]placedRow, len(list))
		for i, e := range list {
			out[i].where = fmt.Sprintf(": element %d", i+1)
			if err := json.Unmarshal(e, &out[i].fileRow); err != nil {
				return nil, fmt.Errorf("element %d: not a prediction: %w", i+1, err)
			}
		}
		return out, nil
	case '{':
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(v, &fields); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(predictionKeys, func(k string) bool { _, ok := fields[k]; return ok }) {
			var r placedRow
			if err := json.Unmarshal(v, &r.fileRow); err != nil {
				return nil, fmt.Errorf("not a prediction: %w", err)
			}
			return []placedRow{r}, nil
		}
		ids := slices.Sorted(maps.Keys(fields))
		out := make([]placedRow, len(ids))
		for i, id := range ids {
			out[i].where = ": instance " + id
			if val := bytes.TrimSpace(fields[id]); len(val) == 0 || val[0] != '{' {
				return nil, fmt.Errorf("instance %s: %.40s is not a prediction object (a map keyed by instance id "+
					"holds one object per instance)", id, val)
			}
			if err := json.Unmarshal(fields[id], &out[i].fileRow); err != nil {
				return nil, fmt.Errorf("instance %s: not a prediction: %w", id, err)
			}
			switch out[i].InstanceID {
			case "":
				out[i].InstanceID = id
			case id:
			default:
				return nil, fmt.Errorf("key %s holds a prediction for instance %s", id, out[i].InstanceID)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("not predictions: a JSON %.20s where a prediction object, a list or a map of them belongs", v)
}

// lineAt is the line of the first non-space byte at or after offset: where the next JSON value starts.
func lineAt(b []byte, offset int64) int {
	i := int(offset)
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return 1 + bytes.Count(b[:i], []byte("\n"))
}

// WriteFile writes predictions as JSONL, atomically.
func WriteFile(path string, ps []Prediction) error {
	return writeJSONL(path, ps)
}

// MultiSWEBenchSuffix ends the name of the Multi-SWE-bench file Export writes beside each SWE-bench one.
const MultiSWEBenchSuffix = ".multi-swe-bench"

// WriteMultiSWEBenchFile writes Multi-SWE-bench predictions as JSONL, atomically.
func WriteMultiSWEBenchFile(path string, ps []MultiSWEBench) error {
	return writeJSONL(path, ps)
}

func writeJSONL[T any](path string, rows []T) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, p := range rows {
		if err := enc.Encode(p); err != nil {
			return err
		}
	}
	return runfolder.WriteAtomic(path, buf.Bytes())
}

// ModelName is the model_name_or_path ctxlab writes for a method under a model: "<model>__<method>"; rows that
// `starter grade` made from another system's predictions (method "predictions") keep their model's name.
func ModelName(model, method string) string {
	if method == "predictions" {
		return model
	}
	return model + "__" + method
}

// SplitModelName undoes ModelName; a name not made by it is the model, under method "predictions".
func SplitModelName(name string) (model, method string) {
	if m, meth, ok := strings.Cut(name, "__"); ok && m != "" && meth != "" {
		return m, meth
	}
	return name, "predictions"
}

// ExportResult says what Export wrote.
type ExportResult struct {
	// Files maps each written file to its number of predictions.
	Files map[string]int
	// NoPatch counts rows without a patch_ref (their step failed before a patch was made, or the method has no
	// grade step); they are written with an empty model_patch, so every instance stays accounted for.
	NoPatch int
	// NotMultiSWEBench lists the instances left out of the Multi-SWE-bench files: their ids are not org__repo-number.
	NotMultiSWEBench []string
}

// Export writes runDir/predictions/<model>__<method>.jsonl (SWE-bench's format) for every method of a run, from the
// patch_ref field of the rows in runDir/results.jsonl and the patches in runDir/cas, and beside each the same
// predictions in Multi-SWE-bench's format, <model>__<method>.multi-swe-bench.jsonl, which its harness grades (rows
// whose instance id is not org__repo-number are left out of it, and listed in the result).
func Export(ctx context.Context, runDir string) (ExportResult, error) {
	res := ExportResult{Files: map[string]int{}}
	rows, bad, err := results.ReadFile(runfolder.Rows(runDir))
	if err != nil {
		return res, err
	}
	if len(bad) > 0 {
		return res, fmt.Errorf("%s: line %d: %v", runfolder.Rows(runDir), bad[0].Line, bad[0].Err)
	}
	store, err := cas.NewDir(runfolder.CAS(runDir))
	if err != nil {
		return res, err
	}
	groups := map[string][]Prediction{}
	pairs := map[string]results.Key{} // prediction name -> the (model, method) pair it names
	for _, r := range rows {
		pair := results.Key{Model: r.String(results.FieldModel), Method: r.String(results.FieldMethod)}
		name := ModelName(pair.Model, pair.Method)
		if sample, ok := r.Float(results.FieldSample); ok {
			// Each patch sample is a set of predictions of its own: a harness grades one patch per instance.
			pair.Sample = int(sample)
			name = ModelName(pair.Model, pair.Method+"_sample"+strconv.Itoa(pair.Sample))
		}
		if other, ok := pairs[name]; ok && other != pair {
			return res, fmt.Errorf("model %q under method %q and model %q under method %q share the prediction "+
				"name %s: rename a model or a method", other.Model, other.Method, pair.Model, pair.Method, name)
		}
		pairs[name] = pair
		p := Prediction{InstanceID: r.String(results.FieldInstance), ModelNameOrPath: name}
		if ref := cas.Ref(r.String(specs.PatchRef.Name)); ref != "" {
			b, err := store.Get(ctx, ref)
			if err != nil {
				return res, fmt.Errorf("instance %s, %s: patch %s: %w", p.InstanceID, name, ref, err)
			}
			p.ModelPatch = string(b)
		} else {
			res.NoPatch++
		}
		groups[name] = append(groups[name], p)
	}
	for name, ps := range groups {
		slices.SortFunc(ps, func(a, b Prediction) int { return strings.Compare(a.InstanceID, b.InstanceID) })
		// safename.File is one to one: "org/m" and "org_m" get files of their own.
		path := filepath.Join(runfolder.Predictions(runDir), safename.File(name)+".jsonl")
		if err := writeOnce(res, path, name, func() error { return WriteFile(path, ps) }); err != nil {
			return res, err
		}
		res.Files[path] = len(ps)
		msb, unconverted := ToMultiSWEBench(ps)
		res.NotMultiSWEBench = append(res.NotMultiSWEBench, unconverted...)
		if len(msb) > 0 {
			path := filepath.Join(runfolder.Predictions(runDir), safename.File(name)+MultiSWEBenchSuffix+".jsonl")
			if err := writeOnce(res, path, name, func() error { return WriteMultiSWEBenchFile(path, msb) }); err != nil {
				return res, err
			}
			res.Files[path] = len(msb)
		}
	}
	slices.Sort(res.NotMultiSWEBench)
	res.NotMultiSWEBench = slices.Compact(res.NotMultiSWEBench)
	return res, nil
}

// writeOnce writes a file of Export's unless an earlier one of another prediction name took its path (a name
// ending in the Multi-SWE-bench suffix is the other file of a name without it).
func writeOnce(res ExportResult, path, name string, write func() error) error {
	if _, taken := res.Files[path]; taken {
		return fmt.Errorf("the predictions of %s would be written to %s, which holds another's: rename a model or "+
			"a method", name, path)
	}
	return write()
}
