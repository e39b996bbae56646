package figures

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/results/report"
)

func TestWriteFigures(t *testing.T) {
	var rows []results.Row
	add := func(method string, rho, eps float64, res ...bool) {
		for i, v := range res {
			rows = append(rows, results.Row{results.FieldInstance: string(rune('a' + i)), results.FieldMethod: method,
				results.FieldModel: "m", results.FieldResolved: v, results.FieldRho: rho, results.FieldEpsilon: eps})
		}
	}
	add("cq2care", 0.9, 1, true, true, false, true)
	add("bm25", 0.4, 1, true, false, false, true)
	add("bm25@0.5x", 0.3, 1, false, false, false, true)
	add("lingua", 0.9, 0.2, false, true, false, false)
	r, err := report.Build(rows, nil, report.Options{Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := Write(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 6 {
		t.Fatalf("files %v, want PNG and SVG of three figures", files)
	}
	for _, name := range []string{"resolve_ci", "budget_resolve", "rho_epsilon"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil || img.Bounds().Dx() < 300 {
			t.Errorf("%s.png: %v %v", name, err, img)
		}
		svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil || !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("%s.svg: %v", name, err)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "resolve_ci.svg"))
	for _, m := range []string{"cq2care", "bm25@0.5x", "lingua"} {
		if !strings.Contains(string(svg), m) {
			t.Errorf("resolve_ci.svg lacks the label %s", m)
		}
	}
	// Without multipliers the budget figure is not drawn and a stale one is removed.
	var plain []results.Row
	for _, row := range rows {
		if !strings.Contains(row.String(results.FieldMethod), "bm25") {
			plain = append(plain, row)
		}
	}
	r, _ = report.Build(plain, nil, report.Options{Resamples: 100})
	files, err = Write(r, dir)
	if err != nil || len(files) != 4 {
		t.Errorf("files %v %v", files, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "budget_resolve.png")); err == nil {
		t.Errorf("stale budget figure left behind")
	}
}
