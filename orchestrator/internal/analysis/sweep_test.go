package analysis_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/histogram"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sweep"
)

// sweepShares are the rate cells of sweepRun.
var sweepShares = []float64{0.25, 0.5, 0.9, 1.2}

// sweepRun is the recorded run with a sweep of three of its servers at
// 25%, 50%, 90% and 120% of their capacity and the objective p99<10ms.
// Their latency follows a queue's, base/(1−ρ), with a base of their own
// (go_grpc 0.2 ms, node_grpcjs_st 0.5 ms, python_grpc 1.2 ms), and 120% is
// more than any sustains, its latency climbing over the window: go_grpc
// meets the objective up to 90%, node_grpcjs_st to 50%, python_grpc to
// 25%. go_grpc and node_grpcjs_st keep histograms and series, as h2 does;
// python_grpc's rounds have neither, as an older record's.
func sweepRun(t *testing.T) record.Run {
	t.Helper()
	run, err := record.Load(recordedRun)
	if err != nil {
		t.Fatal(err)
	}
	slo := record.Setting{Name: "GRPC_LATENCY_SLO", Value: "p99<10ms", Given: true}
	run.Settings = append(run.Settings, slo, record.Setting{Name: "GRPC_LOAD_RATES", Value: "25%,50%,90%,120%", Given: true})
	base := map[string]time.Duration{"go_grpc": 200 * time.Microsecond, "node_grpcjs_st": 500 * time.Microsecond, "python_grpc": 1200 * time.Microsecond}
	sat := run.Cells[0]
	for _, share := range sweepShares {
		rate := config.Rate{Share: share}
		c := plan.Of(sat).WithRate(rate).Record()
		c.Placement = sat.Placement
		c.Settings = append(slices.Clone(sat.Settings), slo, record.Setting{Name: "GRPC_LOAD_RATES", Value: rate.String(), Given: true})
		for _, s := range sat.Servers {
			b, ok := base[s.Name]
			if !ok {
				continue
			}
			capacity := s.Rounds[0].Load.RPS
			if c := s.Rounds[0].Capacity; c != nil {
				capacity = c.Load.RPS
			}
			srv := record.Server{Name: s.Name, Image: s.Image, Stack: s.Stack, Library: s.Library, Version: s.Version, GRPC: s.GRPC}
			for r := 1; r <= 3; r++ {
				srv.Rounds = append(srv.Rounds, sweepRound(t, r, share, capacity, b, s.Name != "python_grpc"))
			}
			c.Servers = append(c.Servers, srv)
		}
		run.Cells = append(run.Cells, c)
	}
	return run
}

// sweepRound is round r of a server of capacity and latency base at a
// share of it: a 5 s window after a 5 s warm-up, its latency p50 times
// 1 + 0.64·log2(0.5/(1−q)) at the quantile q (p99 4.6 times p50), with
// its histogram and series when kept.
func sweepRound(t *testing.T, r int, share, capacity float64, base time.Duration, kept bool) record.Round {
	t.Helper()
	target := share * capacity
	achieved, p50 := target*(1-0.002*float64(r-2)), time.Duration(float64(base)/(1-share))
	if share >= 1 {
		achieved, p50 = 0.97*capacity, 2*time.Second
	}
	p50 = time.Duration(float64(p50) * (1 + 0.02*float64(r-2)))
	n := uint64(achieved * 5)
	tail := func(q float64) time.Duration { return time.Duration(float64(p50) * (1 + 0.64*math.Log2(0.5/(1-q)))) }
	start := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC).Add(time.Duration(r) * time.Minute)
	l := &record.Result{Tool: "h2", Start: start.Add(5 * time.Second), End: start.Add(10 * time.Second), Requests: n, OK: n,
		Statuses: map[string]uint64{"OK": n}, RPS: achieved,
		Latency: record.Latency{Count: n, Mean: p50 * 12 / 10, P50: p50, P90: tail(0.9), P95: tail(0.95), P99: tail(0.99), P999: tail(0.999), Max: p50 * 20,
			Percentiles: percentiles(tail)}}
	if kept {
		l.Planned = uint64(math.Round(target * 5))
		pool := histogram.New()
		const steps = 2000
		for i := range steps {
			pool.Record(tail((float64(i)+0.5)/steps), n/steps)
		}
		enc, err := pool.Encode()
		if err != nil {
			t.Fatal(err)
		}
		l.Histogram = enc
		s := &record.Series{Start: start, Interval: load.SeriesInterval}
		for i := range 40 {
			mean := p50 * time.Duration(12+i%3) / 10 // settled: a wiggle
			if share >= 1 {
				mean = p50 * time.Duration(4+i) / 10 // a queue that grows
			}
			s.OK, s.Failed = append(s.OK, uint64(achieved/4)), append(s.Failed, 0)
			s.Mean, s.Max = append(s.Mean, mean), append(s.Max, mean*8)
			s.InFlight = append(s.InFlight, int(achieved*mean.Seconds()))
		}
		l.Series = s
	}
	return record.Round{Round: r, TargetRPS: target, Measurement: record.Measurement{Load: l,
		Server: record.Usage{Samples: 5, CPUAvgPercent: 100 * min(share, 1), MemoryAvgBytes: 30 << 20},
		Client: record.Usage{Samples: 5, CPUAvgPercent: 40 * min(share, 1)},
	}}
}

// TestSLORankingTakesTheHighestRateThatMetIt: each server ranks at its
// highest share that met p99<10ms, bracketed by the lowest that did not;
// an unsustained rate is never met, and the rows have groups.
func TestSLORankingTakesTheHighestRateThatMetIt(t *testing.T) {
	run := sweepRun(t)
	sweeps := analysis.Of(run).Sweeps
	if len(sweeps) != 1 || sweeps[0].Cell != 0 || !sweeps[0].SLO.Set() {
		t.Fatalf("sweeps %+v, want one of cell 0 with its objective", sweeps)
	}
	sw := sweeps[0]
	if len(sw.Points) != 3*len(sweepShares) {
		t.Fatalf("%d points, want %d", len(sw.Points), 3*len(sweepShares))
	}
	for _, p := range sw.Points {
		if (p.Unsustained != "") != (p.Rate == "120%") {
			t.Errorf("%s at %s: unsustained %q", p.Server, p.Rate, p.Unsustained)
		}
	}
	rows, none := sw.Objective.Rows, sw.Objective.None
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s@%s–%s", r.Name, r.Met.Rate, r.Failed.Rate))
		if r.Group == "" || r.Met.Row.RPS.N != 3 || r.Met.Verdict.Upper > 10*time.Millisecond {
			t.Errorf("%s: group %q over %d rounds, %s", r.Name, r.Group, r.Met.Row.RPS.N, r.Met.Verdict.Upper)
		}
	}
	if want := "go_grpc@90%–120%,node_grpcjs_st@50%–90%,python_grpc@25%–50%"; strings.Join(got, ",") != want || len(none) != 0 {
		t.Errorf("ranking %s (none: %v), want %s", strings.Join(got, ","), none, want)
	}
}

// TestAFailedRateIsAPoint (Why 8): a server killed at a rate is a point
// of the sweep, marked failed with its reason; it was left out before.
func TestAFailedRateIsAPoint(t *testing.T) {
	run := sweepRun(t)
	last := &run.Cells[len(run.Cells)-1] // 120%
	srv := &last.Servers[slices.IndexFunc(last.Servers, func(s record.Server) bool { return s.Name == "node_grpcjs_st" })]
	srv.Rounds[1] = record.Round{Round: 2, TargetRPS: srv.Rounds[1].TargetRPS, Failure: &record.Failure{Phase: "load", Reason: "server exited with code 137 (killed: out of memory at the 512m limit)"}}
	srv.Rounds = srv.Rounds[:2]
	a := analysis.Of(run)
	i := slices.IndexFunc(a.Sweeps[0].Points, func(p analysis.Point) bool { return p.Server == "node_grpcjs_st" && p.Rate == "120%" })
	if i < 0 {
		t.Fatal("the rate node_grpcjs_st was killed at is not a point")
	}
	if p := a.Sweeps[0].Points[i]; !strings.Contains(p.Failed, "round 2, load failed: server exited with code 137") || p.Row.RPS.N != 1 || p.Meets() {
		t.Errorf("the point: failed %q, %d rounds measured, meets %v; want the failure, round 1, not met", p.Failed, p.Row.RPS.N, p.Meets())
	}
}

// TestARateCellGoesByLatency (Why 8): a rate cell's rows go by the
// objective's percentile, lowest first, not by the rate achieved (each
// server's own target).
func TestARateCellGoesByLatency(t *testing.T) {
	run := sweepRun(t)
	c := &run.Cells[1] // 25%
	for si := range c.Servers {
		if c.Servers[si].Name == "go_grpc" {
			for ri := range c.Servers[si].Rounds {
				l := c.Servers[si].Rounds[ri].Load
				l.Histogram, l.Latency.P99, l.Latency.Percentiles = "", 50*time.Millisecond, nil
			}
		}
	}
	var got []string
	for _, r := range analysis.Of(run).Cells[1].Load.Rows {
		got = append(got, r.Name)
	}
	if want := "node_grpcjs_st,python_grpc,go_grpc"; strings.Join(got, ",") != want {
		t.Errorf("the 25%% cell's rows: %s, want %s (by p99; go_grpc achieved the most)", strings.Join(got, ","), want)
	}
}

// TestPercentilesTheCallsSupport (Why 7): no percentile is shown that 10
// calls do not lie above: 3900 calls a round (python_grpc's medians of the
// rounds at 25%) show up to p99.5; 149,000 pooled calls (go_grpc's) up to
// p99.99, not p99.999.
func TestPercentilesTheCallsSupport(t *testing.T) {
	for _, p := range analysis.Of(sweepRun(t)).Sweeps[0].Points {
		if p.Rate != "25%" || p.Server == "node_grpcjs_st" {
			continue
		}
		want := map[string]float64{"python_grpc": 0.995, "go_grpc": 0.9999}[p.Server]
		list := p.Row.Percentiles
		if len(list) == 0 || list[len(list)-1].Q != want || p.Row.Pooled != (p.Server == "go_grpc") {
			t.Errorf("%s at 25%%: percentiles up to %v (pooled %v), want up to %v", p.Server, list, p.Row.Pooled, want)
		}
		if p.Server == "python_grpc" && p.Row.P999 != 0 {
			t.Errorf("python_grpc at 25%%: p99.9 %s from 3900 calls a round, want none", p.Row.P999)
		}
	}
}

// percentiles is the latency at each of the quantiles a histogram keeps.
func percentiles(at func(q float64) time.Duration) []record.Percentile {
	var out []record.Percentile
	for _, p := range load.PercentileList(at) {
		out = append(out, record.Percentile{Q: p.Q, Latency: p.Latency})
	}
	return out
}

// TestStreamingSweepSaysMessages: a sweep of a streaming scenario counts
// messages, and every note of its cells and of its objective says msg/s,
// none req/s.
func TestStreamingSweepSaysMessages(t *testing.T) {
	run := sweepRun(t)
	for i := range run.Cells {
		run.Cells[i].Kind = string(scenario.BidiStreaming)
	}
	a := analysis.Of(run)
	var notes []string
	for _, c := range a.Cells {
		notes = append(notes, c.Notes...)
	}
	for _, sw := range a.Sweeps {
		notes = append(notes, sw.Objective.Notes...)
	}
	text := strings.Join(notes, "\n")
	if strings.Contains(text, "req/s") || !strings.Contains(text, "msg/s") {
		t.Errorf("a streaming sweep's notes:\n%s\nwant msg/s throughout, no req/s", text)
	}
}

// TestFiguresOfTwoRunsFallInsideEachOthersBrackets: two sweeps whose 25%
// and 50% of capacity fell on different rates (python_grpc on 2026-12-03:
// capacities 3084 and 3652 req/s, p99<5ms met at 25% and failed at 50% in
// both). The rates met can never lie inside each other's brackets, one of
// them being below the other's; the brackets' middles do.
func TestFiguresOfTwoRunsFallInsideEachOthersBrackets(t *testing.T) {
	bracket := func(met, failed float64) analysis.Sustained {
		return analysis.Sustained{Met: analysis.Point{Target: met}, Failed: &analysis.Point{Target: failed}}
	}
	one, two := bracket(771, 1543), bracket(913, 1827)
	inside := func(v float64, s analysis.Sustained) bool { return v >= s.Lo() && v <= s.Hi() }
	if inside(one.Lo(), two) && inside(two.Lo(), one) {
		t.Fatalf("the rates met, %.0f and %.0f, lie inside each other's brackets", one.Lo(), two.Lo())
	}
	if !inside(one.Figure(), two) || !inside(two.Figure(), one) {
		t.Errorf("figures %.0f (%.0f–%.0f) and %.0f (%.0f–%.0f): not inside each other's brackets",
			one.Figure(), one.Lo(), one.Hi(), two.Figure(), two.Lo(), two.Hi())
	}
	if got, want := one.Figure(), math.Sqrt(771*1543); math.Abs(got-want) > 1e-9 {
		t.Errorf("figure %v, want the geometric middle %v", got, want)
	}
	open := analysis.Sustained{Met: analysis.Point{Target: 2000}}
	if open.Bounded() || open.Figure() != 2000 {
		t.Errorf("no rate failed: bounded %v, figure %v; want the rate met, unbounded", open.Bounded(), open.Figure())
	}
}

// TestCapacityClosesABracketNoRateFailed: python_grpc swept only at 25%,
// which it meets. Its bracket once ran to +Inf and so overlapped every
// other server's: it shared go_grpc's letter though go_grpc met a rate
// eleven times its capacity. No rate above the capacity its saturation
// cell measured can be sustained, and there its bracket closes.
func TestCapacityClosesABracketNoRateFailed(t *testing.T) {
	run := sweepRun(t)
	for i := range run.Cells[1:] {
		c := &run.Cells[1+i]
		if c.Rate.Share > 0.25 {
			c.Servers = slices.DeleteFunc(c.Servers, func(s record.Server) bool { return s.Name == "python_grpc" })
		}
	}
	sat, _ := run.Cells[0].Server("python_grpc")
	capacity := 0.0
	for _, r := range sat.Rounds {
		if c, ok := sweep.RoundCapacity(r); ok {
			capacity = max(capacity, c)
		}
	}
	o := analysis.Of(run).Sweeps[0].Objective
	groups := map[string]string{}
	var python analysis.Sustained
	for _, r := range o.Rows {
		groups[r.Name] = r.Group
		if r.Name == "python_grpc" {
			python = r
		}
	}
	if python.Failed != nil || python.Hi() != capacity || !python.Bounded() {
		t.Fatalf("python_grpc's bracket %.0f–%.0f (failed %v), want it to close at its capacity %.0f", python.Lo(), python.Hi(), python.Failed, capacity)
	}
	if want := math.Sqrt(python.Lo() * capacity); python.Figure() != want {
		t.Errorf("figure %.0f, want %.0f", python.Figure(), want)
	}
	if groups["python_grpc"] == groups["go_grpc"] || groups["python_grpc"] == "" {
		t.Errorf("groups %v: python_grpc shares go_grpc's letter", groups)
	}
}
