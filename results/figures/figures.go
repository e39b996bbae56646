// Package figures draws a report's figures with gonum.org/v1/plot, each as PNG and SVG: resolve rate with its
// confidence interval per method, resolve rate against the budget multiplier when methods ran at several budgets,
// and mean rho against mean epsilon per method (with a caption naming the methods whose points coincide). The
// points are the report's numbers, nothing else.
package figures

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"ctxlab/results/report"
	"ctxlab/results/stats"
	"ctxlab/runfolder"
	"ctxlab/specs"
)

// Write draws every figure the report has data for into dir and returns the files written (PNG and SVG of each).
// It records each drawn figure's caption in r.FigureCaptions, keyed by the figure's name (its file stem).
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
		draw func(*report.Report, func(string, string) string) (*figure, error)
	}{{"resolve_ci", resolveCI}, {"budget_resolve", budgetResolve}, {"rho_epsilon", rhoEpsilon},
		{"line_recall_resolve", lineRecallResolve}} {
		fig, err := f.draw(r, label)
		if err != nil {
			return files, fmt.Errorf("figures: %s: %w", f.name, err)
		}
		if fig == nil {
			_ = os.Remove(filepath.Join(dir, f.name+".png"))
			_ = os.Remove(filepath.Join(dir, f.name+".svg"))
			continue
		}
		for _, ext := range []string{"png", "svg"} {
			path := filepath.Join(dir, f.name+"."+ext)
			if err := fig.save(path, ext); err != nil {
				return files, fmt.Errorf("figures: %s: %w", path, err)
			}
			files = append(files, path)
		}
		if fig.caption != "" {
			if r.FigureCaptions == nil {
				r.FigureCaptions = map[string]string{}
			}
			r.FigureCaptions[f.name] = fig.caption
		}
	}
	return files, nil
}

// figure is a drawing of a given size and its caption.
type figure struct {
	w, h    vg.Length
	render  func(draw.Canvas)
	caption string
}

func plotFigure(p *plot.Plot, w, h vg.Length) *figure {
	return &figure{w: w, h: h, render: p.Draw}
}

func (f *figure) save(path, format string) (err error) {
	c, err := draw.NewFormattedCanvas(f.w, f.h, format)
	if err != nil {
		return err
	}
	f.render(draw.New(c))
	out, err := runfolder.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = c.WriteTo(out)
	return err
}

// points are XY points with asymmetric Y errors, as plotter.YErrorBars reads them.
type points struct {
	plotter.XYs
	plotter.YErrors
}

// resolveCI: one point per (method, model) with its bootstrap interval.
func resolveCI(r *report.Report, label func(string, string) string) (*figure, error) {
	if len(r.Methods) == 0 {
		return nil, nil
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
		return nil, err
	}
	bars.LineStyle.Width = vg.Points(1.2)
	dots, err := plotter.NewScatter(pts.XYs)
	if err != nil {
		return nil, err
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
	return plotFigure(p, w, 5*vg.Inch), nil
}

// budgetResolve: resolve rate against the budget multiplier, one line per base method (and model).
func budgetResolve(r *report.Report, label func(string, string) string) (*figure, error) {
	if len(r.Budget) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "Resolve rate by budget multiplier"
	p.X.Label.Text = "multiple of the anchor's per-issue budget (log scale)"
	p.Y.Label.Text = "resolved %"
	p.Y.Min, p.Y.Max = -3, 103 // room for the markers at 0 and 100
	p.X.Scale = plot.LogScale{}
	// Resolve rates grow with the budget, so the top left is where the curves are not.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(6)
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
			return nil, err
		}
		c := plotutil.Color(i)
		line.Color, dots.Color = c, c
		dots.Shape = plotutil.Shape(i)
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, err
		}
		bars.Color = c
		p.Add(line, dots, bars)
		p.Legend.Add(label(s.base, s.model), line, dots)
	}
	return plotFigure(p, 6*vg.Inch, 4*vg.Inch), nil
}

// rhoEpsilon: each method's mean rho against its mean epsilon. Retrieval loses rho (left), compression loses
// epsilon (down); whole files keep both (top right). Methods with equal means (at the table's three decimals)
// share one marker; each marker carries a number, placed where it overlaps no other number or marker, and the
// legend beside the plot lists every method under its number and marker, with its resolve rate. The caption
// names the methods that coincide.
func rhoEpsilon(r *report.Report, label func(string, string) string) (*figure, error) {
	groups := meanGroups(r, label, func(m report.MethodStats) (x, y float64, ok bool) {
		rho, eps := m.Stat(specs.Rho, specs.Mean), m.Stat(specs.Epsilon, specs.Mean)
		return rho.V, eps.V, rho.OK && eps.OK
	})
	if len(groups) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "Gold-file recall (rho) against verbatim rate (epsilon), per method"
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.X.Label.Text = "mean rho"
	p.Y.Label.Text = "mean epsilon"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -0.05, 1.05, -0.05, 1.05
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(8)
	legend.Padding = vg.Points(1.5)
	keyStyle := legend.TextStyle
	var coincide []string
	for i, g := range groups {
		dots, err := plotter.NewScatter(plotter.XYs{{X: g.x, Y: g.y}})
		if err != nil {
			return nil, err
		}
		dots.GlyphStyle.Shape = plotutil.Shape(i)
		dots.GlyphStyle.Color = plotutil.Color(i)
		dots.GlyphStyle.Radius = vg.Points(keyRadius)
		p.Add(dots)
		for _, m := range g.members {
			legend.Add(fmt.Sprintf("%d  %s", i+1, m), dots)
		}
		if len(g.names) > 1 {
			coincide = append(coincide, fmt.Sprintf("%s coincide at rho %.3f, epsilon %.3f (key %d)",
				strings.Join(g.names, ", "), g.x, g.y, i+1))
		}
	}
	caption := "Mean rho against mean epsilon per method. Each marker carries a number that keys the legend, " +
		"which lists every method with its resolve rate; methods with equal means (to three decimals) share one " +
		"marker and number."
	if len(coincide) > 0 {
		caption += " Coinciding: " + strings.Join(coincide, "; ") + "."
	} else {
		caption += " No two methods coincide."
	}
	return keyedLayout(p, legend, groups, keyStyle, caption), nil
}

// meanGroup is the methods sharing one point (rho_epsilon: mean rho, mean epsilon), to three decimals.
type meanGroup struct {
	x, y    float64
	members []string // labels with resolved %
	names   []string
	ci      stats.Interval // line_recall_resolve: the first member's resolve-rate interval
}

// meanGroups groups the methods that have a point by their point, in the order of each point's first method.
func meanGroups(r *report.Report, label func(string, string) string,
	point func(report.MethodStats) (x, y float64, ok bool)) []*meanGroup {
	var groups []*meanGroup
	byMeans := map[string]*meanGroup{}
	for _, m := range r.Methods {
		x, y, ok := point(m)
		if !ok {
			continue
		}
		k := fmt.Sprintf("%.3f %.3f", x, y)
		g := byMeans[k]
		if g == nil {
			g = &meanGroup{x: x, y: y, ci: m.CI}
			byMeans[k] = g
			groups = append(groups, g)
		}
		name := label(m.Method, m.Model)
		g.names = append(g.names, name)
		g.members = append(g.members, fmt.Sprintf("%s  %.0f%%", name, m.ResolvedPct))
	}
	return groups
}

// keyRadius is the radius of rho_epsilon's and line_recall_resolve's markers, which its keys are placed around.
const keyRadius = 4

// keyedLayout places the plot and its legend on one page: the legend sits to the right of a square plot, and each
// marker's key number is placed beside it.
func keyedLayout(p *plot.Plot, legend plot.Legend, groups []*meanGroup, keyStyle draw.TextStyle,
	caption string) *figure {
	// The page grows to hold the legend.
	var legendW vg.Length
	for i, g := range groups {
		for _, m := range g.members {
			legendW = max(legendW, legend.TextStyle.Width(fmt.Sprintf("%d  %s", i+1, m)))
		}
	}
	// Room to spare: a browser showing the SVG may substitute a wider font than the one measured here.
	legendW = legendW*1.25 + legend.ThumbnailWidth + 2*legend.TextStyle.Width(" ") + vg.Points(12)
	plotW := 5 * vg.Inch
	legendH := legend.Rectangle(draw.Canvas{}).Size().Y + vg.Points(24)
	w, h := plotW+legendW, max(plotW, legendH)
	render := func(c draw.Canvas) {
		pc := draw.Crop(c, 0, -legendW, h-plotW, 0) // the plot's square, at the top left
		p.Draw(pc)
		dc := p.DataCanvas(pc)
		xf, yf := p.Transforms(&dc)
		markers := make([]vg.Point, len(groups))
		keys := make([]string, len(groups))
		for i, g := range groups {
			markers[i] = vg.Point{X: xf(g.x), Y: yf(g.y)}
			keys[i] = strconv.Itoa(i + 1)
		}
		boxes := placeKeys(markers, keys, keyStyle, vg.Points(keyRadius), dc.Rectangle)
		for i, b := range boxes {
			at := b.Min.Sub(keyStyle.Rectangle(keys[i]).Min)
			dc.FillText(keyStyle, at, keys[i])
		}
		legend.Draw(draw.Crop(c, plotW+vg.Points(6), 0, 0, -vg.Points(12)))
	}
	return &figure{w: w, h: h, render: render, caption: caption}
}

// placeKeys places each text next to its marker (a disc of the given radius) where its box overlaps no marker and
// no text placed before it, and stays inside bounds: it tries eight directions at growing distances, and returns
// the boxes in canvas units. A text that finds no free place in twelve rings goes to its marker's right.
func placeKeys(markers []vg.Point, texts []string, sty text.Style, radius vg.Length, bounds vg.Rectangle) []vg.Rectangle {
	markerBox := func(m vg.Point) vg.Rectangle {
		return vg.Rectangle{Min: vg.Point{X: m.X - radius, Y: m.Y - radius}, Max: vg.Point{X: m.X + radius, Y: m.Y + radius}}
	}
	var taken []vg.Rectangle
	for _, m := range markers {
		taken = append(taken, markerBox(m))
	}
	free := func(b vg.Rectangle) bool {
		if b.Min.X < bounds.Min.X || b.Min.Y < bounds.Min.Y || b.Max.X > bounds.Max.X || b.Max.Y > bounds.Max.Y {
			return false
		}
		for _, t := range taken {
			if overlap(b, t) {
				return false
			}
		}
		return true
	}
	gap := vg.Points(1.5)
	out := make([]vg.Rectangle, len(markers))
	for i, m := range markers {
		size := sty.Rectangle(texts[i]).Size()
		at := func(dx, dy, d vg.Length) vg.Rectangle {
			// dx, dy in {-1, 0, 1}: which side of the marker, d the distance from its edge.
			x := m.X - size.X/2 + dx*(radius+d+size.X/2)
			y := m.Y - size.Y/2 + dy*(radius+d+size.Y/2)
			return vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + size.X, Y: y + size.Y}}
		}
		placed := false
		for ring := 0; ring < 12 && !placed; ring++ {
			d := gap + vg.Length(ring)*size.Y
			for _, dir := range [][2]vg.Length{{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1}} {
				if b := at(dir[0], dir[1], d); free(b) {
					out[i], placed = b, true
					break
				}
			}
		}
		if !placed {
			out[i] = at(1, 0, gap)
		}
		taken = append(taken, out[i])
	}
	return out
}

func overlap(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// lineRecallResolve: each method's resolve rate (with its interval) against its mean line recall, keyed as
// rho_epsilon is. Methods with equal line recall and resolve rate share one marker; methods without line recall
// (no gold line in their rows) are left out and named in the caption.
func lineRecallResolve(r *report.Report, label func(string, string) string) (*figure, error) {
	var without []string
	groups := meanGroups(r, label, func(m report.MethodStats) (x, y float64, ok bool) {
		lr := m.Stat(specs.LineRecall, specs.Mean)
		if !lr.OK {
			without = append(without, label(m.Method, m.Model))
		}
		return lr.V, m.ResolvedPct, lr.OK
	})
	if len(groups) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "Resolve rate against line recall, per method"
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.X.Label.Text = "mean line recall (share of the gold patch's lines shown verbatim)"
	p.Y.Label.Text = "resolved %"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -0.05, 1.05, -3, 103
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(8)
	legend.Padding = vg.Points(1.5)
	for i, g := range groups {
		pts := points{XYs: plotter.XYs{{X: g.x, Y: g.y}},
			YErrors: plotter.YErrors{{Low: g.y - g.ci.Lo, High: g.ci.Hi - g.y}}}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(i)
		dots, err := plotter.NewScatter(pts.XYs)
		if err != nil {
			return nil, err
		}
		dots.GlyphStyle.Shape = plotutil.Shape(i)
		dots.GlyphStyle.Color = plotutil.Color(i)
		dots.GlyphStyle.Radius = vg.Points(keyRadius)
		p.Add(bars, dots)
		for _, m := range g.members {
			legend.Add(fmt.Sprintf("%d  %s", i+1, m), dots)
		}
	}
	caption := fmt.Sprintf("Resolve rate (with its %.0f%% bootstrap interval) against mean line recall per method. "+
		"Each marker carries a number that keys the legend; methods with equal line recall (to three decimals) and "+
		"resolve rate share one marker and number.", 100*r.Level)
	if len(without) > 0 {
		caption += " Without line recall (no gold line in their rows): " + strings.Join(without, ", ") + "."
	}
	return keyedLayout(p, legend, groups, legend.TextStyle, caption), nil
}
