package report_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// tlsServer is a server of four rounds whose req/s in round i is
// rps·wobble[i] and whose CPU is cpu percent in every round.
func tlsServer(name string, rps, cpu float64) record.Server {
	wobble := []float64{1, 0.9, 1.1, 1.02}
	r := row{name: name, mean: 1, p90: 2, p95: 3, p99: 4, cpu: cpu, mem: 10}
	s := record.Server{Name: name}
	for i, w := range wobble {
		s.Rounds = append(s.Rounds, record.Round{Round: i + 1, Measurement: r.measurement(rps * w)})
	}
	return s
}

// tlsRun is a plaintext cell and its TLS twin: "a" loses a fifth of its
// req/s over TLS at the same CPU, in every round alike (the rounds' noise
// shared), and "b" fails in the TLS cell.
func tlsRun() record.Run {
	cell := record.Cell{Scenario: "complex_proto", ServerCPUs: 1, ClientCPUs: 1, Connections: 50, Concurrency: 1000}
	tlsCell := cell
	tlsCell.TLS = true
	failed := tlsServer("b", 1000, 50)
	failed.Failure = &record.Failure{Phase: "conformance", Reason: "the server does not answer TLS"}
	cell.Servers = []record.Server{tlsServer("a", 10000, 100), tlsServer("b", 1000, 50)}
	tlsCell.Servers = []record.Server{tlsServer("a", 8000, 100), failed}
	return record.Run{Commit: seedCommit, Cells: []record.Cell{cell, tlsCell}}
}

// TestTLSCostsArePairedByRound: each server ranked in both twins is
// compared with the rankings' paired test, TLS over plaintext, for req/s
// and CPU per call; a server ranked in one cell only is listed as left.
func TestTLSCostsArePairedByRound(t *testing.T) {
	tables := analysis.Of(tlsRun()).TLS
	if len(tables) != 1 || !strings.Contains(tables[0].By, "load tool") {
		t.Fatalf("TLS tables %+v, want one, by the load tool: the plaintext cell and its TLS twin", tables)
	}
	costs := tables[0].Costs
	if len(costs) != 1 || costs[0].Name != "a" || !slices.Contains(tables[0].Notes, "not compared (not ranked in both cells): b") {
		t.Fatalf("costs %+v, notes %v: want a compared, b left", costs, tables[0].Notes)
	}
	c := costs[0]
	if p := c.RPS.Pair; p.Test != stats.PairedT || p.N != 4 || math.Abs(p.Ratio-0.8) > 1e-9 || p.Verdict != stats.Separated {
		t.Errorf("req/s test %+v: want paired over 4 rounds, ratio 0.8, separated", p)
	}
	// The same CPU for fewer calls: 1/0.8 of the CPU per call.
	if r := c.CPUPerCall.Ratio(); math.Abs(r-1.25) > 1e-9 {
		t.Errorf("CPU per call ratio %v, want 1.25", r)
	}
	if math.Abs(c.CPUPerCall.Off-1e-4) > 1e-6 {
		t.Errorf("CPU per call off %v s, want about 100 µs (1 core over 10000 req/s)", c.CPUPerCall.Off)
	}
}

// TestBenchShowsTheTLSCost: bench.txt ends with the TLS cost section,
// naming the server left out; a run without a TLS twin has none.
func TestBenchShowsTheTLSCost(t *testing.T) {
	bench := writeBench(t, tlsRun())
	i := strings.Index(bench, "== TLS cost: ")
	if i < 0 || i < strings.LastIndex(bench, "Benchmark Execution Parameters:") {
		t.Fatalf("no TLS cost section after the cells:\n%s", bench)
	}
	section := bench[i:]
	for _, want := range []string{"| a ", "|  0.800 |", "|  1.250 |", stats.PairedT, "not compared (not ranked in both cells): b"} {
		if !strings.Contains(section, want) {
			t.Errorf("TLS section lacks %q:\n%s", want, section)
		}
	}
	if strings.Contains(writeBench(t, seedRun()), "TLS cost") {
		t.Error("a run without TLS cells has a TLS cost section")
	}
}

// TestReportShowsTheTLSCost: report.html has the TLS cost table, with
// req/s per core beside CPU per call.
func TestReportShowsTheTLSCost(t *testing.T) {
	var b strings.Builder
	if err := writeHTML(&b, tlsRun(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	i := strings.Index(page, `<section class="cell" id="tls">`)
	if i < 0 {
		t.Fatalf("no TLS section in report.html")
	}
	section := page[i:]
	for _, want := range []string{"What TLS costs", `<td class="name">a</td><td>10100</td><td>8080</td><td>0.800</td>`, "req/s per core off", "not compared (not ranked in both cells): b"} {
		if !strings.Contains(section, want) {
			t.Errorf("TLS section lacks %q", want)
		}
	}
}
