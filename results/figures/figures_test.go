package figures

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"ctxlab/results"
	"ctxlab/results/report"
	"ctxlab/specs"
)

func TestWriteFigures(t *testing.T) {
	var rows []results.Row
	add := func(method string, rho, eps float64, res ...bool) {
		for i, v := range res {
			rows = append(rows, results.Row{results.FieldInstance: string(rune('a' + i)), results.FieldMethod: method,
				results.FieldModel: "m", specs.Resolved.Name: v, specs.Rho.Name: rho, specs.Epsilon.Name: eps})
		}
	}
	add("cq2care", 0.9, 1, true, true, false, true)
	add("bm25", 0.4, 1, true, false, false, true)
	add("bm25@0.5x", 0.3, 1, false, false, false, true)
	add("lingua", 0.9, 0.2, false, true, false, false)
	add("bm25@2x", 0.9, 1, true, true, true, true)
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
	for _, m := range []string{"cq2care", "bm25@0.5x", "lingua", "bm25@2x"} {
		if !strings.Contains(string(svg), m) {
			t.Errorf("resolve_ci.svg lacks the label %s", m)
		}
	}
	// cq2care and bm25@2x share their means: one marker, named as coinciding in the caption and in report.md.
	caption := r.FigureCaptions["rho_epsilon"]
	if !strings.Contains(caption, "Coinciding: cq2care, bm25@2x coincide at rho 0.900, epsilon 1.000") ||
		strings.Contains(caption, "lingua,") {
		t.Errorf("rho_epsilon caption: %q", caption)
	}
	r.Figures = []string{"figures/rho_epsilon.png"}
	if !strings.Contains(r.Markdown(), caption) {
		t.Errorf("report.md lacks the caption")
	}
	svg, _ = os.ReadFile(filepath.Join(dir, "rho_epsilon.svg"))
	for _, m := range []string{"1  cq2care  75%", "1  bm25@2x  100%", "lingua"} {
		if !strings.Contains(string(svg), m) {
			t.Errorf("rho_epsilon.svg legend lacks %q", m)
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

// TestPlaceKeysNoOverlap: keys of coinciding, crowded and edge points get boxes that overlap neither each other nor
// any marker, and stay inside the data area.
func TestPlaceKeysNoOverlap(t *testing.T) {
	sty := plot.NewLegend().TextStyle
	sty.Font.Size = vg.Points(8)
	bounds := vg.Rectangle{Max: vg.Point{X: 300, Y: 300}}
	var markers []vg.Point
	var keys []string
	for i := range 25 {
		// A crowded row along the top edge 6 points apart, a few exactly on top of each other, and a corner.
		x := 290 - vg.Length(6*(i%12))
		if i%5 == 0 {
			x = 290
		}
		markers = append(markers, vg.Point{X: x, Y: 296})
		keys = append(keys, strconv.Itoa(i+1))
	}
	markers = append(markers, vg.Point{X: 0, Y: 0}, vg.Point{X: 150, Y: 150}, vg.Point{X: 152, Y: 151})
	keys = append(keys, "26", "27", "28")
	const radius = 4
	boxes := placeKeys(markers, keys, sty, radius, bounds)
	for i, a := range boxes {
		if a.Min.X < 0 || a.Min.Y < 0 || a.Max.X > 300 || a.Max.Y > 300 || a.Size().X <= 0 {
			t.Errorf("key %s box %v outside the data area", keys[i], a)
		}
		for j, b := range boxes[:i] {
			if overlap(a, b) {
				t.Errorf("keys %s and %s overlap: %v %v", keys[i], keys[j], a, b)
			}
		}
		for j, m := range markers {
			if overlap(a, vg.Rectangle{Min: vg.Point{X: m.X - radius, Y: m.Y - radius}, Max: vg.Point{X: m.X + radius, Y: m.Y + radius}}) {
				t.Errorf("key %s covers marker %d", keys[i], j+1)
			}
		}
	}
}

// line_recall_resolve plots each method's resolve rate against its mean line recall; methods with equal points share
// a marker, and methods whose rows carry no line recall are named in the caption.
func TestLineRecallResolveFigure(t *testing.T) {
	var rows []results.Row
	add := func(method string, lineRecall []float64, res ...bool) {
		for i, v := range res {
			r := results.Row{results.FieldInstance: string(rune('a' + i)), results.FieldMethod: method,
				results.FieldModel: "m", specs.Resolved.Name: v, specs.Rho.Name: 1.0, specs.Epsilon.Name: 1.0}
			if lineRecall != nil {
				r[specs.LineRecall.Name] = lineRecall[i]
			}
			rows = append(rows, r)
		}
	}
	add("oracle", []float64{1, 1, 1, 1}, true, true, true, true)
	add("bm25", []float64{0.5, 0.25, 0, 0.25}, true, false, false, false)
	add("bm25_copy", []float64{0.25, 0.5, 0.25, 0}, false, true, false, false)
	add("no_truth", nil, false, false, false, false)
	r, err := report.Build(rows, nil, report.Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Write(r, dir); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "line_recall_resolve.svg"))
	if err != nil {
		t.Fatal(err)
	}
	// bm25 and bm25_copy: mean line recall 0.25, resolved 25%: one marker, key 2.
	for _, m := range []string{"1  oracle  100%", "2  bm25  25%", "2  bm25_copy  25%", "mean line recall"} {
		if !strings.Contains(string(svg), m) {
			t.Errorf("line_recall_resolve.svg lacks %q", m)
		}
	}
	if strings.Contains(string(svg), "no_truth") {
		t.Error("a method without line recall is plotted")
	}
	caption := r.FigureCaptions["line_recall_resolve"]
	if !strings.Contains(caption, "Without line recall (no gold line in their rows): no_truth.") {
		t.Errorf("caption: %q", caption)
	}
	if _, err := os.Stat(filepath.Join(dir, "line_recall_resolve.png")); err != nil {
		t.Error(err)
	}
}
