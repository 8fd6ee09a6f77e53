package analysis_test

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
	return server(name, cpu, rps, rps*0.9, rps*1.1, rps*1.02)
}

// tlsRun is a plaintext cell and its TLS twin: "a" loses a fifth of its
// req/s over TLS at the same CPU, in every round alike (the rounds' noise
// shared), and "b" fails in the TLS cell.
func tlsRun() record.Run {
	cell := cellOf(tlsServer("a", 10000, 100), tlsServer("b", 1000, 50))
	failed := tlsServer("b", 1000, 50)
	failed.Failure = &record.Failure{Phase: "conformance", Reason: "the server does not answer TLS"}
	tlsCell := cellOf(tlsServer("a", 8000, 100), failed)
	tlsCell.TLS = true
	return record.Run{ID: "tls", Cells: []record.Cell{cell, tlsCell}}
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
