package report

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

//go:embed html.tmpl
var htmlTemplate string

var pageTemplate = template.Must(template.New("report.html").Funcs(template.FuncMap{"join": strings.Join}).Parse(htmlTemplate))

// WriteHTML writes report.html: one page that needs nothing beside it,
// with the charts as inline SVG, for every cell of the run. dir is the
// run's folder, where the rounds' samples are read from.
func WriteHTML(w io.Writer, a analysis.Run) error {
	run := a.Record
	pg := page{Run: run, Commit: a.Commit, Legend: legendParagraphs(), CapacityCaption: analysis.CapacityCaption}
	if !run.Ended.IsZero() && !run.Started.IsZero() {
		pg.Took = run.Ended.Sub(run.Started).Round(time.Second).String()
	}
	switch {
	case run.ClientHardware != nil:
		pg.Machines = append(pg.Machines, machineOf("servers' machine", run.Hardware), machineOf("clients' machine", *run.ClientHardware))
	case run.Hardware.CPUs > 0:
		pg.Machines = append(pg.Machines, machineOf("machine", run.Hardware))
	}
	if run.RoundTrip != nil {
		pg.RoundTrip = run.RoundTrip.String()
	}
	for i, c := range a.Cells {
		pg.Cells = append(pg.Cells, cellViewOf(run, c, i))
	}
	pg.Sweeps = sweepViewsOf(a)
	for _, tab := range a.TLS {
		tv := tlsTableView{Name: tab.Name, By: tab.By, Notes: tab.Notes}
		for _, c := range tab.Costs {
			tv.Rows = append(tv.Rows, tlsViewOf(c))
		}
		pg.TLS = append(pg.TLS, tv)
	}
	pg.TLSCaption = analysis.TLSCaption
	if err := pageTemplate.Execute(w, pg); err != nil {
		return fmt.Errorf("write report.html: %w", err)
	}
	return nil
}

// page is what the template shows.
type page struct {
	Run    record.Run
	Commit string
	// Machines are the run's machine, or its servers' and its clients'.
	Machines  []machine
	RoundTrip string
	Took      string
	Legend    []string
	Cells     []cellView
	Sweeps    []sweepView
	// CapacityCaption is CapacityCaption, for the template.
	CapacityCaption string
	// TLS are the TLS cost tables, TLSCaption how to read them.
	TLS        []tlsTableView
	TLSCaption string
}

type tlsTableView struct {
	Name, By string
	Rows     []tlsView
	Notes    []string
}

type machine struct {
	Role, Memory string
	record.Hardware
}

func machineOf(role string, h record.Hardware) machine {
	return machine{Role: role, Memory: fmt.Sprintf("%.1f GiB", float64(h.MemoryBytes)/(1<<30)), Hardware: h}
}

type cellView struct {
	Anchor, Name     string
	Tool, Rounds     string
	RPS, Capacity    template.HTML
	Latency, PerCore template.HTML
	Rows             []rowView
	CapacityRows     []rowView
	Notes            []string
	// Problems are the charts that could not be drawn, and why.
	Problems  []string
	NotRanked []notRanked
	Usage     []usageView
	// CPULimit is the server's CPU limit in percent of one core.
	CPULimit  float64
	Settings  []record.Setting
	Placement record.Placement
	// RanOn says where rounds ran on other cores than Placement's.
	RanOn []string
	// Floor heads the ranking of a floor-latency cell, which then shows
	// its latencies first; empty for the others.
	Floor string
}

type rowView struct {
	Rank                            int
	Group, Name, Tools, Class       string
	Stack, Library                  string
	RPS, Interval, CV, CPU, PerCore string
	P50, P99, P999, Memory, Flags   string
}

type notRanked struct{ Name, Why string }

type usageView struct {
	Server      string
	CPU, Memory template.HTML
	Missing     []string
}

// cellViewOf draws a cell's charts and lays out its tables. A chart that
// cannot be drawn does not stop the page, nor the run that saves it: the
// page says which and why instead.
func cellViewOf(run record.Run, ac analysis.Cell, i int) cellView {
	c := ac.Record
	cv := cellView{Anchor: fmt.Sprintf("cell-%d", i+1), Name: ac.Name, Tool: ac.Tool, Rounds: roundsText(ac),
		Settings: c.Settings, Placement: c.Placement, RanOn: ranOn(c), CPULimit: 100 * c.ServerCPUs}
	chart := func(svg template.HTML, err error) template.HTML {
		if err != nil {
			cv.Problems = append(cv.Problems, err.Error())
		}
		return svg
	}
	rows := ac.Load.Rows
	cv.Rows = rowViews(rows)
	if ac.Floor {
		cv.Floor = analysis.FloorCaption
	}
	cv.Notes = slices.Clone(ac.Notes)
	for _, s := range c.Servers {
		if !s.Ranked() {
			cv.NotRanked = append(cv.NotRanked, notRanked{s.Name, analysis.FailureText(s)})
		}
	}
	if len(rows) > 0 {
		what, unit := "OK requests per second", ac.Unit
		if ac.Streams {
			what = "OK messages per second"
		}
		cv.RPS = chart(barChart(rpsBars(rows), what+spread(rows), unit+" per server, "+ac.Name))
		cv.Latency = chart(latencyChart(latencyOf(ac, rows)))
		if bars := perCoreBars(rows); len(bars) > 0 {
			cv.PerCore = chart(barChart(bars, unit+" per server core ("+unit+" over the server's CPU)", unit+" per server core, "+ac.Name))
		}
	}
	if capacity := ac.Capacity.Rows; len(capacity) > 0 {
		for _, n := range ac.Capacity.Verdicts {
			cv.Notes = append(cv.Notes, "server capacity: "+n)
		}
		cv.Notes = append(cv.Notes, ac.CapacityLeftOut...)
		cv.CapacityRows = rowViews(capacity)
		cv.Capacity = chart(barChart(rpsBars(capacity), "OK requests per second, server capacity"+spread(capacity), "server capacity, "+ac.Name))
	}
	for _, s := range c.Servers {
		if len(s.Rounds) == 0 {
			continue
		}
		u := readUsage(run, c, s)
		uv := usageView{Server: s.Name, Missing: u.Missing}
		if len(u.CPU) > 0 {
			span := u.span()
			uv.CPU = chart(timeChart(u.CPU, span, u.Warmup, u.Window, cv.CPULimit, "server CPU, % of one core", "server CPU over time, "+s.Name))
			uv.Memory = chart(timeChart(u.Memory, span, u.Warmup, u.Window, 0, "server memory, MiB", "server memory over time, "+s.Name))
		}
		cv.Usage = append(cv.Usage, uv)
	}
	return cv
}

// ranOn says where the cell's rounds ran when their host read back other
// cores than the placement's (Kubernetes' CPU manager picks its own), with
// how many rounds ran there.
func ranOn(c record.Cell) []string {
	rounds := map[record.Placement]int{}
	var seen []record.Placement
	for _, s := range c.Servers {
		for _, r := range s.Rounds {
			p := record.Placement{ServerCPUSet: r.ServerCPUSet, ClientCPUSet: r.ClientCPUSet}
			if p == (record.Placement{}) || p.ServerCPUSet == c.Placement.ServerCPUSet && p.ClientCPUSet == c.Placement.ClientCPUSet {
				continue
			}
			if rounds[p] == 0 {
				seen = append(seen, p)
			}
			rounds[p]++
		}
	}
	var out []string
	for _, p := range seen {
		n := fmt.Sprintf("%d rounds", rounds[p])
		if rounds[p] == 1 {
			n = "1 round"
		}
		out = append(out, fmt.Sprintf("server on CPUs %s, client on CPUs %s in %s", p.ServerCPUSet, p.ClientCPUSet, n))
	}
	return out
}

// spread says what the bars and whiskers of req/s show: the rows'
// interval when they all have the same kind, else each row's own, as the
// table names it (under auto, rows have different rounds).
func spread(rows []analysis.Row) string {
	if slices.ContainsFunc(rows, func(r analysis.Row) bool { return r.RPS.N != rows[0].RPS.N }) {
		return " (median; whiskers: each row's interval, named in the table)"
	}
	if rows[0].RPS.N < 2 {
		return " (one round)"
	}
	return fmt.Sprintf(" (median; whiskers: %s over %d rounds)", rows[0].RPS.Interval, rows[0].RPS.N)
}

func rowViews(rows []analysis.Row) []rowView {
	var out []rowView
	for i, r := range rows {
		v := rowView{Rank: i + 1, Group: r.Group, Name: r.Name, Tools: strings.Join(r.Tools, "+"),
			RPS: rpsText(r), Interval: intervalText(r.RPS), CV: fmt.Sprintf("%.1f%%", 100*r.RPS.CV),
			P50: ms(r.P50), P99: ms(r.P99), P999: ms(r.P999), Flags: flags(r)}
		v.CPU, v.PerCore, v.Memory = serverFigures(r)
		v.Stack, v.Library = builtOn(r)
		switch classOf(r) {
		case classFailing:
			v.Class = "failing"
		case classClientBound:
			v.Class = "client-bound"
		}
		out = append(out, v)
	}
	return out
}

func rpsBars(rows []analysis.Row) []bar {
	var bars []bar
	for _, r := range rows {
		bars = append(bars, bar{name: nameOf(r), value: r.RPS.Median, lo: r.RPS.Lo, hi: r.RPS.Hi, whisker: r.RPS.N > 1,
			class: classOf(r), label: fmt.Sprintf("%.0f", r.RPS.Median)})
	}
	return bars
}

// perCoreBars ranks the rows by req/s per server core; a row without a
// reading of the server's CPU has no figure and no bar.
func perCoreBars(rows []analysis.Row) []bar {
	rows = slices.DeleteFunc(slices.Clone(rows), func(r analysis.Row) bool { return r.ServerStats == 0 })
	slices.SortStableFunc(rows, func(a, b analysis.Row) int { return cmp.Compare(b.PerServerCore, a.PerServerCore) })
	var bars []bar
	for _, r := range rows {
		bars = append(bars, bar{name: nameOf(r), value: r.PerServerCore, class: classOf(r),
			label: fmt.Sprintf("%.0f at %.0f%% CPU", r.PerServerCore, r.ServerCPU)})
	}
	return bars
}

// latencyOf is the latency chart's arguments: each row's p50, p90, p99,
// p99.9 (medians of the rounds) and the highest max of its rounds, in ms.
func latencyOf(c analysis.Cell, rows []analysis.Row) (names []string, values [][]float64, aria string) {
	worst := map[string]time.Duration{}
	for _, s := range c.Record.Servers {
		for _, r := range s.Rounds {
			if r.Load != nil {
				worst[s.Name] = max(worst[s.Name], r.Load.Latency.Max)
			}
		}
	}
	for _, r := range rows {
		names = append(names, nameOf(r))
		values = append(values, []float64{msOf(r.P50), msOf(r.P90), msOf(r.P99), msOf(r.P999), msOf(worst[r.Name])})
	}
	return names, values, "latency percentiles per server, " + c.Name
}

// legendParagraphs is summary.txt's legend as paragraphs.
func legendParagraphs() []string {
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(legend), "\nFlags:") {
		if len(out) > 0 {
			p = "Flags:" + p
		}
		out = append(out, strings.Join(strings.Fields(p), " "))
	}
	return out
}
