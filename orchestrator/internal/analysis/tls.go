package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// TLSTwins are a plaintext cell and the TLS cell that differs from it by
// GRPC_TLS alone.
type TLSTwins struct {
	Off, On Cell
}

// tlsTwins pairs each plaintext cell of a run with its TLS twin, in the
// order of the cells.
func (a Run) tlsTwins() []TLSTwins {
	var out []TLSTwins
	for _, off := range a.Cells {
		if off.Plan.TLS {
			continue
		}
		for _, on := range a.Cells {
			twin := on.Plan
			twin.TLS = false
			if on.Plan.TLS && twin == off.Plan {
				out = append(out, TLSTwins{Off: off, On: on})
			}
		}
	}
	return out
}

// TLSCost is what TLS costs one server, ranked in both twins, by one
// kind of measurement (the load tool's or the capacity tool's).
type TLSCost struct {
	Name string `json:"name"`
	// RPS is OK calls per second; CPUPerCall the server's CPU time per OK
	// call, in seconds (the inverse of req/s per core).
	RPS        TLSFigure `json:"rps"`
	CPUPerCall TLSFigure `json:"cpu_per_call"`
	// ClientBound says the load client set the pace in a round of either
	// cell: its req/s are the client's.
	ClientBound bool `json:"client_bound,omitempty"`
}

// TLSFigure is a figure in plaintext and over TLS, medians of the rounds,
// and the test of the two as the rankings test a pair of servers: paired
// by round where both cells ran in the same rounds (Pair.Ratio is TLS over
// plaintext, Lo–Hi its interval), else Mann–Whitney, else too few rounds.
type TLSFigure struct {
	Off  float64    `json:"off"`
	On   float64    `json:"on"`
	Pair stats.Pair `json:"test"`
}

// Ratio is TLS over plaintext: the pair's when it was tested, else the
// medians'.
func (f TLSFigure) Ratio() float64 {
	if f.Pair.Ratio > 0 {
		return f.Pair.Ratio
	}
	if f.Off == 0 {
		return math.NaN()
	}
	return f.On / f.Off
}

// measurement picks one kind of measurement of a round: nil when the round
// has none.
type measurement func(record.Round) *record.Measurement

func loadMeasurement(r record.Round) *record.Measurement { return &r.Measurement }

func capacityMeasurement(r record.Round) *record.Measurement { return r.Capacity }

// tlsCosts compares the servers ranked in both twins by the load tool's
// measurements, or with capacity by the capacity tool's, in the plaintext
// cell's ranking order; left lists the servers of either cell not
// compared.
func (a Run) tlsCosts(t TLSTwins, capacity bool) (costs []TLSCost, left []string) {
	rank := func(c Cell) []Row { return c.Load.Rows }
	pick := measurement(loadMeasurement)
	if capacity {
		rank, pick = func(c Cell) []Row { return c.Capacity.Rows }, capacityMeasurement
	}
	on := map[string]Row{}
	for _, r := range rank(t.On) {
		on[r.Name] = r
	}
	compared := map[string]bool{}
	for _, off := range rank(t.Off) {
		tls, ok := on[off.Name]
		if !ok {
			continue
		}
		compared[off.Name] = true
		offServer, _ := t.Off.Record.Server(off.Name)
		onServer, _ := t.On.Record.Server(off.Name)
		offRPS, offCPU := tlsSamples(offServer, pick)
		onRPS, onCPU := tlsSamples(onServer, pick)
		costs = append(costs, TLSCost{Name: off.Name, ClientBound: off.ClientBound || tls.ClientBound,
			RPS: a.tlsFigure(offRPS, onRPS), CPUPerCall: a.tlsFigure(offCPU, onCPU)})
	}
	for _, c := range []Cell{t.Off, t.On} {
		for _, s := range c.Record.Servers {
			if !compared[s.Name] && !slices.Contains(left, s.Name) {
				left = append(left, s.Name)
			}
		}
	}
	return costs, left
}

// tlsSamples are a server's req/s and CPU per call in each round that has
// the measurement (CPU only where the server had a stats reading).
func tlsSamples(s record.Server, pick measurement) (rps, cpu stats.Sample) {
	for _, r := range s.Rounds {
		m := pick(r)
		if m == nil || m.Load == nil {
			continue
		}
		rps.Rounds, rps.Values = append(rps.Rounds, r.Round), append(rps.Values, m.Load.RPS)
		if m.Server.Samples > 0 && m.Server.CPUAvgPercent > 0 && m.Load.RPS > 0 {
			cpu.Rounds, cpu.Values = append(cpu.Rounds, r.Round), append(cpu.Values, m.Server.CPUAvgPercent/100/m.Load.RPS)
		}
	}
	return rps, cpu
}

// tlsFigure tests on against off by the run's design.
func (a Run) tlsFigure(off, on stats.Sample) TLSFigure {
	off.Name, on.Name = "off", "on"
	f := TLSFigure{Off: stats.Median(off.Values), On: stats.Median(on.Values)}
	if an := stats.Analyse([]stats.Sample{off, on}, a.Design); len(an.Pairs) == 1 {
		f.Pair = an.Pairs[0]
	}
	return f
}

// TLSTable is one table of TLS costs: a pair of twins by one kind of
// measurement, and what the reader must know beside it (escaped).
type TLSTable struct {
	Name, By string
	Costs    []TLSCost
	Notes    []string
}

// tlsTables are the run's TLS cost tables: for each plaintext cell with a
// TLS twin, by the load tool and, where the run has it, the capacity tool.
func (a Run) tlsTables() []TLSTable {
	var out []TLSTable
	for _, t := range a.tlsTwins() {
		for _, capacity := range []bool{false, true} {
			by := "the load tool (" + t.Off.Tool + ")"
			if capacity {
				if t.Off.Capacity.Rows == nil {
					continue
				}
				by = "the capacity tool"
			}
			costs, left := a.tlsCosts(t, capacity)
			tab := TLSTable{Name: t.Off.Name, By: by, Costs: costs}
			for _, c := range costs {
				if c.ClientBound {
					tab.Notes = append(tab.Notes, c.Name+": client-bound in a round of either cell: its req/s and their ratio are the load client's, not the server's; its CPU per call is the server's")
				}
			}
			if len(left) > 0 {
				tab.Notes = append(tab.Notes, "not compared (not ranked in both cells): "+strings.Join(left, ", "))
			}
			for i, n := range tab.Notes {
				tab.Notes[i] = escape.Text(n)
			}
			out = append(out, tab)
		}
	}
	return out
}

// TLSCaption says how the TLS cost tables were computed.
var TLSCaption = fmt.Sprintf("µs/call is the server's CPU time per OK call (1e6 over req/s per core); on/off is the geometric mean of the per-round ratios where the rounds pair, else the ratio of the medians; tests as the rankings': %s, or %s when the cells share fewer than %d rounds, at %.0f%%",
	stats.PairedT, stats.MannWhitney, stats.MinRounds, 100*stats.Alpha)
