package steady

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
)

// recorded are real rounds' series after a 60 s warm-up
// (testdata/recorded-60s.json says which run): the calls each 250 ms
// interval completed, from the load's start.
type recorded struct {
	Source string `json:"source"`
	Rounds []struct {
		Server string   `json:"server"`
		Round  int      `json:"round"`
		OK     []uint64 `json:"ok"`
	} `json:"rounds"`
}

// TestRuleOnRecordedSeries replays the rule on the series of real rounds
// warmed up for 60 s: where it would have ended each warm-up, and what the
// 4 s window after that end reads against the round's plateau (its last
// 20 s; ghz keeps only its first calls' details, so some series end
// 40–50 s in). With the rule's own least (6.25 s) the JVM servers' staged
// JITs stop it in a flat stretch of their climb: scala_zio read 0.49 and
// 0.44 of its plateau, scala_akka 0.36 in a round. With the least their
// server.json declares (warmup_min), no JVM round reads below 0.8 and the
// median is at least 0.95; the native servers, which declare none, end
// at 6.25 s and read their plateau.
func TestRuleOnRecordedSeries(t *testing.T) {
	js, err := os.ReadFile(filepath.Join("testdata", "recorded-60s.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec recorded
	if err := json.Unmarshal(js, &rec); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	const window, plateau, capN = 16, 80, 240
	var own, declared []float64
	for _, r := range rec.Rounds {
		n := len(r.OK)
		level := mean(r.OK[n-plateau:])
		read := func(rule Rule) (float64, time.Duration) {
			end, _ := warmupEnd(rule, r.OK, min(capN, n-window))
			return mean(r.OK[end:end+window]) / level, time.Duration(end) * interval
		}
		least := cat.Manifest(r.Server).LeastWarmup()
		ownRead, ownEnd := read(Default)
		rule := Default
		rule.Min = max(rule.Min, least)
		declaredRead, declaredEnd := read(rule)
		t.Logf("%-16s round %d: the rule's own least ends at %5.2f s, reads %.2f of the plateau; with warmup_min %4s at %5.2f s, %.2f",
			r.Server, r.Round, ownEnd.Seconds(), ownRead, least, declaredEnd.Seconds(), declaredRead)
		if least == 0 {
			if ownEnd != Default.Min || ownRead < 0.85 {
				t.Errorf("%s round %d, no warmup_min: ends at %s reading %.2f of its plateau, want %s and at least 0.85", r.Server, r.Round, ownEnd, ownRead, Default.Min)
			}
			continue
		}
		own, declared = append(own, ownRead), append(declared, declaredRead)
	}
	if len(declared) < 10 {
		t.Fatalf("%d recorded rounds of servers that declare a warmup_min, want the JVM servers' 18", len(declared))
	}
	if slices.Min(own) > 0.5 {
		t.Errorf("with the rule's own least the worst JVM round reads %.2f of its plateau: the recorded staged climbs no longer stop it early, so warmup_min may no longer be needed", slices.Min(own))
	}
	if m, worst := quantile(declared, 0.5), slices.Min(declared); m < 0.95 || worst < 0.8 {
		t.Errorf("with warmup_min the JVM rounds read a median %.2f of their plateau, the worst %.2f; want at least 0.95 and 0.8", m, worst)
	}
}

func mean(v []uint64) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}
