// Package figures draws a report's figures with gonum.org/v1/plot, each as PNG and SVG: resolve rate with its
// confidence interval per method, resolve rate against the budget multiplier when methods ran at several budgets,
// and mean rho against mean epsilon per method. The points are the report's numbers, nothing else.
package figures

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"ctxlab/results/report"
)

// Write draws every figure the report has data for into dir and returns the files written (PNG and SVG of each).
func Write(r *report.Report, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	var files []string
	models := map[string]bool{}
	for _, m := range r.Methods {
		models[m.Model] = true
	}
	label := func(method, model string) string {
		if len(models) > 1 {
			return method + " (" + model + ")"
		}
		return method
	}
	for _, f := range []struct {
		name string
		draw func(*report.Report, func(string, string) string) (*plot.Plot, vg.Length, vg.Length, error)
	}{{"resolve_ci", resolveCI}, {"budget_resolve", budgetResolve}, {"rho_epsilon", rhoEpsilon}} {
		p, w, h, err := f.draw(r, label)
		if err != nil {
			return files, fmt.Errorf("figures: %s: %w", f.name, err)
		}
		if p == nil {
			_ = os.Remove(filepath.Join(dir, f.name+".png"))
			_ = os.Remove(filepath.Join(dir, f.name+".svg"))
			continue
		}
		for _, ext := range []string{".png", ".svg"} {
			path := filepath.Join(dir, f.name+ext)
			if err := p.Save(w, h, path); err != nil {
				return files, fmt.Errorf("figures: %s: %w", path, err)
			}
			files = append(files, path)
		}
	}
	return files, nil
}

// points are XY points with asymmetric Y errors, as plotter.YErrorBars reads them.
type points struct {
	plotter.XYs
	plotter.YErrors
}

// resolveCI: one point per (method, model) with its bootstrap interval.
func resolveCI(r *report.Report, label func(string, string) string) (*plot.Plot, vg.Length, vg.Length, error) {
	if len(r.Methods) == 0 {
		return nil, 0, 0, nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Resolve rate with %.0f%% bootstrap interval (%d resamples)", 100*r.Level, r.Resamples)
	p.Y.Label.Text = "resolved %"
	p.Y.Min, p.Y.Max = -3, 103 // room for the markers at 0 and 100
	var pts points
	var names []string
	for i, m := range r.Methods {
		pts.XYs = append(pts.XYs, plotter.XY{X: float64(i), Y: m.ResolvedPct})
		pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{m.ResolvedPct - m.CI.Lo, m.CI.Hi - m.ResolvedPct})
		names = append(names, fmt.Sprintf("%s\nn=%d", label(m.Method, m.Model), m.N))
	}
	bars, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return nil, 0, 0, err
	}
	bars.LineStyle.Width = vg.Points(1.2)
	dots, err := plotter.NewScatter(pts.XYs)
	if err != nil {
		return nil, 0, 0, err
	}
	dots.GlyphStyle.Shape = draw.CircleGlyph{}
	dots.GlyphStyle.Radius = vg.Points(3.5)
	p.Add(plotter.NewGrid(), bars, dots)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	// Slanted labels keep long method names apart however many methods a study has.
	p.X.Tick.Label.Rotation = math.Pi / 5
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	w := max(5*vg.Inch, vg.Length(len(names))*0.6*vg.Inch)
	return p, w, 5 * vg.Inch, nil
}

// budgetResolve: resolve rate against the budget multiplier, one line per base method (and model).
func budgetResolve(r *report.Report, label func(string, string) string) (*plot.Plot, vg.Length, vg.Length, error) {
	if len(r.Budget) == 0 {
		return nil, 0, 0, nil
	}
	p := plot.New()
	p.Title.Text = "Resolve rate by budget (multiples of the anchor's per-issue budget)"
	p.X.Label.Text = "budget multiplier (log scale)"
	p.Y.Label.Text = "resolved %"
	p.Y.Min, p.Y.Max = -3, 103 // room for the markers at 0 and 100
	p.X.Scale = plot.LogScale{}
	p.Legend.Top, p.Legend.Left = false, false
	type series struct{ base, model string }
	var order []series
	by := map[series]*points{}
	var mults []float64
	for _, b := range r.Budget {
		s := series{b.Base, b.Model}
		if by[s] == nil {
			by[s] = &points{}
			order = append(order, s)
		}
		by[s].XYs = append(by[s].XYs, plotter.XY{X: b.Multiplier, Y: b.ResolvedPct})
		by[s].YErrors = append(by[s].YErrors, struct{ Low, High float64 }{b.ResolvedPct - b.CI.Lo, b.CI.Hi - b.ResolvedPct})
		if !slices.Contains(mults, b.Multiplier) {
			mults = append(mults, b.Multiplier)
		}
	}
	slices.Sort(mults)
	var ticks plot.ConstantTicks
	for _, m := range mults {
		ticks = append(ticks, plot.Tick{Value: m, Label: strconv.FormatFloat(m, 'g', -1, 64) + "x"})
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = mults[0]/1.3, mults[len(mults)-1]*1.3
	p.Add(plotter.NewGrid())
	for i, s := range order {
		pts := by[s]
		// Series at the same multipliers are spread a little sideways so their intervals stay apart.
		dodge := math.Pow(1.04, float64(i)-float64(len(order)-1)/2)
		for j := range pts.XYs {
			pts.XYs[j].X *= dodge
		}
		line, dots, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return nil, 0, 0, err
		}
		c := plotutil.Color(i)
		line.Color, dots.Color = c, c
		dots.Shape = plotutil.Shape(i)
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, 0, 0, err
		}
		bars.Color = c
		p.Add(line, dots, bars)
		p.Legend.Add(label(s.base, s.model), line, dots)
	}
	return p, 6 * vg.Inch, 4 * vg.Inch, nil
}

// rhoEpsilon: each method's mean rho against its mean epsilon, labelled. Retrieval loses rho (left), compression
// loses epsilon (down); whole files keep both (top right).
func rhoEpsilon(r *report.Report, label func(string, string) string) (*plot.Plot, vg.Length, vg.Length, error) {
	var xys plotter.XYs
	var labels []string
	for _, m := range r.Methods {
		if !m.MeanRho.OK || !m.MeanEpsilon.OK {
			continue
		}
		xys = append(xys, plotter.XY{X: m.MeanRho.V, Y: m.MeanEpsilon.V})
		labels = append(labels, fmt.Sprintf("%s %.0f%%", label(m.Method, m.Model), m.ResolvedPct))
	}
	if len(xys) == 0 {
		return nil, 0, 0, nil
	}
	p := plot.New()
	p.Title.Text = "Gold-file recall (rho) against verbatim rate (epsilon), per method; label: resolved %"
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.X.Label.Text = "mean rho"
	p.Y.Label.Text = "mean epsilon"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -0.05, 1.15, -0.05, 1.1
	dots, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, 0, 0, err
	}
	dots.GlyphStyle.Shape = draw.CircleGlyph{}
	dots.GlyphStyle.Radius = vg.Points(4)
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: placeLabels(xys), Labels: labels})
	if err != nil {
		return nil, 0, 0, err
	}
	lbl.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(-3)}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].Font.Size = vg.Points(8)
	}
	p.Add(plotter.NewGrid(), dots, lbl)
	return p, 5 * vg.Inch, 5 * vg.Inch, nil
}

// placeLabels puts each label at its point unless an earlier label is already there (in data units: the figure is
// 1.2 units across 5 inches, and an 8-point line is about 0.035 units high); then it moves down one line at a time.
func placeLabels(pts plotter.XYs) plotter.XYs {
	const lineH, width = 0.035, 0.3
	out := make(plotter.XYs, len(pts))
	for i, p := range pts {
		y := p.Y
		for moved := true; moved; {
			moved = false
			for _, q := range out[:i] {
				if math.Abs(q.X-p.X) < width && math.Abs(q.Y-y) < lineH {
					y = q.Y - lineH
					moved = true
				}
			}
		}
		out[i] = plotter.XY{X: p.X, Y: y}
	}
	return out
}
