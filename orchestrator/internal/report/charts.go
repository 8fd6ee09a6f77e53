package report

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
)

// Chart geometry: ranked charts are as wide as the page's column and grow
// by a fixed height per server, so 15 or 30 servers stay readable.
const (
	chartWidth   = 9 * vg.Inch
	rowHeight    = 17 * vg.Millimeter / 3 // about 16 pt per server
	chartMargins = 1.1 * vg.Inch          // axis, axis label, padding
	smallWidth   = 4.6 * vg.Inch
	smallHeight  = 2.4 * vg.Inch
)

// sans is the charts' typeface; the page's CSS names metric-compatible
// fallbacks for browsers that lack it.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Colours of the row classes and of the series. Each class also has a
// word after the server's name, so a grey print still tells them apart.
var (
	colourOK          = color.RGBA{R: 0x3b, G: 0x6e, B: 0xa5, A: 0xff}
	colourClientBound = color.RGBA{R: 0xe0, G: 0x8a, B: 0x2c, A: 0xff}
	colourFailing     = color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff}
	colourWhisker     = color.RGBA{R: 0x22, G: 0x22, B: 0x22, A: 0xff}
	colourGuide       = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	colourWarmup      = color.RGBA{R: 0xe6, G: 0xe6, B: 0xe6, A: 0xff}
	colourWindow      = color.RGBA{R: 0xdc, G: 0xef, B: 0xdc, A: 0xff}
	seriesColours     = []color.Color{
		color.RGBA{R: 0x3b, G: 0x6e, B: 0xa5, A: 0xff},
		color.RGBA{R: 0xd6, G: 0x60, B: 0x1e, A: 0xff},
		color.RGBA{R: 0x3a, G: 0x92, B: 0x3a, A: 0xff},
		color.RGBA{R: 0x8e, G: 0x44, B: 0xad, A: 0xff},
		color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
		color.RGBA{R: 0xd6, G: 0x27, B: 0x8a, A: 0xff},
	}
)

// rowClass is what a ranked row's bar says beside its length.
type rowClass int

const (
	classOK rowClass = iota
	classClientBound
	classFailing
)

func (c rowClass) colour() color.Color {
	switch c {
	case classClientBound:
		return colourClientBound
	case classFailing:
		return colourFailing
	}
	return colourOK
}

func (c rowClass) String() string {
	switch c {
	case classClientBound:
		return "client-bound"
	case classFailing:
		return "failed calls > 1%"
	}
	return "measured"
}

// classOf ranks failed calls above client-bound: a row with both is first
// of all wrong.
func classOf(r analysis.Row) rowClass {
	switch {
	case r.ErrorShare() > analysis.ErrorShareMark:
		return classFailing
	case r.ClientBound:
		return classClientBound
	}
	return classOK
}

// nameOf is a row's axis label: its name, and its class in words.
func nameOf(r analysis.Row) string {
	var tags []string
	if r.ClientBound {
		tags = append(tags, "client-bound")
	}
	if r.ErrorShare() > analysis.ErrorShareMark {
		tags = append(tags, "failed calls")
	}
	if len(tags) == 0 {
		return r.Name
	}
	return r.Name + " (" + strings.Join(tags, ", ") + ")"
}

// newPlot is a plot whose every text is in the charts' typeface.
func newPlot() *plot.Plot {
	p := plot.New()
	for _, s := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		size := s.Size
		*s = sans
		s.Size = size
	}
	p.X.Label.TextStyle.Font.Size = 10
	p.Y.Label.TextStyle.Font.Size = 10
	p.X.Tick.Label.Font.Size = 9
	p.Y.Tick.Label.Font.Size = 9
	p.Legend.TextStyle.Font.Size = 9
	p.Legend.Padding = vg.Points(2)
	return p
}

// svgOf draws a plot on an SVG canvas and returns the SVG element, ready
// to sit inside the page: without its XML prolog, with a role and a label
// for screen readers.
func svgOf(p *plot.Plot, w, h vg.Length, label string) (_ template.HTML, err error) {
	// The library panics on data it cannot draw (a log axis over zero,
	// say): that is one chart's failure, not the page's.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("draw the chart %q: %v", label, r)
		}
	}()
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("draw the chart %q: %w", label, err)
	}
	s := b.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("draw the chart %q: the SVG canvas wrote no <svg> element", label)
	}
	s = `<svg role="img" aria-label="` + html.EscapeString(label) + `"` + strings.TrimPrefix(s[i:], "<svg")
	return template.HTML(s), nil // #nosec G203 -- written by the SVG canvas, the label escaped
}

// rankedHeight is the height of a chart of n rows and the headroom above them,
// in rows, that keeps a legend of legendRows entries clear of the bars.
func rankedHeight(n, legendRows int) (height vg.Length, headroom float64) {
	headroom = 0.9 * float64(legendRows)
	return chartMargins + rowHeight*vg.Length(float64(n)+headroom), headroom
}

// bar is one server's bar of a ranked bar chart.
type bar struct {
	name  string
	value float64
	// lo and hi bound a whisker when whisker is set.
	lo, hi  float64
	whisker bool
	class   rowClass
	label   string
}

// barChart draws bars as a ranked horizontal bar chart, the first at the
// top, coloured by class, with whiskers where set, each bar's label at its
// end, and a legend of the classes present.
func barChart(bars []bar, xLabel, aria string) (template.HTML, error) {
	p := newPlot()
	p.X.Label.Text = xLabel
	n := len(bars)
	names := make([]string, n)
	var whiskers plotter.XYs
	var errs plotter.XErrors
	var labels plotter.XYLabels
	thumbs := map[rowClass]*plotter.BarChart{} // a bar of each class, for the legend
	xMax := 0.0
	for i, b := range bars {
		y := float64(n - 1 - i)
		names[n-1-i] = b.name
		bc, err := plotter.NewBarChart(plotter.Values{b.value}, rowHeight*0.7)
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		bc.Horizontal, bc.XMin, bc.Color, bc.LineStyle.Width = true, y, b.class.colour(), 0
		p.Add(bc)
		if thumbs[b.class] == nil {
			thumbs[b.class] = bc
		}
		end := b.value
		if b.whisker {
			whiskers = append(whiskers, plotter.XY{X: b.value, Y: y})
			errs = append(errs, struct{ Low, High float64 }{b.value - b.lo, b.hi - b.value})
			end = max(end, b.hi)
		}
		xMax = max(xMax, end)
		labels.XYs = append(labels.XYs, plotter.XY{X: end, Y: y})
		labels.Labels = append(labels.Labels, b.label)
	}
	if len(whiskers) > 0 {
		eb, err := plotter.NewXErrorBars(struct {
			plotter.XYs
			plotter.XErrors
		}{whiskers, errs})
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		eb.Color, eb.Width, eb.CapWidth = colourWhisker, vg.Points(1), rowHeight*0.45
		p.Add(eb)
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return "", fmt.Errorf("draw the chart %q: %w", aria, err)
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = font.From(sans, 8)
		l.TextStyle[i].YAlign = draw.YCenter
	}
	l.Offset = vg.Point{X: vg.Points(4)}
	p.Add(l)
	p.NominalY(names...)
	p.X.Min = 0
	p.X.Max = xMax * 1.02
	// Only a run with more than one class needs a legend.
	legend := 0
	if len(thumbs) > 1 {
		for _, c := range []rowClass{classOK, classClientBound, classFailing} {
			if t := thumbs[c]; t != nil {
				p.Legend.Add(c.String(), t)
				legend++
			}
		}
	}
	p.Legend.Top = true
	height, headroom := rankedHeight(n, legend)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4+headroom
	p.X.Tick.Marker = shortTicks{}
	return svgOf(p, chartWidth, height, aria)
}

// shortTicks labels a linear axis without trailing zeros, and in k and M
// so that large req/s fit.
type shortTicks struct{}

func (shortTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = short(t.Value)
		}
	}
	return ticks
}

// short writes 1234567 as 1.23M and 45600 as 45.6k.
func short(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// percentile is one latency figure of the latency chart.
type percentile struct {
	name  string
	shape draw.GlyphDrawer
}

var percentiles = []percentile{
	{"p50", draw.CircleGlyph{}},
	{"p90", draw.BoxGlyph{}},
	{"p99", draw.TriangleGlyph{}},
	{"p99.9", draw.PyramidGlyph{}},
	{"max", draw.CrossGlyph{}},
}

// latencyChart draws each row's latency percentiles (in the order of
// percentiles, in ms) on a log scale, one line per server from its lowest
// to its highest figure. A figure of 0 was not measured and is left out.
func latencyChart(names []string, values [][]float64, aria string) (template.HTML, error) {
	p := newPlot()
	p.X.Label.Text = "latency, ms (log scale)"
	n := len(names)
	lo, hi := math.Inf(1), math.Inf(-1)
	points := make([]plotter.XYs, len(percentiles))
	for i, row := range values {
		y := float64(n - 1 - i)
		var span plotter.XYs
		for k, v := range row {
			if v <= 0 {
				continue
			}
			points[k] = append(points[k], plotter.XY{X: v, Y: y})
			span = append(span, plotter.XY{X: v, Y: y})
			lo, hi = min(lo, v), max(hi, v)
		}
		if len(span) > 1 {
			line, err := plotter.NewLine(span)
			if err != nil {
				return "", fmt.Errorf("draw the chart %q: %w", aria, err)
			}
			line.Color, line.Width = colourGuide, vg.Points(0.8)
			p.Add(line)
		}
	}
	if math.IsInf(lo, 1) {
		return "", nil
	}
	legend := 0
	for k, pts := range points {
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: seriesColours[k%len(seriesColours)], Radius: vg.Points(3.5), Shape: percentiles[k].shape}
		p.Add(sc)
		p.Legend.Add(percentiles[k].name, sc)
		legend++
	}
	rev := make([]string, n)
	for i, name := range names {
		rev[n-1-i] = name
	}
	p.NominalY(rev...)
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
	p.X.Min, p.X.Max = lo/1.4, hi*1.4
	p.Legend.Top = true
	// The legend stands in one column of five entries; with few servers
	// it still needs its height.
	height, headroom := rankedHeight(n, legend)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4+headroom
	return svgOf(p, chartWidth, height, aria)
}

// logTicks labels 1, 2 and 5 times each power of ten: plot.LogTicks labels
// powers of ten only, which leaves a range inside one decade unlabelled.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			// Read from its decimal form, so that 0.2 is not 0.2000000001.
			v, err := strconv.ParseFloat(fmt.Sprintf("%ge%.0f", m, e), 64)
			if err == nil && v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
			}
		}
	}
	return ticks
}

// timeChart draws one line per round of a figure over time (seconds from
// the start of the load, over span), over a grey warm-up and a green
// measured window; limit, when above 0, is drawn as a dashed line.
func timeChart(rounds []plotter.XYs, span, warmup, window [2]float64, limit float64, yLabel, aria string) (template.HTML, error) {
	p := newPlot()
	p.X.Label.Text = "seconds from the start of the load"
	p.Y.Label.Text = yLabel
	p.X.Tick.Marker = shortTicks{}
	yMax := limit
	for _, pts := range rounds {
		for _, pt := range pts {
			yMax = max(yMax, pt.Y)
		}
	}
	yMax = max(yMax*1.1, 1)
	for _, span := range []struct {
		span   [2]float64
		colour color.Color
	}{{warmup, colourWarmup}, {window, colourWindow}} {
		if err := shade(p, span.span, 0, yMax, span.colour); err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
	}
	for i, pts := range rounds {
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		line.Color, line.Width = seriesColours[i%len(seriesColours)], vg.Points(1.2)
		p.Add(line)
	}
	if limit > 0 {
		line, err := plotter.NewLine(plotter.XYs{{X: span[0], Y: limit}, {X: span[1], Y: limit}})
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		line.Color, line.Dashes = colourGuide, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
	}
	p.X.Min, p.X.Max = span[0], span[1]
	p.Y.Min, p.Y.Max = 0, yMax
	return svgOf(p, smallWidth, smallHeight, aria)
}
