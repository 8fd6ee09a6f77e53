package report

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// TestSummaryShowsTheNoiseByLevel: summary.txt says each level of the
// noise, Kalibera & Jones' split of a server's time, and how long each
// server warmed up under the steady-state rule.
func TestSummaryShowsTheNoiseByLevel(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cell := record.Cell{ClientCPUs: 1}
	for i, name := range []string{"fast", "jvm", "slow"} {
		s := record.Server{Name: name}
		for r := 1; r <= 4; r++ {
			end := record.WarmupSteady
			warm := 7 * time.Second
			if name == "jvm" {
				warm = 30 * time.Second
				if r == 1 {
					end = record.WarmupCapped
				}
			}
			rps := float64(1000*(i+1)) * (1 + 0.05*math.Sin(float64(r*(i+2))))
			s.Rounds = append(s.Rounds, record.Round{Round: r, Phases: []record.Phase{{Name: "all", Seconds: 12}},
				Measurement: record.Measurement{
					Load: &record.Result{Tool: "ghz", Start: at, End: at.Add(4 * time.Second), RPS: rps, OK: 100, Requests: 100,
						Statuses: map[string]uint64{"OK": 100}, Warmup: warm, WarmupEnd: end},
					Window: &record.Window{Steady: true, Spread: 0.01, Intervals: 16},
				}})
		}
		cell.Servers = append(cell.Servers, s)
	}
	var b strings.Builder
	if err := WriteSummary(&b, analysis.Of(record.Run{Cells: []record.Cell{cell}})); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"noise of the load ranking by level: 1.0% within a round (a 4.0 s window's mean, from its intervals; 12 windows)",
		"a server's time (Kalibera & Jones, load ranking): each round costs 8.0 s beyond its window; 4 rounds of 4.0 s spread a server's mean by",
		"warm-ups until steady (medians of the rounds): slow 7.0 s, jvm 30.0 s (1 of 4 rounds at GRPC_BENCHMARK_WARMUP_MAX), fast 7.0 s",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary.txt lacks %q:\n%s", want, b.String())
		}
	}
}
