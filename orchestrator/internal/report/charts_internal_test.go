package report

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

func TestSVGOfTurnsAPanicIntoAnError(t *testing.T) {
	p := newPlot()
	line, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 1}, {X: 10, Y: 2}})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(line)
	// A log axis from 0 is what the library panics on.
	p.X.Scale, p.X.Min = plot.LogScale{}, 0
	svg, err := svgOf(p, 4*vg.Inch, 3*vg.Inch, "broken")
	if err == nil || !strings.Contains(err.Error(), `draw the chart "broken"`) || svg != "" {
		t.Errorf("svgOf = %q, %v; want no SVG and an error naming the chart", svg, err)
	}
}

func TestPageSaysWhichChartFailed(t *testing.T) {
	var b strings.Builder
	pg := page{Cells: []cellView{{Name: "cell", Problems: []string{`draw the chart "req/s per server": boom`}}}}
	if err := pageTemplate.Execute(&b, pg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `A chart could not be drawn: draw the chart &#34;req/s per server&#34;: boom`) {
		t.Errorf("the page does not name the chart that failed:\n%s", b.String())
	}
}

// The whiskers' caption names one kind of interval only when every row
// has it: under auto the rows' rounds differ.
func TestSpreadNamesTheIntervalPerRow(t *testing.T) {
	three := analysis.Row{RPS: stats.Of([]float64{1, 2, 3})}
	six := analysis.Row{RPS: stats.Of([]float64{1, 2, 3, 4, 5, 6})}
	if got := spread([]analysis.Row{three, three}); got != " (median; whiskers: min–max, 75% over 3 rounds)" {
		t.Errorf("same rounds: %q", got)
	}
	if got := spread([]analysis.Row{three, six}); got != " (median; whiskers: each row's interval, named in the table)" {
		t.Errorf("different rounds: %q", got)
	}
}

// TestRecordedStatsAreRead reads the recorded run's stats files back with
// the backend that wrote them: every round of go_grpc has CPU and memory
// series, and none is missing.
func TestRecordedStatsAreRead(t *testing.T) {
	dir := filepath.Join("testdata", "run")
	run, err := record.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := run.Cells[0]
	s := c.Servers[slices.IndexFunc(c.Servers, func(s record.Server) bool { return s.Name == "go_grpc" })]
	u := readUsage(run, c, s)
	if len(u.Missing) > 0 || len(u.CPU) != len(s.Rounds) || len(u.Memory) != len(s.Rounds) {
		t.Errorf("go_grpc's %d rounds read as %d CPU and %d memory series, missing %q", len(s.Rounds), len(u.CPU), len(u.Memory), u.Missing)
	}
}

// TestQuantileTicksReadAsPercentiles: the 1/(1−q) axis is labelled with
// the percentiles, five nines as 99.999%, not its floating-point noise.
func TestQuantileTicksReadAsPercentiles(t *testing.T) {
	var got []string
	for _, tick := range (quantileTicks{}).Ticks(1.5, 2e5) {
		got = append(got, tick.Label)
	}
	if want := "50% 90% 99% 99.9% 99.99% 99.999%"; strings.Join(got, " ") != want {
		t.Errorf("ticks %q, want %q", strings.Join(got, " "), want)
	}
}
