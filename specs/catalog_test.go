package specs

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestCatalogParamsTakeInjectedParams: the plan injects model, tokenizer and grading into the params of the
// activities that use them, so each such activity's params struct must have the field, or its own plan would fail
// the strict decode.
func TestCatalogParamsTakeInjectedParams(t *testing.T) {
	for _, name := range ActivityNames() {
		info := Catalog[name]
		b, err := json.Marshal(reflect.New(info.Params).Interface())
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		for param, injected := range map[string]bool{"model": info.UsesModel, "tokenizer": info.UsesTokenizer,
			"grading": info.UsesGrading} {
			if _, has := fields[param]; injected && !has {
				t.Errorf("%s: the plan injects %q but %s has no such field", name, param, info.Params)
			}
		}
	}
}

// TestRegisterNeedsParams: a catalog entry without a params struct cannot be registered.
func TestRegisterNeedsParams(t *testing.T) {
	for _, params := range []reflect.Type{nil, reflect.TypeFor[map[string]any]()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("params %v: registered", params)
				}
			}()
			register(ActivityInfo{Name: "test_only", Queue: QueueCPU, Params: params})
		}()
	}
	if _, ok := Catalog["test_only"]; ok {
		t.Error("test_only is in the catalog")
	}
}

// TestDefaultParams: every activity has an entry, with the defaults the catalog holds in their JSON form.
func TestDefaultParams(t *testing.T) {
	d, err := DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != len(Catalog) {
		t.Errorf("%d activities, want %d", len(d), len(Catalog))
	}
	assemble, _ := d["assemble"].(map[string]any)
	if assemble["total_cap"] != float64(AssembleDefaults.TotalCap) || assemble["tokenizer"] != DefaultTokenizer {
		t.Errorf("assemble defaults %v", d["assemble"])
	}
	if trim, _ := d["trim"].(map[string]any); len(trim) != 1 || trim["count"] != 0.0 {
		t.Errorf("trim defaults %v, want its zero params", d["trim"])
	}
}
