package bench

// Sequencing tests with a fake host: what happens to the run when a server
// fails in one phase or another, or when the run is interrupted. Whether the
// phases work against Docker is what the end-to-end tests show.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend/fake"
	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/harness"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"
)

// script says what each server of a test does on a fake host: servers are
// told apart by the io.grpcbench.server label, builds by their tag.
type script struct {
	// failBuild, failProbe, failConform and crashUnderLoad name servers
	// that fail there.
	failBuild, failProbe, failConform, crashUnderLoad map[string]bool
	// saturate names servers whose ghz client uses all its CPU.
	saturate map[string]bool
	// onLoad is called when a load client starts, onBuild when an image
	// is built.
	onLoad  func(server string)
	onBuild func(tag string)
	// rate, when set, is the ghz req/s of a server's n-th load (from 1),
	// capacity the h2 req/s; cellRate, when set, the ghz req/s of a
	// server's n-th load over that many connections (its cell's).
	rate, capacity func(server string, n int) float64
	cellRate       func(server string, connections, n int) float64
	// specs are the load specs of every load, in order; a ghz spec with a
	// steady-state rule is answered as warmed up for warmup(server, n),
	// ended steady.
	specs  []load.Spec
	warmup func(server string, n int) time.Duration
	// ranOn, when set, are the cores the host reads back that the servers
	// and the load clients run on, as Kubernetes' CPU manager picks them.
	ranOn *record.Placement

	host  *fake.Host
	count map[string]int // ghz loads started, by server (and connections, with cellRate)
}

// loadTakes is how long a load client runs: long enough for an
// interruption to cut it.
const loadTakes = 20 * time.Millisecond

// newHost is a fake host whose containers and builds do as sc says.
func (sc *script) newHost() *fake.Host {
	sc.host, sc.count = fake.New("fake://bench", backend.Facts{CPUs: 4}), map[string]int{}
	sc.host.Script, sc.host.BuildErr = sc.behaviour, sc.build
	return sc.host
}

func (sc *script) build(opts backend.BuildOptions) error {
	if sc.onBuild != nil {
		sc.onBuild(opts.Tag)
	}
	if name := strings.TrimSuffix(strings.TrimPrefix(opts.Tag, "test:"), "-complex_proto"); sc.failBuild[name] {
		return errors.New("compile error")
	}
	return nil
}

func (sc *script) behaviour(spec backend.ContainerSpec) fake.Behaviour {
	server := spec.Labels["io.grpcbench.server"]
	switch spec.Labels[backend.RoleLabel] {
	case "server":
		b := fake.Behaviour{Runs: true, Stderr: "grpcbench-server: workers=1\n"}
		if sc.ranOn != nil {
			b.CPUSet = sc.ranOn.ServerCPUSet
		}
		return b
	case "probe":
		if sc.failProbe[server] {
			return fake.Behaviour{Exit: 1, Stderr: "no successful call within 60s\n"}
		}
	case "conform":
		v := probe.Verdict{Passed: true, Checks: []probe.Check{{Name: "echo", Passed: true}}}
		if sc.failConform[server] {
			v = probe.Verdict{Checks: []probe.Check{{Name: "echo", Detail: "answer is not the echo of the request (name: sent a, got b)"}}}
		}
		return fake.Behaviour{Stdout: jsonText(v)}
	case "load":
		return sc.load(spec, server)
	}
	return fake.Behaviour{}
}

// load is a load client of server: its report of the rate the script
// gives, and the server crashing under it when the script says so.
func (sc *script) load(spec backend.ContainerSpec, server string) fake.Behaviour {
	tool := spec.Labels["io.grpcbench.tool"]
	ls, specErr := load.ReadSpec(spec.Files[load.SpecFile])
	key := server
	if specErr == nil && sc.cellRate != nil {
		key = fmt.Sprint(server, "/", ls.Connections)
	}
	if tool == "ghz" {
		sc.count[key]++
	}
	n := sc.count[key] // a capacity load's is its round's ghz load's
	if sc.onLoad != nil {
		sc.onLoad(server)
	}
	if sc.crashUnderLoad[server] {
		sc.serverOf(server).End(137, true)
	}
	rps := map[string]float64{"ghz": 1000, "h2": 3000}[tool]
	if sc.rate != nil && tool == "ghz" {
		rps = sc.rate(server, n)
	}
	if sc.capacity != nil && tool == "h2" {
		rps = sc.capacity(server, n)
	}
	if sc.cellRate != nil && tool == "ghz" && specErr == nil {
		rps = sc.cellRate(server, ls.Connections, n)
	}
	var warmed time.Duration
	var ended string
	if specErr == nil {
		sc.specs = append(sc.specs, ls)
		if tool == "ghz" && ls.Steady != nil && sc.warmup != nil {
			warmed, ended = sc.warmup(server, n), load.WarmupSteady
		}
	}
	var latency load.Latency
	if specErr == nil && ls.QPS > 0 {
		// At a rate: the rate where the server keeps up, and a p99 that
		// rises past 60% of its capacity.
		latency.P99 = time.Millisecond
		if float64(ls.QPS) > 0.6*rps {
			latency.P99 = 20 * time.Millisecond
		}
		rps = min(rps, float64(ls.QPS))
	}
	now := time.Now()
	b := fake.Behaviour{Takes: loadTakes, Stdout: jsonText(load.Result{Tool: tool, Start: now.Add(-time.Second), End: now,
		Requests: 1000, OK: 1000, Statuses: map[string]uint64{"OK": 1000}, RPS: rps, Latency: latency, Warmup: warmed, WarmupEnd: ended})}
	if sc.ranOn != nil {
		b.CPUSet = sc.ranOn.ClientCPUSet
	}
	if tool == "ghz" && sc.saturate[server] { // one reading of a full core
		b.Samples = []backend.Sample{{PreRead: now.Add(-500 * time.Millisecond), Read: now, CPUNanos: 5e8, CPUPercent: 100}}
	}
	return b
}

// serverOf is the server's container last started.
func (sc *script) serverOf(name string) *fake.Container {
	var last *fake.Container
	for _, c := range sc.host.Containers() {
		if c.Role() == "server" && c.Spec().Labels["io.grpcbench.server"] == name {
			last = c
		}
	}
	return last
}

// loads lists the load clients started, as server/tool.
func (sc *script) loads() []string {
	var out []string
	for _, c := range sc.host.Containers() {
		if c.Role() == "load" {
			out = append(out, c.Spec().Labels["io.grpcbench.server"]+"/"+c.Spec().Labels["io.grpcbench.tool"])
		}
	}
	return out
}

// ghzLoads are the servers of the ghz loads among loads, in order.
func ghzLoads(loads []string) []string {
	var out []string
	for _, l := range loads {
		if name, ok := strings.CutSuffix(l, "/ghz"); ok {
			out = append(out, name)
		}
	}
	return out
}

// notRemoved lists the containers left on the host, as server/role.
func (sc *script) notRemoved() []string {
	var left []string
	for _, c := range sc.host.Left() {
		left = append(left, c.Spec().Labels["io.grpcbench.server"]+"/"+c.Role())
	}
	return left
}

func jsonText(v any) string {
	js, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(js)
}

// testBench is a benchmark's options on a fake host, with the record it
// goes on from and, once it ran, the record it returned.
type testBench struct {
	Options
	Run    *record.Run
	script *script
}

// bench runs the benchmark from the test's record and keeps the record it
// returns.
func (s *testBench) bench(t *testing.T, ctx context.Context, servers []string) error {
	t.Helper()
	b := mustNew(t, s)
	run, err := b.Benchmark(ctx, servers)
	*s.Run = run
	return err
}

// folderStore saves the record and its reports in a folder, as the
// command's store does.
type folderStore struct{ folder record.Folder }

func (st folderStore) Save(run record.Run) error    { return record.Save(st.folder, run) }
func (st folderStore) Publish(run record.Run) error { return report.Save(st.folder, run) }

func newTestBench(t *testing.T, sc *script, servers ...string) *testBench {
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
		write(filepath.Join(root, "servers", s, catalog.ManifestFile), `{"stack": "Go", "library": "grpc-go", "version": "1.85.0",
			"pinned": {"unchecked": "a test"}, "grpc": {"library": "core", "version": "2", "pinned": {"unchecked": "a test"}}}`)
	}
	write(filepath.Join(root, "scenarios", "complex_proto", "helloworld.proto"), "")
	cat, err := catalog.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	proto, err := scenario.Load(context.Background(), filepath.Join("..", "..", "..", "scenarios", "complex_proto"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(map[string]string{"GRPC_IMAGE_NAME": "test", "GRPC_BENCHMARK_WARMUP": "1ms", "GRPC_BENCHMARK_DURATION": "3ms", "GRPC_BENCHMARK_ROUNDS": "3"}, config.Offered(load.Runners()))
	if err != nil {
		t.Fatal(err)
	}
	folder := record.Folder{Dir: t.TempDir()}
	host := sc.newHost()
	b := images.Builder{Host: host, Catalog: cat, Name: "test"}
	kit := &session.Kit{Config: cfg, Catalog: cat, Scenarios: map[string]*scenario.Scenario{proto.Name: proto}, Folder: folder,
		Builder: b, ClientBuilder: b, Harness: harness.New(harness.Options{Servers: host, Images: harness.Images{Client: b.ClientTag()}})}
	return &testBench{Options: Options{Kit: kit, Store: folderStore{folder}, Progress: progress.Plain(io.Discard)},
		Run: &record.Run{ID: "test", Cells: plan.Cells(cfg, 2, 2)}, script: sc}
}

func TestAFailureInAnyPhaseIsRecordedAndTheRunGoesOn(t *testing.T) {
	sc := &script{
		failBuild:      map[string]bool{"broken_build": true},
		failProbe:      map[string]bool{"never_ready": true},
		failConform:    map[string]bool{"wrong_echo": true},
		crashUnderLoad: map[string]bool{"crashes": true},
	}
	servers := []string{"broken_build", "never_ready", "wrong_echo", "crashes", "good"}
	s := newTestBench(t, sc, servers...)
	if err := s.bench(t, context.Background(), servers); err != nil {
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
	for _, srv := range got { // what each server is built on is recorded, built or not
		if srv.Stack != "Go" || srv.Built() != "grpc-go 1.85.0 on core 2" {
			t.Errorf("%s: stack %q, built on %q, want its server.json's", srv.Name, srv.Stack, srv.Built())
		}
	}
	if left := sc.notRemoved(); len(left) > 0 {
		t.Errorf("containers not removed: %v", left)
	}
	bench, err := os.ReadFile(s.Kit.Folder.Path("bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bench, []byte("| good ")) || bytes.Contains(bench, []byte("| crashes ")) {
		t.Errorf("bench.txt ranks the wrong servers:\n%s", bench)
	}
}

// order is the servers of a run's recorded order, round after round.
func order(run *record.Run) []string {
	var out []string
	for _, round := range run.Order {
		for _, v := range round {
			out = append(out, v.Server)
		}
	}
	return out
}

// TestRoundsAreInterleaved: round 1 of every server, then round 2, ...,
// each in the order results.json records; and the capacity tool
// measures every server in every round, right after its load, whether its
// load tool was client-bound or not, so that the capacity ranking has
// one engine's figures for all. Each round records the cores its host
// read back that the server and the load client ran on.
func TestRoundsAreInterleaved(t *testing.T) {
	sc := &script{saturate: map[string]bool{"b": true}, ranOn: &record.Placement{ServerCPUSet: "1", ClientCPUSet: "0"}}
	s := newTestBench(t, sc, "a", "b")
	if err := s.bench(t, context.Background(), []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if len(s.Run.Order) != 3 || !slices.Equal(ghzLoads(sc.loads()), order(s.Run)) || s.Run.Seed == 0 {
		t.Errorf("ghz loads in order %v, recorded order %v (seed %d)", ghzLoads(sc.loads()), s.Run.Order, s.Run.Seed)
	}
	loads := sc.loads()
	for i, l := range loads {
		if strings.HasSuffix(l, "/h2") && (i == 0 || loads[i-1] != strings.TrimSuffix(l, "/h2")+"/ghz") {
			t.Errorf("%s is not in the same round as its load: %v", l, loads)
		}
	}
	a, b := s.Run.Cells[0].Servers[0], s.Run.Cells[0].Servers[1]
	for r := range 3 {
		if r > 0 && (!a.Rounds[r-1].Start.Before(b.Rounds[r].Start) || !b.Rounds[r-1].Start.Before(a.Rounds[r].Start)) {
			t.Errorf("round %d started before round %d ended: a %v, b %v", r+1, r, a.Rounds[r].Start, b.Rounds[r].Start)
		}
		for _, srv := range []record.Server{a, b} {
			if rd := srv.Rounds[r]; rd.ServerCPUSet != "1" || rd.ClientCPUSet != "0" {
				t.Errorf("%s round %d recorded cores %q and %q, want 1 and 0: where the host says they ran", srv.Name, r+1, rd.ServerCPUSet, rd.ClientCPUSet)
			}
		}
		if a.Rounds[r].ClientBound || !b.Rounds[r].ClientBound {
			t.Errorf("round %d: a client-bound %v, b %v; want only b", r+1, a.Rounds[r].ClientBound, b.Rounds[r].ClientBound)
		}
		for _, srv := range []record.Server{a, b} {
			if c := srv.Rounds[r].Capacity; c == nil || c.Load.Tool != "h2" {
				t.Errorf("%s round %d has no capacity measurement by h2: %+v", srv.Name, r+1, srv.Rounds[r])
			}
		}
	}
	capacity := analysis.CapacityRanking(s.Run.Cells[0])
	if len(capacity) != 2 {
		t.Fatalf("capacity ranking %+v", capacity)
	}
	for _, row := range capacity {
		if !slices.Equal(row.Tools, []string{"h2"}) || row.RPS.N != 3 || row.RPS.Median != 3000 {
			t.Errorf("capacity row %s: engines %v, %d rounds, median %v; want h2 alone over 3 rounds at 3000", row.Name, row.Tools, row.RPS.N, row.RPS.Median)
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
	sc := &script{onBuild: func(tag string) {
		if tag == "test:first-complex_proto" {
			cancel()
		}
	}}
	s := newTestBench(t, sc, "first", "second")
	if err := s.bench(t, ctx, []string{"first", "second"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Benchmark = %v, want context.Canceled", err)
	}
	saved, err := record.Load(s.Kit.Folder.Dir)
	if err != nil || saved.State != record.Interrupted {
		t.Errorf("results.json after an interrupted build: state %q, %v", saved.State, err)
	}
	if loads := sc.loads(); len(loads) != 0 {
		t.Errorf("loads after an interrupted build: %v", loads)
	}
}

func TestInterruptionStopsTheRunAndKeepsWhatFinished(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loads := 0
	sc := &script{onLoad: func(string) {
		// The second server of round 2.
		if loads++; loads == 5 {
			cancel()
		}
	}}
	s := newTestBench(t, sc, "first", "second", "third")
	s.Kit.Config.CapacityTool = "off" // one load a round, to count them
	err := s.bench(t, ctx, []string{"first", "second", "third"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Benchmark = %v, want context.Canceled", err)
	}
	byName := map[string]record.Server{}
	for _, srv := range s.Run.Cells[0].Servers {
		byName[srv.Name] = srv
	}
	round2 := s.Run.Order[1]
	done, cut, left := byName[round2[0].Server], byName[round2[1].Server], byName[round2[2].Server]
	if s.Run.State != record.Interrupted || len(done.Rounds) != 2 || len(cut.Rounds) != 2 || len(left.Rounds) != 1 {
		t.Fatalf("state %q with rounds %d %d %d in round 2's order, want interrupted and 2 2 1", s.Run.State, len(done.Rounds), len(cut.Rounds), len(left.Rounds))
	}
	if f := cut.Rounds[1].Failure; f == nil || f.Reason != "interrupted" || done.Rounds[1].Failure != nil {
		t.Errorf("%s's round 2 failure %+v", cut.Name, f)
	}
	if left := sc.notRemoved(); len(left) > 0 {
		t.Errorf("containers not removed: %v", left)
	}
	var saved record.Run
	js, err := os.ReadFile(s.Kit.Folder.Path("results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &saved); err != nil || saved.State != record.Interrupted || len(saved.Order) != 2 {
		t.Errorf("results.json does not record the interruption: %v %+v", err, saved)
	}
}

// TestEngineGoneStopsTheRun: when a round fails and the engine no longer
// answers, the run stops at once, saying so, and keeps what it measured.
func TestEngineGoneStopsTheRun(t *testing.T) {
	sc := &script{crashUnderLoad: map[string]bool{"second": true}}
	s := newTestBench(t, sc, "first", "second", "third")
	s.Kit.Alive = func(context.Context) error { return errors.New("connection refused") }
	err := s.bench(t, context.Background(), []string{"first", "second", "third"})
	var gone *HostGoneError
	if !errors.As(err, &gone) {
		t.Fatalf("Benchmark = %v, want an HostGoneError", err)
	}
	srv := s.Run.Cells[0].Servers
	// The servers before second in round 1's order were measured, those
	// after it not.
	before := true
	for _, v := range s.Run.Order[0] {
		i := slices.IndexFunc(srv, func(x record.Server) bool { return x.Name == v.Server })
		switch {
		case v.Server == "second":
			before = false
		case before && (len(srv[i].Rounds) != 1 || !srv[i].Ranked()), !before && len(srv[i].Rounds) != 0:
			t.Errorf("%s: %d rounds, order %v", v.Server, len(srv[i].Rounds), s.Run.Order[0])
		}
	}
	if s.Run.State != record.Interrupted || len(s.Run.Order) != 1 {
		t.Errorf("state %q, order %v", s.Run.State, s.Run.Order)
	}
	if f := srv[1].Rounds[0].Failure; f == nil || !strings.HasPrefix(f.Reason, "the Docker engine went away") {
		t.Errorf("second's failure %+v", f)
	}
	if left := sc.notRemoved(); len(left) > 0 {
		t.Errorf("containers not removed: %v", left)
	}
}

// TestEngineShuttingDownIsNotAPrune: an engine shutting down stops the
// run's lock and fails to start it again while it still answers pings; the
// run waits for it to go, and says the engine went away, not that a prune
// removed the lock.
func TestEngineShuttingDownIsNotAPrune(t *testing.T) {
	s := newTestBench(t, &script{}, "first", "second")
	held, pings := 0, 0
	s.Kit.Held = func(context.Context) error {
		if held++; held == 2 {
			return errors.New("the lock was removed during the run (docker container prune?)")
		}
		return nil
	}
	s.Kit.Alive = func(context.Context) error {
		if pings++; pings > 3 {
			return errors.New("connection refused")
		}
		return nil
	}
	err := s.bench(t, context.Background(), []string{"first", "second"})
	var gone *HostGoneError
	if !errors.As(err, &gone) || pings != 4 {
		t.Fatalf("Benchmark = %v after %d pings, want a HostGoneError on the 4th", err, pings)
	}
	measured := 0
	for _, srv := range s.Run.Cells[0].Servers {
		measured += len(srv.Rounds)
	}
	if measured != 1 || s.Run.State != record.Interrupted {
		t.Errorf("%d rounds measured, state %q: want the one before the lock check that failed, interrupted", measured, s.Run.State)
	}
}

// TestResumeFinishesAnInterruptedRun: the record of an interrupted run,
// resumed, keeps its finished rounds and measures the others, in the order
// its seed draws.
func TestResumeFinishesAnInterruptedRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	loads := 0
	sc := &script{onLoad: func(string) {
		if loads++; loads == 3 { // round 2 of the server first in its order
			cancel()
		}
	}}
	s := newTestBench(t, sc, "first", "second")
	s.Run.Seed = 3
	s.Kit.Config.CapacityTool = "off" // one load a round, to count them
	if err := s.bench(t, ctx, []string{"first", "second"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Benchmark = %v", err)
	}
	saved, err := record.Load(s.Kit.Folder.Dir)
	if err != nil {
		t.Fatal(err)
	}
	saved.Resume()
	cut := saved.Order[1][0].Server
	if first := saved.Cells[0].Servers[slices.IndexFunc(saved.Cells[0].Servers, func(s record.Server) bool { return s.Name == cut })]; len(first.Rounds) != 1 {
		t.Fatalf("the cut-short round was not dropped: %+v", first.Rounds)
	}
	interrupted := slices.Clone(saved.Order)
	// What is left: rounds 2 and 3 of both (second has round 1).
	if n := Planned(saved.Cells, []string{"first", "second"}, 3); n != 4 {
		t.Errorf("planned %d rounds to resume, want 4", n)
	}
	if n := Planned(nil, []string{"first", "second"}, 3); n != 0 {
		t.Errorf("planned %d rounds without cells", n)
	}
	sc.onLoad = nil
	before := len(sc.loads())
	s.Run = &saved
	if err := s.bench(t, context.Background(), []string{"first", "second"}); err != nil {
		t.Fatal(err)
	}
	resumed := ghzLoads(sc.loads()[before:])
	if want := order(s.Run)[2:]; !slices.Equal(resumed, want) || !slices.Equal(s.Run.Order[1], interrupted[1]) || s.Run.Seed != 3 { // rounds 2 and 3
		t.Errorf("resumed loads %v, want %v; order %v, was %v", resumed, want, s.Run.Order, interrupted)
	}
	for _, srv := range s.Run.Cells[0].Servers {
		if !srv.Ranked() || len(srv.Rounds) != 3 || srv.Rounds[2].Round != 3 {
			t.Errorf("%s after resuming: %+v", srv.Name, srv.Rounds)
		}
	}
	if s.Run.State != record.Finished {
		t.Errorf("the resumed run ended %q, want finished", s.Run.State)
	}
}

// TestOrderIsRandomAndReplaysFromTheSeed: rounds visit the servers in an
// order drawn afresh each round; GRPC_BENCHMARK_SEED replays it.
func TestOrderIsRandomAndReplaysFromTheSeed(t *testing.T) {
	servers := []string{"a", "b", "c", "d", "e"}
	run := func(seed string) *record.Run {
		sc := &script{}
		s := newTestBench(t, sc, servers...)
		s.Kit.Config.Seed = seed
		if err := s.bench(t, context.Background(), servers); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ghzLoads(sc.loads()), order(s.Run)) {
			t.Errorf("loads %v, recorded %v", ghzLoads(sc.loads()), order(s.Run))
		}
		bench, err := os.ReadFile(s.Kit.Folder.Path("bench.txt"))
		if want := "random order from seed " + seed + "; GRPC_BENCHMARK_SEED=" + seed + " replays it"; err != nil || !bytes.Contains(bench, []byte(want)) {
			t.Errorf("bench.txt does not say how to replay the order (%v):\n%s", err, bench)
		}
		return s.Run
	}
	first, again, other := run("42"), run("42"), run("43")
	if first.Seed != 42 || !slices.Equal(order(first), order(again)) {
		t.Errorf("seed 42 twice: %v, then %v", order(first), order(again))
	}
	if slices.Equal(order(first), order(other)) {
		t.Errorf("seeds 42 and 43 drew the same order %v", order(first))
	}
	if slices.Equal(first.Order[0], first.Order[1]) && slices.Equal(first.Order[1], first.Order[2]) {
		t.Errorf("every round in the same order: %v", first.Order)
	}
	saved, err := record.Load(newTestBenchFolder(t, first))
	if err != nil || saved.Seed != 42 || len(saved.Order) != 3 {
		t.Errorf("results.json: seed %d, order %v (%v)", saved.Seed, saved.Order, err)
	}
}

// newTestBenchFolder saves a run to a folder of its own and returns it.
func newTestBenchFolder(t *testing.T, run *record.Run) string {
	t.Helper()
	f := record.Folder{Dir: t.TempDir()}
	if err := report.Save(f, *run); err != nil {
		t.Fatal(err)
	}
	return f.Dir
}

// autoBench is a run of GRPC_BENCHMARK_ROUNDS=auto over servers whose
// ghz req/s are: fast 5000 in every round; x about 1000 and y 17% faster,
// swinging ±10% against each other round by round, so that their pair is
// never separated in 12 rounds yet never futile (a gap of 16–18% at that
// swing is, stats.Analyse says).
func autoBench(t *testing.T, extra map[string]string) *testBench {
	t.Helper()
	sc := &script{rate: func(server string, n int) float64 {
		swing := []float64{1.1, 0.9}[n%2]
		switch server {
		case "fast":
			return 5000
		case "x":
			return 1000 * swing
		}
		return 1170 / swing
	}}
	s := newTestBench(t, sc, "fast", "x", "y")
	vars := map[string]string{"GRPC_IMAGE_NAME": "test", "GRPC_BENCHMARK_WARMUP": "1ms", "GRPC_BENCHMARK_DURATION": "3ms", "GRPC_BENCHMARK_ROUNDS": "auto"}
	for k, v := range extra {
		vars[k] = v
	}
	cfg, err := config.Parse(vars, config.Offered(load.Runners()))
	if err != nil {
		t.Fatal(err)
	}
	s.Kit.Config = cfg
	return s
}

// runAutoFastXY runs fast, x and y under auto: fast stops at the first
// look, x and y, whose pair stays open, go on to the last.
func runAutoFastXY(t *testing.T, s *testBench) {
	t.Helper()
	if err := s.bench(t, context.Background(), []string{"fast", "x", "y"}); err != nil {
		t.Fatal(err)
	}
	rounds := map[string]int{}
	for _, srv := range s.Run.Cells[0].Servers {
		rounds[srv.Name] = len(srv.Rounds)
	}
	if rounds["fast"] != 3 || rounds["x"] != 12 || rounds["y"] != 12 {
		t.Errorf("rounds %v, want fast 3, x and y 12", rounds)
	}
}

// TestAutoMeasuresOnlyTheServersOfOpenPairs: after the first look, fast is
// separated from both others and stops; x and y go on to the last look.
func TestAutoMeasuresOnlyTheServersOfOpenPairs(t *testing.T) {
	s := autoBench(t, nil)
	runAutoFastXY(t, s)
	var looks []int
	for _, l := range s.Run.Looks {
		looks = append(looks, l.Rounds)
	}
	if !slices.Equal(looks, []int{3, 6, 9, 12}) || !slices.Equal(slices.Sorted(slices.Values(s.Run.Looks[0].Continuing[0])), []string{"x", "y"}) {
		t.Errorf("looks %v, continuing after the first %v", looks, s.Run.Looks[0].Continuing)
	}
	if s.Run.StopReason != "the last look was reached" || s.Run.Design == nil || s.Run.Design.Fixed {
		t.Errorf("stop reason %q, design %+v", s.Run.StopReason, s.Run.Design)
	}
	last := s.Run.Looks[len(s.Run.Looks)-1].Cells[0]
	verdicts := map[string]string{}
	for _, p := range last.Pairs {
		pair := []string{p.A, p.B}
		slices.Sort(pair)
		verdicts[strings.Join(pair, "-")] = p.Verdict + "@" + strconv.Itoa(p.Look)
	}
	if want := map[string]string{"fast-x": "separated@3", "fast-y": "separated@3", "x-y": "unresolved@12"}; !maps.Equal(verdicts, want) {
		t.Errorf("verdicts %v, want %v", verdicts, want)
	}
	for r, round := range s.Run.Order {
		if want := map[bool]int{true: 3, false: 2}[r < 3]; len(round) != want {
			t.Errorf("round %d visited %v", r+1, round)
		}
	}
}

// TestAutoGoesOnForOpenCapacityPairs: x and y are client-bound, so the
// load ranking tests no pair of theirs; their capacity figures swing
// against each other, and that open pair keeps them going to the last
// look while fast stops at the first.
func TestAutoGoesOnForOpenCapacityPairs(t *testing.T) {
	s := autoBench(t, nil)
	sc := s.script
	sc.saturate = map[string]bool{"x": true, "y": true}
	sc.capacity = func(server string, n int) float64 {
		if server == "fast" {
			return 15000
		}
		return sc.rate(server, n) * 3
	}
	runAutoFastXY(t, s)
	if l := s.Run.Looks[0]; len(l.Capacity) != 1 || len(l.Capacity[0].Pairs) != 3 {
		t.Errorf("the first look does not record the capacity ranking's pairs: %+v", l.Capacity)
	}
}

// TestAutoGoesOnPerCell: x and y are an open pair over one connection
// (profile 1b) and twice apart over ten (2a): they go on to the last look
// in the first cell and stop at the first look in the second, each cell
// keeping its own set of the servers that go on.
func TestAutoGoesOnPerCell(t *testing.T) {
	s := autoBench(t, map[string]string{"GRPC_LOAD_PROFILE": "1b,2a"})
	s.Run.Cells = plan.Cells(s.Kit.Config, 2, 2)
	open := s.script.rate
	s.script.cellRate = func(server string, connections, n int) float64 {
		if connections == 1 {
			return open(server, n)
		}
		return map[string]float64{"fast": 5000, "x": 1000, "y": 2000}[server]
	}
	if err := s.bench(t, context.Background(), []string{"fast", "x", "y"}); err != nil {
		t.Fatal(err)
	}
	for _, cell := range s.Run.Cells {
		rounds := map[string]int{}
		for _, srv := range cell.Servers {
			rounds[srv.Name] = len(srv.Rounds)
		}
		want := map[string]int{"fast": 3, "x": 12, "y": 12}
		if cell.Connections == 10 {
			want = map[string]int{"fast": 3, "x": 3, "y": 3}
		}
		if !maps.Equal(rounds, want) {
			t.Errorf("cell of %d connections: rounds %v, want %v", cell.Connections, rounds, want)
		}
	}
}

// TestAutoStopsAtTheBudget: a budget the first look already spent ends
// the run there, saying why, the open pair unresolved.
func TestAutoStopsAtTheBudget(t *testing.T) {
	s := autoBench(t, map[string]string{"GRPC_BENCHMARK_BUDGET": "1ms"})
	if err := s.bench(t, context.Background(), []string{"fast", "x", "y"}); err != nil {
		t.Fatal(err)
	}
	for _, srv := range s.Run.Cells[0].Servers {
		if len(srv.Rounds) != 3 {
			t.Errorf("%s: %d rounds, want 3", srv.Name, len(srv.Rounds))
		}
	}
	if len(s.Run.Looks) != 1 || !strings.HasPrefix(s.Run.StopReason, "GRPC_BENCHMARK_BUDGET=1ms") {
		t.Errorf("looks %d, stop reason %q", len(s.Run.Looks), s.Run.StopReason)
	}
	bench, err := os.ReadFile(s.Kit.Folder.Path("bench.txt"))
	if err != nil || !bytes.Contains(bench, []byte("2 pairs separated, 0 equivalent, 0 stopped as futile (under 20% conditional power to be separated by the last look), 1 unresolved; GRPC_BENCHMARK_BUDGET=1ms")) {
		t.Errorf("bench.txt does not say why the rounds stopped (%v):\n%s", err, bench)
	}
}

// mustNew builds the benchmark of s.
func mustNew(t *testing.T, s *testBench) *Bench {
	t.Helper()
	b, err := New(s.Options, *s.Run)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNewRefusesAToolForAKindItDoesNotDrive: a scenario of a call kind the
// load tool does not drive is a bad setting, refused before anything is
// built, naming the setting, the tool and the kind.
func TestNewRefusesAToolForAKindItDoesNotDrive(t *testing.T) {
	o := newTestBench(t, &script{}, "a")
	streaming := *o.Kit.Scenarios["complex_proto"]
	streaming.Kind = scenario.Kind("duplex") // a kind no tool drives: every runner drives the four of gRPC
	o.Kit.Scenarios = map[string]*scenario.Scenario{streaming.Name: &streaming}
	_, err := New(o.Options, *o.Run)
	var bad *config.Error
	if !errors.As(err, &bad) || bad.Var != "GRPC_LOAD_TOOL" || bad.Value != "ghz" || !strings.Contains(bad.Reason, "not duplex") {
		t.Errorf("New = %v, want GRPC_LOAD_TOOL=ghz refused for a duplex scenario", err)
	}
	if _, err := os.Stat(o.Kit.Folder.Path("grpcbench-build.log")); !os.IsNotExist(err) {
		t.Errorf("something was built: %v", err)
	}
}

// TestUnsupportedCellIsNeitherBuiltNorRun: a server whose server.json says
// its stack does not serve the cell's scenario is recorded as not
// supported, with the reason; nothing of it is built or loaded, it is not
// ranked, and the other servers run as ever.
func TestUnsupportedCellIsNeitherBuiltNorRun(t *testing.T) {
	var built []string
	sc := &script{onBuild: func(tag string) { built = append(built, tag) }}
	s := newTestBench(t, sc, "good", "nostreams")
	root := s.Kit.Catalog.Root
	if err := os.WriteFile(filepath.Join(root, "servers", "nostreams", catalog.ManifestFile), []byte(`{"stack": "Go", "library": "x", "version": "1",
		"pinned": {"unchecked": "a test"}, "unsupported": {"complex_proto": "no such method in its stack"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	s.Kit.Catalog, s.Kit.Builder.Catalog, s.Kit.ClientBuilder.Catalog = cat, cat, cat
	if err := s.bench(t, context.Background(), []string{"good", "nostreams"}); err != nil {
		t.Fatal(err)
	}
	got := s.Run.Cells[0].Servers
	if len(got) != 2 || !got[0].Ranked() || got[1].Unsupported != "no such method in its stack" || got[1].Ranked() ||
		got[1].Failure != nil || len(got[1].Rounds) != 0 {
		t.Fatalf("servers %+v: want good ranked, nostreams not supported, with no failure nor round", got)
	}
	if !slices.ContainsFunc(built, func(tag string) bool { return strings.Contains(tag, "good") }) {
		t.Errorf("built %q: not even the supported server", built)
	}
	for _, tag := range built {
		if strings.Contains(tag, "nostreams") {
			t.Errorf("built %s", tag)
		}
	}
	for _, l := range sc.loads() {
		if strings.HasPrefix(l, "nostreams/") {
			t.Errorf("loaded %s", l)
		}
	}
	bench, err := os.ReadFile(s.Kit.Folder.Path("bench.txt"))
	if err != nil || !bytes.Contains(bench, []byte("! nostreams: not supported: no such method in its stack")) {
		t.Errorf("bench.txt does not list the cell as not supported (%v):\n%s", err, bench)
	}
}

// TestAResumedAutoRunRecordsEachLookOnce: under auto, a run interrupted
// after its first look and resumed looks again at its first look's
// rounds; the record keeps each look once, in order.
func TestAResumedAutoRunRecordsEachLookOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := autoBench(t, nil)
	loads := 0
	s.script.onLoad = func(string) {
		if loads++; loads == 2*(3*3)+2 { // in round 4, the first after the first look
			cancel()
		}
	}
	if err := s.bench(t, ctx, []string{"fast", "x", "y"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Benchmark = %v, want an interruption", err)
	}
	if len(s.Run.Looks) != 1 || s.Run.Looks[0].Rounds != 3 {
		t.Fatalf("looks before the resume %+v, want the first", s.Run.Looks)
	}
	s.script.onLoad = nil
	s.Run.Resume()
	if err := s.bench(t, context.Background(), []string{"fast", "x", "y"}); err != nil {
		t.Fatal(err)
	}
	var looks []int
	for _, l := range s.Run.Looks {
		looks = append(looks, l.Rounds)
	}
	if !slices.Equal(looks, []int{3, 6, 9, 12}) {
		t.Errorf("looks %v, want each of 3, 6, 9 and 12 once", looks)
	}
}
