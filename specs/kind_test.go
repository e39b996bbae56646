package specs

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestFieldGetReadsWhatWasSetAndItsJSON: a handle reads a row as a step built it and as JSON decodes it.
func TestFieldGetReadsWhatWasSetAndItsJSON(t *testing.T) {
	row := map[string]any{}
	eps := 0.25
	ContextTokens.Set(row, 120)
	Rho.Set(row, 0.5)
	Epsilon.SetPtr(row, &eps)
	GoldLineShare.SetPtr(row, nil)
	Resolved.Set(row, true)
	TestsFailed.Set(row, []string{"a", "b"})
	b, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	for _, r := range []map[string]any{row, decoded} {
		if n, ok := ContextTokens.Get(r); !ok || n != 120 {
			t.Errorf("context_tokens %v %v", n, ok)
		}
		if x, ok := Rho.Get(r); !ok || x != 0.5 {
			t.Errorf("rho %v %v", x, ok)
		}
		if x, ok := Epsilon.Get(r); !ok || x != 0.25 {
			t.Errorf("epsilon %v %v", x, ok)
		}
		if _, ok := GoldLineShare.Get(r); ok {
			t.Error("gold_line_share: null read as set")
		}
		if v, ok := Resolved.Get(r); !ok || !v {
			t.Errorf("resolved %v %v", v, ok)
		}
		if l, ok := TestsFailed.Get(r); !ok || !slices.Equal(l, []string{"a", "b"}) {
			t.Errorf("tests_failed %v %v", l, ok)
		}
		if _, ok := TestsMissing.Get(r); ok {
			t.Error("tests_missing: absent read as set")
		}
	}
	if _, ok := ContextTokens.Get(map[string]any{"context_tokens": 1.5}); ok {
		t.Error("an int field read 1.5")
	}
	if _, ok := TestsFailed.Get(map[string]any{"tests_failed": []any{"a", 1.0}}); ok {
		t.Error("a list of strings read a number")
	}
	if x, ok := CostUSD.Get(map[string]any{"cost_usd": 2}); !ok || x != 2 {
		t.Errorf("a float field set to an int: %v %v", x, ok)
	}
}

// TestKindDecodeStartsFromDefaultsStrictly: a step's params override the kind's defaults; an unknown or mistyped
// param is an error.
func TestKindDecodeStartsFromDefaultsStrictly(t *testing.T) {
	p, err := Assemble.Decode(map[string]any{"total_cap": 100})
	if err != nil {
		t.Fatal(err)
	}
	if p.TotalCap != 100 || p.FileCap != AssembleDefaults.FileCap || p.Tokenizer != FallbackTokenizer {
		t.Errorf("decoded %+v", p)
	}
	for _, bad := range []map[string]any{{"total_kap": 1}, {"total_cap": "many"}} {
		if _, err := Assemble.Decode(bad); err == nil {
			t.Errorf("%v decoded", bad)
		}
	}
}

// TestKindInfoIsItsCatalogEntry: what a declaration says is what the catalog holds.
func TestKindInfoIsItsCatalogEntry(t *testing.T) {
	info := Catalog[Measure.Name]
	if info.Params.Name() != "MeasureParams" || !info.Cheap || info.Queue != QueueCPU {
		t.Errorf("measure: %+v", info)
	}
	if f, ok := FieldOf("measure", Rho.Name); !ok || f != Rho.RowField {
		t.Errorf("measure's rho: %+v %v", f, ok)
	}
	if Catalog[Patch.Name].Task != Patch.Task || Patch.Task == "" {
		t.Errorf("patch's task %q", Catalog[Patch.Name].Task)
	}
	// A mistyped param elsewhere does not hide the offline model.
	offline := map[string]any{"model": map[string]any{"provider": "offline"}, "sample": "one"}
	if !Catalog[Patch.Name].NoEndpoint(offline) {
		t.Error("a patch step of the offline model calls an endpoint")
	}
}

// TestDeclareRefusesAnUnknownQueue: every kind runs on a queue some worker serves.
func TestDeclareRefusesAnUnknownQueue(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("declared")
		}
		if _, ok := Catalog["test_only"]; ok {
			t.Error("test_only is in the catalog")
		}
	}()
	Declare(Kind[CheckoutParams]{Name: "test_only", Queue: "gpu"})
}
