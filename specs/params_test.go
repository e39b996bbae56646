package specs

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		tag, text string
		in, out   []float64
	}{
		{"[0,1]", "[0, 1]", []float64{0, 0.5, 1}, []float64{-0.1, 1.01}},
		{"(0,1]", "(0, 1]", []float64{0.01, 1}, []float64{0, 2}},
		{"[1,)", "[1, ∞)", []float64{1, 1e9}, []float64{0, -3}},
		{"[0,1)", "[0, 1)", []float64{0}, []float64{1}},
	} {
		r, err := parseRange(c.tag)
		if err != nil {
			t.Fatalf("%s: %v", c.tag, err)
		}
		if r.String() != c.text {
			t.Errorf("%s prints %s, want %s", c.tag, r, c.text)
		}
		for _, x := range c.in {
			if !r.contains(x) {
				t.Errorf("%s refuses %v", c.tag, x)
			}
		}
		for _, x := range c.out {
			if r.contains(x) {
				t.Errorf("%s takes %v", c.tag, x)
			}
		}
	}
	for _, bad := range []string{"0,1", "[0;1]", "[a,1]", "[2,1]", "[0,1"} {
		if _, err := parseRange(bad); err == nil {
			t.Errorf("range %q parsed", bad)
		}
	}
}

func TestNearest(t *testing.T) {
	units := RetrieveUnit("").Values()
	for v, want := range map[string]string{"functon": "function", "Window": "window", "swebench": "swebench_file",
		"paragraph": "", "x": ""} {
		if got := Nearest(v, units); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", v, got, want)
		}
	}
	if got := Nearest("bm52", Scorer("").Values()); got != "bm25" {
		t.Errorf("Nearest(bm52) = %q", got)
	}
}

// TestMalformedValueDeclarationsPanic: a declaration the checks cannot read stops the program at start-up.
func TestMalformedValueDeclarationsPanic(t *testing.T) {
	type rangeOnString struct {
		S string `json:"s" range:"[0,1]"`
	}
	type badRange struct {
		X int `json:"x" range:"[1,0]"`
	}
	type unknownCheck struct {
		S string `json:"s" check:"spelling"`
	}
	type defaultOutOfRange struct {
		X int `json:"x" range:"[1,)"`
	}
	for _, info := range []ActivityInfo{
		{Name: "t1", Queue: QueueCPU, Params: reflect.TypeFor[rangeOnString]()},
		{Name: "t2", Queue: QueueCPU, Params: reflect.TypeFor[badRange]()},
		{Name: "t3", Queue: QueueCPU, Params: reflect.TypeFor[unknownCheck]()},
		{Name: "t4", Queue: QueueCPU, Params: reflect.TypeFor[defaultOutOfRange]()}, // zero is not in [1, ∞)
		{Name: "t5", Queue: QueueCPU, Params: reflect.TypeFor[CorruptParams](), Defaults: CorruptParams{Mode: "blur"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s registered", info.Name)
				}
				delete(Catalog, info.Name)
			}()
			register(info)
		}()
	}
}

// TestDecodeChecksValues: the step's decoding refuses what the compiler refuses, so a plan built another way
// cannot pass a value the step does not handle.
func TestDecodeChecksValues(t *testing.T) {
	_, err := Retrieve.Decode(map[string]any{"unit": "functon", "scorer": "bm52", "b": 1.5})
	if err == nil {
		t.Fatal("decoded")
	}
	for _, want := range []string{`param "b": 1.5 is out of range [0, 1]`, `"bm52" is not one of bm25, dense`,
		`did you mean "function"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %s", err, want)
		}
	}
	p, err := Retrieve.Decode(map[string]any{"unit": "file", "tokenizer": "endpoint:qwen"})
	if err != nil || p.Unit != UnitFile || p.Scorer != "" {
		t.Errorf("%+v %v", p, err)
	}
	if _, err := Retrieve.Decode(map[string]any{"unit": "file", "tokenizer": "endpoint:"}); err == nil {
		t.Error("a server tokenizer without a model decoded")
	}
	if _, err := Agent.Decode(map[string]any{"max_turns": 0.0}); err == nil || !strings.Contains(err.Error(), "[1, ∞)") {
		t.Errorf("max_turns 0: %v", err)
	}
}
