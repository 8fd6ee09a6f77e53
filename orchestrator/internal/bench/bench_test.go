package bench

// Sequencing tests with a fake engine: what happens to the run when a server
// fails in one phase or another, or when the run is interrupted. Whether the
// phases work against Docker is what the end-to-end tests show.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/docker"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/suite"
)

// fakeEngine scripts what each server does. Servers are told apart by the
// io.grpcbench.server label, builds by their tag.
type fakeEngine struct {
	mu sync.Mutex
	// failBuild, failProbe, failConform and crashUnderLoad name servers
	// that fail there.
	failBuild, failProbe, failConform, crashUnderLoad map[string]bool
	// saturate names servers whose ghz client uses all its CPU.
	saturate map[string]bool
	// onLoad is called when a load client starts, onBuild when an image
	// is built.
	onLoad  func(server string)
	onBuild func(tag string)
	started []*fakeContainer
	loaded  map[string]bool
	// loads lists the load clients started, as server/engine.
	loads []string
}

func (f *fakeEngine) ImageID(context.Context, string) (string, error) { return "sha256:base", nil }
func (f *fakeEngine) Pull(context.Context, string, io.Writer) error   { return nil }
func (f *fakeEngine) Import(context.Context, io.Reader, string, []string) error {
	return nil
}

func (f *fakeEngine) Build(_ context.Context, _ io.Reader, opts docker.BuildOptions, _ io.Writer) (string, error) {
	if f.onBuild != nil {
		f.onBuild(opts.Tag)
	}
	if name := strings.TrimSuffix(strings.TrimPrefix(opts.Tag, "test:"), "-complex_proto"); f.failBuild[name] {
		return "", errors.New("compile error")
	}
	return "sha256:" + opts.Tag, nil
}

func (f *fakeEngine) Start(_ context.Context, spec docker.ContainerSpec) (suite.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &fakeContainer{spec: spec, server: spec.Labels["io.grpcbench.server"], role: spec.Labels[docker.RoleLabel], engine: f}
	f.started = append(f.started, c)
	if c.role == "load" {
		if f.loaded == nil {
			f.loaded = map[string]bool{}
		}
		f.loaded[c.server] = true
		f.loads = append(f.loads, c.server+"/"+spec.Labels["io.grpcbench.engine"])
		if f.onLoad != nil {
			f.onLoad(c.server)
		}
	}
	return c, nil
}

func (f *fakeEngine) notRemoved() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var left []string
	for _, c := range f.started {
		if !c.removed {
			left = append(left, c.server+"/"+c.role)
		}
	}
	return left
}

type fakeContainer struct {
	spec         docker.ContainerSpec
	server, role string
	engine       *fakeEngine
	removed      bool
}

func (c *fakeContainer) ID() string { return c.server + "-" + c.role }

func (c *fakeContainer) Wait(ctx context.Context) (int64, error) {
	switch {
	case c.role == "server":
		<-ctx.Done() // servers run until removed
		return 0, ctx.Err()
	case c.role == "probe" && c.engine.failProbe[c.server]:
		return 1, nil
	case c.role == "load":
		select { // the load takes a moment, so that it can be interrupted
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return 0, nil
}

func (c *fakeContainer) State(context.Context) (docker.State, error) {
	c.engine.mu.Lock()
	defer c.engine.mu.Unlock()
	if c.engine.crashUnderLoad[c.server] && c.engine.loaded[c.server] {
		return docker.State{ExitCode: 137, OOMKilled: true}, nil
	}
	return docker.State{Running: true}, nil
}

func (c *fakeContainer) Logs(_ context.Context, _ bool, stdout, stderr io.Writer) error {
	switch c.role {
	case "probe":
		io.WriteString(stderr, "no successful call within 60s\n")
	case "conform":
		v := probe.Verdict{Passed: true, Checks: []probe.Check{{Name: "echo", Passed: true}}}
		if c.engine.failConform[c.server] {
			v = probe.Verdict{Checks: []probe.Check{{Name: "echo", Detail: "answer is not the echo of the request (name: sent a, got b)"}}}
		}
		return json.NewEncoder(stdout).Encode(v)
	case "load":
		now := time.Now()
		engine := c.spec.Labels["io.grpcbench.engine"]
		rps := map[string]float64{"ghz": 1000, "h2": 3000}[engine]
		return json.NewEncoder(stdout).Encode(load.Result{Engine: engine, Start: now.Add(-time.Second), End: now,
			Requests: 1000, OK: 1000, Statuses: map[string]uint64{"OK": 1000}, RPS: rps})
	}
	return nil
}

func (c *fakeContainer) WatchOOM(context.Context) func() int { return func() int { return 0 } }

// Stats gives a saturating ghz client one reading of a full core.
func (c *fakeContainer) Stats(context.Context) (io.ReadCloser, error) {
	if c.role != "load" || c.spec.Labels["io.grpcbench.engine"] != "ghz" || !c.engine.saturate[c.server] {
		return io.NopCloser(strings.NewReader("")), nil
	}
	now := time.Now()
	var r container.StatsResponse
	r.PreRead, r.Read = now.Add(-500*time.Millisecond), now
	r.PreCPUStats.CPUUsage.TotalUsage = 1e9
	r.CPUStats.CPUUsage.TotalUsage = 1e9 + 5e8
	js, err := json.Marshal(r)
	return io.NopCloser(bytes.NewReader(js)), err
}

func (c *fakeContainer) Remove(context.Context) error {
	c.engine.mu.Lock()
	defer c.engine.mu.Unlock()
	c.removed = true
	return nil
}

func newTestBench(t *testing.T, eng *fakeEngine, servers ...string) *Bench {
	t.Helper()
	root := t.TempDir()
	write := func(path, content string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "Dockerfile"), "FROM debian:bookworm-slim\n")
	for _, s := range servers {
		write(filepath.Join(root, "servers", s, "Dockerfile"), "FROM debian:bookworm-slim\n")
	}
	sc, err := scenario.Load(context.Background(), filepath.Join("..", "..", "..", "scenarios", "complex_proto"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(map[string]string{"GRPC_IMAGE_NAME": "test", "GRPC_BENCHMARK_WARMUP": "1ms", "GRPC_BENCHMARK_DURATION": "3ms"})
	if err != nil {
		t.Fatal(err)
	}
	return &Bench{
		Suite:         &suite.Suite{Engine: eng},
		Builder:       images.Builder{Engine: eng, Catalog: catalog.Catalog{Root: root, Servers: servers}, Name: "test"},
		ClientBuilder: images.Builder{Engine: eng, Catalog: catalog.Catalog{Root: root, Servers: servers}, Name: "test"},
		Config:        cfg,
		Scenarios:     map[string]*scenario.Scenario{sc.Name: sc},
		Folder:        report.Folder{Dir: t.TempDir()},
		Run:           &report.Run{ID: "test", Cells: Cells(cfg, 2, 2)},
		Progress:      progress.Plain(io.Discard),
	}
}

func TestAFailureInAnyPhaseIsRecordedAndTheRunGoesOn(t *testing.T) {
	eng := &fakeEngine{
		failBuild:      map[string]bool{"broken_build": true},
		failProbe:      map[string]bool{"never_ready": true},
		failConform:    map[string]bool{"wrong_echo": true},
		crashUnderLoad: map[string]bool{"crashes": true},
	}
	servers := []string{"broken_build", "never_ready", "wrong_echo", "crashes", "good"}
	s := newTestBench(t, eng, servers...)
	if err := s.Benchmark(context.Background(), servers); err != nil {
		t.Fatal(err)
	}
	got := s.Run.Cells[0].Servers
	want := map[string]string{"broken_build": "build", "never_ready": "readiness", "wrong_echo": "conformance", "crashes": "load", "good": ""}
	if len(got) != len(want) {
		t.Fatalf("%d servers recorded, want %d", len(got), len(want))
	}
	for _, srv := range got {
		phase := ""
		if srv.Failure != nil {
			phase = srv.Failure.Phase
		}
		for _, r := range srv.Rounds {
			if r.Failure != nil {
				phase = r.Failure.Phase
			}
		}
		if phase != want[srv.Name] {
			t.Errorf("%s failed in %q, want %q (%+v)", srv.Name, phase, want[srv.Name], srv)
		}
		// A server that failed is not measured again in later rounds.
		if rounds := len(srv.Rounds); (phase == "build" && rounds != 0) || (phase != "" && phase != "build" && rounds != 1) || (phase == "" && rounds != 3) {
			t.Errorf("%s (failed in %q) ran %d rounds", srv.Name, phase, rounds)
		}
	}
	if reason := got[2].Rounds[0].Failure.Reason; !strings.Contains(reason, "name: sent a, got b") || got[2].Conformance == nil {
		t.Errorf("a wrong echo is not explained: %q, verdict %+v", reason, got[2].Conformance)
	}
	if reason := got[3].Rounds[0].Failure.Reason; !strings.Contains(reason, "GRPC_SERVER_RAM") {
		t.Errorf("an OOM kill is not explained: %q", reason)
	}
	if !got[4].Ranked() || got[4].Rounds[2].Load.RPS != 1000 || !got[4].Conformance.Passed {
		t.Errorf("the good server has no load result or verdict: %+v", got[4])
	}
	if left := eng.notRemoved(); len(left) > 0 {
		t.Errorf("containers not removed: %v", left)
	}
	bench, err := os.ReadFile(s.Folder.Path("bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bench, []byte("| good ")) || bytes.Contains(bench, []byte("| crashes ")) {
		t.Errorf("bench.txt ranks the wrong servers:\n%s", bench)
	}
}

// TestRoundsAreInterleaved: round 1 of every server, then round 2, ...
// and the capacity engine measures every server in every round, whether
// its load engine was client-bound or not, so that the capacity ranking
// has one engine's figures for all.
func TestRoundsAreInterleaved(t *testing.T) {
	eng := &fakeEngine{saturate: map[string]bool{"b": true}}
	s := newTestBench(t, eng, "a", "b")
	if err := s.Benchmark(context.Background(), []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a/ghz", "a/h2", "b/ghz", "b/h2", "a/ghz", "a/h2", "b/ghz", "b/h2", "a/ghz", "a/h2", "b/ghz", "b/h2"}
	if !slices.Equal(eng.loads, want) {
		t.Errorf("loads in order %v, want %v", eng.loads, want)
	}
	a, b := s.Run.Cells[0].Servers[0], s.Run.Cells[0].Servers[1]
	for r := range 3 {
		if !a.Rounds[r].Start.Before(b.Rounds[r].Start) || (r > 0 && !b.Rounds[r-1].Start.Before(a.Rounds[r].Start)) {
			t.Errorf("round %d: a started %v, b %v", r+1, a.Rounds[r].Start, b.Rounds[r].Start)
		}
		if a.Rounds[r].ClientBound || !b.Rounds[r].ClientBound {
			t.Errorf("round %d: a client-bound %v, b %v; want only b", r+1, a.Rounds[r].ClientBound, b.Rounds[r].ClientBound)
		}
		for _, srv := range []report.Server{a, b} {
			if c := srv.Rounds[r].Capacity; c == nil || c.Load.Engine != "h2" {
				t.Errorf("%s round %d has no capacity measurement by h2: %+v", srv.Name, r+1, srv.Rounds[r])
			}
		}
	}
	capacity := report.CapacityRanking(s.Run.Cells[0])
	if len(capacity) != 2 {
		t.Fatalf("capacity ranking %+v", capacity)
	}
	for _, row := range capacity {
		if !slices.Equal(row.Engines, []string{"h2"}) || row.RPS.N != 3 || row.RPS.Median != 3000 {
			t.Errorf("capacity row %s: engines %v, %d rounds, median %v; want h2 alone over 3 rounds at 3000", row.Name, row.Engines, row.RPS.N, row.RPS.Median)
		}
	}
}

func TestCapacityRunsHalfTheMeasurement(t *testing.T) {
	for _, c := range []struct{ warmup, duration, wantWarmup, wantDuration time.Duration }{
		{5 * time.Second, 6666 * time.Millisecond, time.Second, 3333 * time.Millisecond},
		{500 * time.Millisecond, 10 * time.Second, 500 * time.Millisecond, 5 * time.Second},
		{5 * time.Second, time.Second, time.Second, time.Second}, // never under a second
	} {
		got := capacitySpec(load.Spec{Warmup: c.warmup, Duration: c.duration, Connections: 50})
		if got.Warmup != c.wantWarmup || got.Duration != c.wantDuration || got.Connections != 50 {
			t.Errorf("capacity after %v + %v: %v + %v (connections %d), want %v + %v", c.warmup, c.duration,
				got.Warmup, got.Duration, got.Connections, c.wantWarmup, c.wantDuration)
		}
	}
}

// TestInterruptedBuildLeavesARunToResume: Ctrl-C among the builds still
// writes results.json, marked interrupted, which --resume reads.
func TestInterruptedBuildLeavesARunToResume(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng := &fakeEngine{onBuild: func(tag string) {
		if tag == "test:first-complex_proto" {
			cancel()
		}
	}}
	s := newTestBench(t, eng, "first", "second")
	if err := s.Benchmark(ctx, []string{"first", "second"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Benchmark = %v, want context.Canceled", err)
	}
	saved, err := report.Load(s.Folder.Dir)
	if err != nil || !saved.Interrupted {
		t.Errorf("results.json after an interrupted build: interrupted %v, %v", saved.Interrupted, err)
	}
	if len(eng.loads) != 0 {
		t.Errorf("loads after an interrupted build: %v", eng.loads)
	}
}

func TestInterruptionStopsTheRunAndKeepsWhatFinished(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loads := 0
	eng := &fakeEngine{onLoad: func(server string) {
		// The second round of the second server.
		if loads++; server == "second" && loads == 5 {
			cancel()
		}
	}}
	s := newTestBench(t, eng, "first", "second", "third")
	s.Config.CapacityEngine = "off" // one load a round, to count them
	err := s.Benchmark(ctx, []string{"first", "second", "third"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Benchmark = %v, want context.Canceled", err)
	}
	srv := s.Run.Cells[0].Servers
	if !s.Run.Interrupted || len(srv[0].Rounds) != 2 || len(srv[1].Rounds) != 2 || len(srv[2].Rounds) != 1 {
		t.Fatalf("interrupted %v with rounds %d %d %d, want true and 2 2 1", s.Run.Interrupted, len(srv[0].Rounds), len(srv[1].Rounds), len(srv[2].Rounds))
	}
	if f := srv[1].Rounds[1].Failure; f == nil || f.Reason != "interrupted" || srv[0].Rounds[1].Failure != nil {
		t.Errorf("second's round 2 failure %+v", f)
	}
	if left := eng.notRemoved(); len(left) > 0 {
		t.Errorf("containers not removed: %v", left)
	}
	var saved report.Run
	js, err := os.ReadFile(s.Folder.Path("results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &saved); err != nil || !saved.Interrupted || len(saved.Cells[0].Servers[0].Rounds) != 2 {
		t.Errorf("results.json does not record the interruption: %v %+v", err, saved)
	}
}

// TestEngineGoneStopsTheRun: when a round fails and the engine no longer
// answers, the run stops at once, saying so, and keeps what it measured.
func TestEngineGoneStopsTheRun(t *testing.T) {
	eng := &fakeEngine{crashUnderLoad: map[string]bool{"second": true}}
	s := newTestBench(t, eng, "first", "second", "third")
	s.Alive = func(context.Context) error { return errors.New("connection refused") }
	err := s.Benchmark(context.Background(), []string{"first", "second", "third"})
	var gone *EngineGoneError
	if !errors.As(err, &gone) {
		t.Fatalf("Benchmark = %v, want an EngineGoneError", err)
	}
	srv := s.Run.Cells[0].Servers
	if len(srv[0].Rounds) != 1 || !srv[0].Ranked() || len(srv[2].Rounds) != 0 || !s.Run.Interrupted {
		t.Errorf("rounds %d %d %d, interrupted %v", len(srv[0].Rounds), len(srv[1].Rounds), len(srv[2].Rounds), s.Run.Interrupted)
	}
	if f := srv[1].Rounds[0].Failure; f == nil || !strings.HasPrefix(f.Reason, "the Docker engine went away") {
		t.Errorf("second's failure %+v", f)
	}
	if left := eng.notRemoved(); len(left) > 0 {
		t.Errorf("containers not removed: %v", left)
	}
}

// TestResumeFinishesAnInterruptedRun: the record of an interrupted run,
// resumed, keeps its finished rounds and measures the others, in the same
// interleaved order.
func TestResumeFinishesAnInterruptedRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	loads := 0
	eng := &fakeEngine{onLoad: func(string) {
		if loads++; loads == 3 { // round 2 of the first server
			cancel()
		}
	}}
	s := newTestBench(t, eng, "first", "second")
	s.Config.CapacityEngine = "off" // one load a round, to count them
	if err := s.Benchmark(ctx, []string{"first", "second"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Benchmark = %v", err)
	}
	saved, err := report.Load(s.Folder.Dir)
	if err != nil {
		t.Fatal(err)
	}
	saved.Resume()
	first := saved.Cells[0].Servers[0]
	if len(first.Rounds) != 1 {
		t.Fatalf("the cut-short round was not dropped: %+v", first.Rounds)
	}
	// What is left: rounds 2 and 3 of both (second has round 1).
	if n := Planned(saved.Cells, []string{"first", "second"}, 3); n != 4 {
		t.Errorf("planned %d rounds to resume, want 4", n)
	}
	if n := Planned(nil, []string{"first", "second"}, 3); n != 0 {
		t.Errorf("planned %d rounds without cells", n)
	}
	eng.onLoad, eng.loads = nil, nil
	s.Run = &saved
	if err := s.Benchmark(context.Background(), []string{"first", "second"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"first/ghz", "second/ghz", "first/ghz", "second/ghz"}; !slices.Equal(eng.loads, want) { // rounds 2 and 3
		t.Errorf("resumed loads %v, want %v", eng.loads, want)
	}
	for _, srv := range s.Run.Cells[0].Servers {
		if !srv.Ranked() || len(srv.Rounds) != 3 || srv.Rounds[2].Round != 3 {
			t.Errorf("%s after resuming: %+v", srv.Name, srv.Rounds)
		}
	}
	if s.Run.Interrupted {
		t.Error("the finished run is still marked interrupted")
	}
}
