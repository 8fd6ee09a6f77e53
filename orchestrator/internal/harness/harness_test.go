package harness_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend/fake"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/harness"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// roles are the behaviours of a test's containers by role; a role not
// listed exits 0 at once.
type roles map[string]fake.Behaviour

// startLine is what a server of the tests prints at start, for 1 CPU.
const startLine = "grpcbench-server: workers=1\n"

// script makes a fake host's containers behave as their role says, the
// conformance gate passing and a running server printing startLine unless
// given otherwise.
func (r roles) script(spec backend.ContainerSpec) fake.Behaviour {
	role := spec.Labels[backend.RoleLabel]
	if b, ok := r[role]; ok {
		if role == "server" && b.Runs && b.Stdout == "" {
			b.Stdout = startLine
		}
		return b
	}
	if role == "rtt" {
		return fake.Behaviour{Stdout: `{"median": 1000000}`}
	}
	if role == "conform" {
		return fake.Behaviour{Stdout: verdict(probe.Verdict{Passed: true, Checks: []probe.Check{{Name: "echo", Passed: true}}})}
	}
	return fake.Behaviour{}
}

func verdict(v probe.Verdict) string {
	js, _ := json.Marshal(v)
	return string(js)
}

func serverSpec(t *testing.T) harness.ServerSpec {
	t.Helper()
	sc, err := scenario.Load(context.Background(), filepath.Join("..", "..", "..", "scenarios", "complex_proto"))
	if err != nil {
		t.Fatal(err)
	}
	return harness.ServerSpec{Name: "s", Image: "img:s", Scenario: sc, CPUs: 1, RAM: config.Bytes(512 << 20), ReadyTimeout: time.Second,
		Folder: record.Folder{Dir: t.TempDir()}}
}

// oneHost is a suite with servers and clients on one fake host.
func oneHost(r roles) (*harness.Harness, *fake.Host) {
	h := fake.New("fake://one", backend.Facts{CPUs: 4})
	h.Script = r.script
	return harness.New(harness.Options{Servers: h, Labels: map[string]string{backend.RunLabel: "run"}, ServerCPUs: 4, Images: harness.Images{Client: "img:client"}}), h
}

// up brings the server up and always takes it down again.
func up(t *testing.T, s *harness.Harness, spec harness.ServerSpec) (*harness.Instance, error) {
	t.Helper()
	srv, err := s.Up(context.Background(), spec)
	t.Cleanup(func() { srv.Down(context.Background()) })
	return srv, err
}

// measured brings the server up and loads it once with h2.
func measured(t *testing.T, s *harness.Harness, spec harness.ServerSpec) *harness.Instance {
	t.Helper()
	srv, err := up(t, s, spec)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := load.Lookup("h2")
	if _, err := srv.Measure(context.Background(), h2, loadSpec(), "load"); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestServerThatFailsToStart: a start the host refuses fails the start
// phase; a server that exits at once, or is killed for its memory, fails
// readiness saying how it ended; nothing is left on the host.
func TestServerThatFailsToStart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		server    fake.Behaviour
		phase     string
		reason    string
		serverLog bool
	}{
		{"refused", fake.Behaviour{StartErr: errors.New("no such image img:s")}, "start", "no such image img:s", false},
		{"exits", fake.Behaviour{Exit: 3, Stderr: "bind: address in use\n"}, "readiness", "server exited with code 3 (see server.log)", true},
		{"out of memory", fake.Behaviour{Exit: 137, OOMKilled: true}, "readiness", "server was killed for going over GRPC_SERVER_RAM=512m", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, h := oneHost(roles{"server": tc.server})
			spec := serverSpec(t)
			srv, err := s.Up(context.Background(), spec)
			srv.Down(context.Background())
			f := harness.FailureOf(err)
			if f.Phase != tc.phase || f.Reason != tc.reason {
				t.Errorf("Up failed in %q with %q, want %q with %q", f.Phase, f.Reason, tc.phase, tc.reason)
			}
			if srv.Conformance != nil {
				t.Error("a server that did not come up has a conformance verdict")
			}
			if left := h.Left(); len(left) > 0 {
				t.Errorf("%d containers left after Down", len(left))
			}
			log, readErr := os.ReadFile(spec.Folder.Path("server.log"))
			if tc.serverLog && (readErr != nil || string(log) != tc.server.Stderr) {
				t.Errorf("server.log = %q, %v; want %q", log, readErr, tc.server.Stderr)
			}
		})
	}
}

// TestGateVerdictKeptAndFailureStops: the gate's verdict is kept on the
// instance; a failing gate fails the conformance phase with its failures.
func TestGateVerdictKeptAndFailureStops(t *testing.T) {
	failing := probe.Verdict{Checks: []probe.Check{{Name: "echo", Detail: "answer is not the echo"}}}
	s, _ := oneHost(roles{"server": {Runs: true}, "conform": {Stdout: verdict(failing)}})
	srv, err := up(t, s, serverSpec(t))
	if f := harness.FailureOf(err); f.Phase != "conformance" || !strings.Contains(f.Reason, "answer is not the echo") {
		t.Errorf("Up = %+v, want a conformance failure naming the check", f)
	}
	if srv.Conformance == nil || srv.Conformance.Passed {
		t.Errorf("verdict = %+v, want the failing one kept", srv.Conformance)
	}
	var names []string
	for _, p := range srv.Phases {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, " "); got != "start readiness conformance" {
		t.Errorf("phases = %s, want start readiness conformance", got)
	}
}

// TestClientOutputIsReadThroughALimit: a client that prints more than
// the limit (what a server answers reaches its output) fails with that
// reason, its output neither held nor kept whole.
func TestClientOutputIsReadThroughALimit(t *testing.T) {
	huge := strings.Repeat("x", 17<<20)
	s, _ := oneHost(roles{"server": {Runs: true}, "conform": {Stdout: huge, Stderr: huge}})
	spec := serverSpec(t)
	_, err := up(t, s, spec)
	if f := harness.FailureOf(err); f.Phase != "conformance" || f.Reason != "the conformance gate printed more than 16MiB: its output was not read" {
		t.Errorf("Up = %+v, want the conformance gate's output refused", f)
	}
	for _, name := range []string{"conformance.json", "conformance.log"} {
		if info, err := os.Stat(spec.Folder.Path(name)); err != nil || info.Size() > 16<<20 {
			t.Errorf("%s: %v, %v; want at most 16 MiB kept", name, info.Size(), err)
		}
	}
}

// TestWorkersChecked: the gate adds the check of the server's start-up
// line, its count against GRPC_SERVER_CPUS rounded up and capped at the
// host's CPUs; a wrong count fails the conformance phase saying so.
func TestWorkersChecked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cpus   config.CPUs
		line   string
		reason string
	}{
		{"rounded up", 1.5, "grpcbench-server: workers=2\n", ""},
		{"capped at the host's CPUs", 6, "grpcbench-server: workers=4\n", ""},
		{"single-threaded", 2, "grpcbench-server: workers=1 (single-threaded)\n", ""},
		{"the wrong count", 2, "grpcbench-server: workers=1\n", "workers: the server started workers=1, where GRPC_SERVER_CPUS=2 on 4 CPUs asks for 2"},
		{"no line", 2, "listening on 0.0.0.0:50051\n", "workers: the server printed no start-up line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := oneHost(roles{"server": {Runs: true, Stdout: tc.line}})
			spec := serverSpec(t)
			spec.CPUs = tc.cpus
			srv, err := up(t, s, spec)
			switch {
			case tc.reason == "" && err != nil:
				t.Errorf("Up = %v, want it up", err)
			case tc.reason != "" && (err == nil || !strings.Contains(harness.FailureOf(err).Reason, tc.reason)):
				t.Errorf("Up = %v, want a failure containing %q", err, tc.reason)
			}
			if c := srv.Conformance; c == nil || c.Checks[len(c.Checks)-1].Name != probe.WorkersCheckName {
				t.Errorf("verdict = %+v, want the workers check last", c)
			}
		})
	}
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(seconds float64) time.Time { return t0.Add(time.Duration(seconds * float64(time.Second))) }

// busy is a reading of [from, to] seconds with cores busy all through.
func busy(from, to, cores float64, mem uint64) backend.Sample {
	nanos := uint64((to - from) * cores * 1e9)
	return backend.Sample{PreRead: at(from), Read: at(to), CPUNanos: nanos, CPUPercent: cores * 100, MemoryBytes: mem}
}

func loadSpec() load.Spec {
	return load.Spec{Connections: 1, Concurrency: 1, Warmup: time.Second, Duration: 2 * time.Second}
}

// loadReport is what the load client prints: a window of [1, 3] s.
func loadReport() string {
	js, _ := json.Marshal(load.Result{Tool: "h2", Start: at(1), End: at(3), Requests: 200, OK: 200, RPS: 100})
	return string(js)
}

// TestStatsCutToTheWindow: the server's and the client's samples are cut
// to the load's window, a straddling sample counting for its share, and
// the server's readings are kept in its samples file, in the record's form.
func TestStatsCutToTheWindow(t *testing.T) {
	const mib = 1 << 20
	serverSamples := []backend.Sample{busy(0, 1, 2, 10*mib), busy(1, 2, 1, 20*mib), busy(2, 3.5, 0.5, 30*mib), busy(3.5, 5, 2, 40*mib)}
	s, _ := oneHost(roles{
		"server": {Runs: true, Samples: serverSamples},
		"load":   {Stdout: loadReport(), Samples: []backend.Sample{busy(0.5, 1.5, 1, mib), busy(1.5, 2.5, 1, mib)}},
	})
	spec := serverSpec(t)
	srv, err := up(t, s, spec)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := load.Lookup("h2")
	m, err := srv.Measure(context.Background(), h2, loadSpec(), "load")
	if err != nil {
		t.Fatal(err)
	}
	// In [1, 3]: 1 s at one core, then 1 s of the 1.5 s at half a core.
	if m.Server.Samples != 2 || math.Abs(m.Server.CPUSeconds-1.5) > 1e-9 || math.Abs(m.Server.CPUAvgPercent-75) > 1e-9 {
		t.Errorf("server = %+v, want 2 samples, 1.5 CPU seconds, 75%% on average", m.Server)
	}
	if m.Server.MemoryMaxBytes != 30*mib {
		t.Errorf("server memory max = %d, want the window's 30 MiB, not a later reading's", m.Server.MemoryMaxBytes)
	}
	// The client's samples cover [1, 2.5] of the window: 1.5 s at one core.
	if m.Client.Samples != 2 || math.Abs(m.Client.CPUSeconds-1.5) > 1e-9 {
		t.Errorf("client = %+v, want 2 samples and 1.5 CPU seconds", m.Client)
	}
	if m.Load == nil || m.Load.RPS != 100 {
		t.Errorf("load = %+v, want the client's report", m.Load)
	}
	raw, err := os.ReadFile(spec.Folder.Path(record.SamplesFile("load", "server")))
	if err != nil {
		t.Fatal(err)
	}
	var kept []record.Sample
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var sm record.Sample
		if err := json.Unmarshal([]byte(line), &sm); err != nil {
			t.Fatalf("samples file line %q: %v", line, err)
		}
		kept = append(kept, sm)
	}
	if len(kept) != len(serverSamples) || kept[1] != record.SampleOf(serverSamples[1]) {
		t.Errorf("samples file holds %+v, want the %d readings in the record's form", kept, len(serverSamples))
	}
}

// TestCompanionFitsEveryClient: the server's spec describes the container
// its clients run in, for a host that makes it with the server (one pod):
// the client image with the load client's limits and containment, which
// every client started beside the server stays within.
func TestCompanionFitsEveryClient(t *testing.T) {
	s, h := oneHost(roles{"server": {Runs: true}, "load": {Stdout: loadReport()}})
	spec := serverSpec(t)
	spec.ClientCPUs, spec.Placement.ClientCPUSet = 1.5, "2-3"
	srv, err := up(t, s, spec)
	if err != nil {
		t.Fatal(err)
	}
	ls := loadSpec()
	ls.CPUs = 1.5
	h2, _ := load.Lookup("h2")
	if _, err := srv.Measure(context.Background(), h2, ls, "load"); err != nil {
		t.Fatal(err)
	}
	started := h.Containers()
	c := started[0].Spec().Companion
	if c == nil {
		t.Fatal("the server's spec has no companion")
	}
	if c.Image != "img:client" || c.NanoCPUs != 1.5e9 || c.CPUSet != "2-3" || c.InputDir != load.InputDir || c.User == "" || !c.ReadOnly || c.PidsLimit == 0 {
		t.Errorf("companion = %+v, want the client image with the load client's CPUs and cores, contained", c)
	}
	for _, cl := range started[1:] {
		got := cl.Spec()
		if got.Image != c.Image || got.NetworkOf != started[0].ID() || got.Memory > c.Memory || got.NanoCPUs != 0 && got.NanoCPUs != c.NanoCPUs ||
			got.User != c.User || got.InputDir != c.InputDir || got.PidsLimit > c.PidsLimit {
			t.Errorf("%s client %+v does not fit the companion %+v", cl.Role(), got, c)
		}
	}
	if len(started) != 4 { // server, probe, gate, load
		t.Errorf("%d containers started, want 4", len(started))
	}
}

// TestOOMKills: the kills in the server's container are counted; a load
// client killed for its memory fails the measurement saying so.
func TestOOMKills(t *testing.T) {
	s, _ := oneHost(roles{"server": {Runs: true, OOMKills: 2}, "load": {Exit: 137, OOMKilled: true, Stderr: "fatal error: runtime: out of memory\n"}})
	srv, err := up(t, s, serverSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := load.Lookup("h2")
	_, err = srv.Measure(context.Background(), h2, loadSpec(), "load")
	if f := harness.FailureOf(err); f.Phase != "load" || f.Reason != "the load client was killed for going over its memory limit of 1GiB (see load.log)" {
		t.Errorf("Measure failed with %+v, want the load client's OOM kill", f)
	}
	if n := srv.OOMKills(); n != 2 {
		t.Errorf("OOMKills = %d, want 2", n)
	}
}

// TestCancelRemovesContainers: a run interrupted while the load runs
// stops the measurement as interrupted, and Down removes every container,
// on both hosts, even with the run's context cancelled.
func TestCancelRemovesContainers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := roles{"server": {Runs: true}, "load": {Runs: true}}
	servers, clients := fake.New("fake://servers", backend.Facts{}), fake.New("fake://clients", backend.Facts{})
	servers.Script = r.script
	clients.Script = func(spec backend.ContainerSpec) fake.Behaviour {
		if spec.Labels[backend.RoleLabel] == "load" {
			cancel() // the user presses ^C once the load has started
		}
		return r.script(spec)
	}
	s := harness.New(harness.Options{Servers: servers, Clients: clients, Remote: &harness.Remote{IP: "192.0.2.1"}, Images: harness.Images{Client: "img:client"}})
	srv, err := s.Up(ctx, serverSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	if srv.Address != "192.0.2.1:40051" || srv.RoundTrip == nil || *srv.RoundTrip != time.Millisecond {
		t.Errorf("address = %s, round trip %v; want where the host published the port, 1ms", srv.Address, srv.RoundTrip)
	}
	h2, _ := load.Lookup("h2")
	_, err = srv.Measure(ctx, h2, loadSpec(), "load")
	if f := harness.FailureOf(err); f.Phase != "load" || f.Reason != "interrupted" || !f.CutShort {
		t.Errorf("Measure = %+v, want the load interrupted", f)
	}
	srv.Down(ctx)
	for _, h := range []*fake.Host{servers, clients} {
		if left := h.Left(); len(left) > 0 {
			t.Errorf("%s: %d containers left after Down", h.Address(), len(left))
		}
	}
	if n := len(servers.Containers()); n != 1 {
		t.Errorf("the servers' host started %d containers, want the server only", n)
	} else if servers.Containers()[0].Spec().Companion != nil {
		t.Error("a server whose clients run on another host has a companion")
	}
	for _, c := range clients.Containers() {
		if !c.Spec().HostNetwork {
			t.Errorf("client %s is not on its host's network", c.Role())
		}
	}
}

// TestTLSServerAndClients: a TLS server gets the run's certificate chain
// and key in a volume of its own, named by GRPC_TLS_CERT and GRPC_TLS_KEY;
// the probe, the gate and the load client get the CA that signed it and
// are told to verify against it; every server of the suite shares the CA.
func TestTLSServerAndClients(t *testing.T) {
	s, h := oneHost(roles{"server": {Runs: true}, "load": {Stdout: loadReport()}})
	spec := serverSpec(t)
	spec.TLS = true
	measured(t, s, spec)
	if _, err := up(t, s, spec); err != nil {
		t.Fatal(err)
	}
	byRole := map[string][]backend.ContainerSpec{}
	for _, c := range h.Containers() {
		byRole[c.Spec().Labels[backend.RoleLabel]] = append(byRole[c.Spec().Labels[backend.RoleLabel]], c.Spec())
	}
	server := byRole["server"][0]
	env := strings.Join(server.Env, " ")
	if !strings.Contains(env, "GRPC_TLS_CERT=/tls/server.crt") || !strings.Contains(env, "GRPC_TLS_KEY=/tls/server.key") || server.InputDir != "/tls" {
		t.Fatalf("server env %q, input dir %q: want the certificate and key under /tls", env, server.InputDir)
	}
	pair, err := tls.X509KeyPair(server.Files["/tls/server.crt"], server.Files["/tls/server.key"])
	if err != nil {
		t.Fatalf("the server's files are no certificate and key: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"probe", "conform", "load"} {
		c := byRole[role][0]
		ca := c.Files["/input/tls/ca.crt"]
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(ca) {
			t.Fatalf("%s has no CA certificate", role)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: roots}); err != nil {
			t.Errorf("%s's CA does not verify the server: %v", role, err)
		}
		args := strings.Join(c.Cmd, " ")
		if role != "load" && !strings.Contains(args, "--tls-ca /input/tls/ca.crt") {
			t.Errorf("%s runs %q, without --tls-ca", role, args)
		}
		if role == "load" && !strings.Contains(string(c.Files[load.SpecFile]), `"ca_file":"/input/tls/ca.crt"`) {
			t.Errorf("load spec %s names no CA file", c.Files[load.SpecFile])
		}
	}
	if again := byRole["server"][1].Files["/tls/server.crt"]; string(again) != string(server.Files["/tls/server.crt"]) {
		t.Error("the second server got another certificate: one CA per run")
	}
}

// TestCPUSetsReadBack: the cores the server and its load client ran on
// are what their host reads back, not the placement's, which it may not
// have applied (Kubernetes' CPU manager picks them); a host that reads
// none back leaves them empty.
func TestCPUSetsReadBack(t *testing.T) {
	for _, c := range []struct{ server, client string }{{"1", "0"}, {"", ""}} {
		s, _ := oneHost(roles{"server": {Runs: true, CPUSet: c.server}, "load": {Stdout: loadReport(), CPUSet: c.client}})
		spec := serverSpec(t)
		spec.Placement = record.Placement{ServerCPUSet: "0", ClientCPUSet: "1"}
		srv := measured(t, s, spec)
		if srv.ServerCPUSet != c.server || srv.ClientCPUSet != c.client {
			t.Errorf("ran on %q and %q, want %q and %q: what the host read back", srv.ServerCPUSet, srv.ClientCPUSet, c.server, c.client)
		}
	}
}
