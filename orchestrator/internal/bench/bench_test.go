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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/docker"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
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
	// onLoad is called when a load client starts.
	onLoad  func(server string)
	started []*fakeContainer
	loaded  map[string]bool
}

func (f *fakeEngine) ImageID(context.Context, string) (string, error) { return "sha256:base", nil }
func (f *fakeEngine) Pull(context.Context, string, io.Writer) error   { return nil }
func (f *fakeEngine) Import(context.Context, io.Reader, string, []string) error {
	return nil
}

func (f *fakeEngine) Build(_ context.Context, _ io.Reader, opts docker.BuildOptions, _ io.Writer) (string, error) {
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

func (c *fakeContainer) Logs(_ context.Context, stdout, stderr io.Writer) error {
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
		return json.NewEncoder(stdout).Encode(load.Result{Engine: "fake", Start: now.Add(-time.Second), End: now,
			Requests: 1000, OK: 1000, Statuses: map[string]uint64{"OK": 1000}, RPS: 1000})
	}
	return nil
}

func (c *fakeContainer) Stats(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("")), nil
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
	cfg, err := config.Parse(map[string]string{"GRPC_IMAGE_NAME": "test"})
	if err != nil {
		t.Fatal(err)
	}
	return &Bench{
		Suite:    &suite.Suite{Engine: eng},
		Builder:  images.Builder{Engine: eng, Catalog: catalog.Catalog{Root: root, Servers: servers}, Name: "test"},
		Config:   cfg,
		Scenario: sc,
		Folder:   report.Folder{Dir: t.TempDir()},
		Run:      &report.Run{ID: "test"},
		Out:      io.Discard,
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
	want := map[string]string{"broken_build": "build", "never_ready": "readiness", "wrong_echo": "conformance", "crashes": "load", "good": ""}
	if len(s.Run.Servers) != len(want) {
		t.Fatalf("%d servers recorded, want %d", len(s.Run.Servers), len(want))
	}
	for _, srv := range s.Run.Servers {
		phase := ""
		if srv.Failure != nil {
			phase = srv.Failure.Phase
		}
		if phase != want[srv.Name] {
			t.Errorf("%s failed in %q, want %q (%+v)", srv.Name, phase, want[srv.Name], srv.Failure)
		}
	}
	if reason := s.Run.Servers[2].Failure.Reason; !strings.Contains(reason, "name: sent a, got b") || s.Run.Servers[2].Conformance == nil {
		t.Errorf("a wrong echo is not explained: %q, verdict %+v", reason, s.Run.Servers[2].Conformance)
	}
	if reason := s.Run.Servers[3].Failure.Reason; !strings.Contains(reason, "GRPC_SERVER_RAM") {
		t.Errorf("an OOM kill is not explained: %q", reason)
	}
	if s.Run.Servers[4].Load == nil || s.Run.Servers[4].Load.RPS != 1000 || !s.Run.Servers[4].Conformance.Passed {
		t.Errorf("the good server has no load result or verdict: %+v", s.Run.Servers[4])
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

func TestInterruptionStopsTheRunAndKeepsWhatFinished(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng := &fakeEngine{onLoad: func(server string) {
		if server == "second" {
			cancel()
		}
	}}
	s := newTestBench(t, eng, "first", "second", "third")
	err := s.Benchmark(ctx, []string{"first", "second", "third"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Benchmark = %v, want context.Canceled", err)
	}
	if !s.Run.Interrupted || len(s.Run.Servers) != 2 {
		t.Fatalf("interrupted %v with %d servers recorded, want true and 2", s.Run.Interrupted, len(s.Run.Servers))
	}
	if s.Run.Servers[0].Failure != nil || s.Run.Servers[1].Failure == nil || s.Run.Servers[1].Failure.Reason != "interrupted" {
		t.Errorf("first %+v, second %+v", s.Run.Servers[0].Failure, s.Run.Servers[1].Failure)
	}
	if left := eng.notRemoved(); len(left) > 0 {
		t.Errorf("containers not removed: %v", left)
	}
	var saved report.Run
	js, err := os.ReadFile(s.Folder.Path("results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &saved); err != nil || !saved.Interrupted || len(saved.Servers) != 2 {
		t.Errorf("results.json does not record the interruption: %v %+v", err, saved)
	}
}
