package report_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

// catalogRun is a run the size of the catalog's default one, 34 servers
// of 4 rounds each, made of the recorded go_grpc's rounds and their stats
// files, in a folder of its own.
func catalogRun(b *testing.B) (record.Folder, record.Run) {
	b.Helper()
	run, err := record.Load(filepath.Join("testdata", "run"))
	if err != nil {
		b.Fatal(err)
	}
	f := record.Folder{Dir: b.TempDir()}
	stats, err := os.ReadFile(filepath.Join("testdata", "run", "go_grpc", "round-1", "load-server-stats.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	c := &run.Cells[0]
	g := c.Servers[slices.IndexFunc(c.Servers, func(s record.Server) bool { return s.Name == "go_grpc" })]
	c.Servers = nil
	for i := range 34 {
		s := g
		s.Name, s.Rounds = fmt.Sprintf("server_%02d", i), nil
		for r := range 4 {
			round := g.Rounds[r%len(g.Rounds)]
			round.Round = r + 1
			load := *round.Load
			load.RPS *= 0.5 + float64(i)/34
			round.Load = &load
			s.Rounds = append(s.Rounds, round)
			folder, err := f.Sub(s.Name, fmt.Sprintf("round-%d", r+1))
			if err != nil {
				b.Fatal(err)
			}
			if err := folder.Write("load-server-stats.jsonl", stats); err != nil {
				b.Fatal(err)
			}
		}
		c.Servers = append(c.Servers, s)
	}
	run.Dir = f.Dir
	return f, run
}

// BenchmarkSaveAfterARound is what a benchmark writes after each round of
// a catalog run: results.json.
func BenchmarkSaveAfterARound(b *testing.B) {
	f, run := catalogRun(b)
	for b.Loop() {
		if err := record.Save(f, run); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublish is what it writes after the builds, at each look of
// GRPC_BENCHMARK_ROUNDS=auto and at the end: results.json and every file
// made from it, as it wrote after every round before.
func BenchmarkPublish(b *testing.B) {
	f, run := catalogRun(b)
	for b.Loop() {
		if err := report.Save(f, run); err != nil {
			b.Fatal(err)
		}
	}
}
