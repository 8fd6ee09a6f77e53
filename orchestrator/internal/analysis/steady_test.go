package analysis

import (
	"slices"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// server is a ranked server of rounds at these req/s; unsteady names the
// rounds (from 1) whose window was not steady.
func server(name string, rps []float64, unsteady ...int) record.Server {
	s := record.Server{Name: name}
	for i, v := range rps {
		r := record.Round{Round: i + 1}
		r.Load = &record.Result{Tool: "ghz", RPS: v, OK: 100, Requests: 100, Statuses: map[string]uint64{"OK": 100}, Warmup: 7e9, WarmupEnd: record.WarmupSteady}
		r.Window = &record.Window{Steady: !slices.Contains(unsteady, i+1), Intervals: 16}
		s.Rounds = append(s.Rounds, r)
	}
	return s
}

// TestUnsteadyRounds: a round whose window was not steady is left out of
// its row, and said so; a row with no steady round keeps them all, is
// marked, and is tested against no other row.
func TestUnsteadyRounds(t *testing.T) {
	cell := record.Cell{ClientCPUs: 1, Servers: []record.Server{
		server("steady", []float64{1000, 1010, 990, 1005}),
		server("one_off", []float64{3000, 1500, 3010, 2990}, 2),
		server("never", []float64{500, 600, 700, 800}, 1, 2, 3, 4),
	}}
	rows := LoadRanking(cell)
	byName := map[string]Row{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	if r := byName["one_off"]; r.RPS.N != 3 || r.UnsteadyRounds != 1 || r.Unsteady || !slices.Equal(r.Rounds, []int{1, 3, 4}) {
		t.Errorf("one unsteady round: %+v", r)
	}
	if r := byName["never"]; r.RPS.N != 4 || !r.Unsteady || r.UnsteadyRounds != 0 {
		t.Errorf("no steady round: %+v", r)
	}
	a := Judge(stats.Fixed(4, 0.05), rows)
	if slices.ContainsFunc(a.Pairs, func(p stats.Pair) bool { return p.A == "never" || p.B == "never" }) || len(a.Pairs) != 1 {
		t.Errorf("pairs %+v, want only steady against one_off", a.Pairs)
	}
	if byName["never"].Group != "" {
		t.Errorf("the unsteady row has letters %q", byName["never"].Group)
	}
	run := record.Run{Cells: []record.Cell{cell}}
	notes := strings.Join(Of(run).Cells[0].Notes, "\n")
	for _, want := range []string{"one_off: 1 of 4 rounds left out: their windows were not steady", "never: unsteady: no round's window was steady"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}
