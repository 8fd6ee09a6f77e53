package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"
)

// TestBaselineIsBuiltAndPaired: with a baseline, each server is built
// also from the baseline's catalog, under a tag of its own; its row,
// server@main, runs in every round right after or before its server; a
// server the baseline lacks is a baseline row that failed its build; the
// record says what the baseline was, and the gate tests each pair.
func TestBaselineIsBuiltAndPaired(t *testing.T) {
	var mu sync.Mutex
	var built []string
	eng := &script{onBuild: func(tag string) { mu.Lock(); built = append(built, tag); mu.Unlock() }}
	s := newTestBench(t, eng, "x", "y")
	root := t.TempDir() // main's servers/: x only
	for path, content := range map[string]string{
		"servers/x/Dockerfile":                     "FROM debian:bookworm-slim\n# at main\n",
		"servers/x/" + catalog.ManifestFile:        `{"stack": "Go", "library": "grpc-go", "version": "1.80.0", "pinned": {"unchecked": "a test"}}`,
		"scenarios/complex_proto/helloworld.proto": "",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Kit.Builder
	b.Catalog, b.Suffix = cat, "-at-c0ffee"
	s.Kit.Baseline = &session.Baseline{Baseline: record.Baseline{Ref: "main", Commit: "c0ffee", Threshold: 0.1}, Catalog: cat, Scenarios: s.Kit.Scenarios, Builder: b}
	if err := s.bench(t, context.Background(), []string{"x", "y"}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(built)
	if want := []string{"test:x-complex_proto", "test:x-complex_proto-at-c0ffee", "test:y-complex_proto"}; !slices.Equal(built, want) {
		t.Errorf("built %v, want %v", built, want)
	}
	var names []string
	for _, srv := range s.Run.Cells[0].Servers {
		names = append(names, srv.Name+"<"+srv.Of)
	}
	if want := []string{"x<", "x@main<x", "y<", "y@main<y"}; !slices.Equal(names, want) {
		t.Errorf("rows %v, want %v", names, want)
	}
	main, _ := s.Run.Cells[0].Server("x@main")
	if main.Image != "test:x-complex_proto-at-c0ffee" || main.Version != "1.80.0" || len(main.Rounds) != 3 {
		t.Errorf("x@main: image %s, version %s, %d rounds", main.Image, main.Version, len(main.Rounds))
	}
	if y, _ := s.Run.Cells[0].Server("y@main"); y.Failure == nil || !strings.Contains(y.Failure.Reason, "no server y at main") {
		t.Errorf("y@main: %+v", y.Failure)
	}
	for r, visits := range s.Run.Order {
		i := slices.IndexFunc(visits, func(v record.Visit) bool { return v.Server == "x" })
		j := slices.IndexFunc(visits, func(v record.Visit) bool { return v.Server == "x@main" })
		if i < 0 || j < 0 || i-j != 1 && j-i != 1 {
			t.Errorf("round %d visited %v: x and x@main apart", r+1, visits)
		}
	}
	if s.Run.Baseline == nil || s.Run.Baseline.Ref != "main" || s.Run.Baseline.Commit != "c0ffee" {
		t.Errorf("the record's baseline: %+v", s.Run.Baseline)
	}
	g := analysis.GateOf(*s.Run)
	if g == nil || !slices.ContainsFunc(g.Tests, func(t analysis.GateTest) bool { return t.Server == "x" && t.Figure == analysis.GateRPS && t.N == 3 }) {
		t.Errorf("gate %+v", g)
	}
	bench, err := os.ReadFile(s.Kit.Folder.Path("bench.txt"))
	if err != nil || !strings.Contains(string(bench), "== gate: this tree against main (c0ffee)") {
		t.Errorf("bench.txt lacks the gate (%v):\n%s", err, bench)
	}
}
