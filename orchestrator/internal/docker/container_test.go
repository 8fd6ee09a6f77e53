package docker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/mount"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// contained is a server's spec as the suite contains it.
func contained(image string) backend.ContainerSpec {
	return backend.ContainerSpec{
		Image: image, Cmd: []string{"serve"}, Env: []string{"A=1"}, Labels: map[string]string{backend.RunLabel: "r1"},
		NanoCPUs: 1e9, CPUSet: "1", Memory: 512 << 20, NoNetwork: true,
		User: "65534:65534", ReadOnly: true, Tmpfs: map[string]string{"/tmp": "size=64m"}, VolumeTmpfs: "size=8m", PidsLimit: 4096,
		Files: map[string][]byte{"/tls/server.key": []byte("key")}, InputDir: "/tls",
	}
}

// TestStartSendsTheContainment reads the create request back: the limits,
// the user, the read-only root with its tmpfs mounts and one over each
// VOLUME of the image but the files' own folder, no capabilities, no new
// privileges, bounded logs, the files' volume without the image's copy;
// the files are copied in before the start.
func TestStartSendsTheContainment(t *testing.T) {
	f := newFakeEngine(t)
	f.image("srv:1", "/data", "/var/cache/", "/tls", "/tmp")
	h := f.connect(t)
	c, err := h.Start(context.Background(), contained("srv:1"))
	if err != nil {
		t.Fatal(err)
	}
	got := f.container(c.ID())
	hc, cfg := got.req.HostConfig, got.req.Config
	if !hc.ReadonlyRootfs || !slices.Equal(hc.CapDrop, []string{"ALL"}) || !slices.Equal(hc.SecurityOpt, []string{"no-new-privileges"}) ||
		hc.PidsLimit == nil || *hc.PidsLimit != 4096 || hc.NetworkMode != "none" {
		t.Errorf("containment sent: read-only %v, caps dropped %v, security %v, pids %v, network %q", hc.ReadonlyRootfs, hc.CapDrop, hc.SecurityOpt, hc.PidsLimit, hc.NetworkMode)
	}
	if hc.CpusetCpus != "1" || hc.NanoCPUs != 1e9 || hc.Memory != 512<<20 || hc.MemorySwap != hc.Memory {
		t.Errorf("limits sent: cpuset %q, nano CPUs %d, memory %d, memory+swap %d", hc.CpusetCpus, hc.NanoCPUs, hc.Memory, hc.MemorySwap)
	}
	if cfg.User != "65534:65534" || cfg.Labels[backend.RunLabel] != "r1" || hc.LogConfig.Config["max-size"] == "" {
		t.Errorf("user %q, labels %v, log %v", cfg.User, cfg.Labels, hc.LogConfig)
	}
	wantTmpfs := map[string]string{"/tmp": "size=64m", "/data": "size=8m", "/var/cache": "size=8m"}
	if len(hc.Tmpfs) != len(wantTmpfs) || hc.Tmpfs["/tmp"] != "size=64m" || hc.Tmpfs["/data"] != "size=8m" || hc.Tmpfs["/var/cache"] != "size=8m" {
		t.Errorf("tmpfs %v, want %v: the image's volumes covered, the spec's own kept, the files' folder left to its volume", hc.Tmpfs, wantTmpfs)
	}
	want := []mount.Mount{{Type: mount.TypeVolume, Target: "/tls", VolumeOptions: &mount.VolumeOptions{NoCopy: true}}}
	if len(hc.Mounts) != 1 || hc.Mounts[0].Type != want[0].Type || hc.Mounts[0].Target != "/tls" || hc.Mounts[0].VolumeOptions == nil || !hc.Mounts[0].VolumeOptions.NoCopy {
		t.Errorf("mounts %+v, want %+v", hc.Mounts, want)
	}
	if got.files["/tls/server.key"] != "key" {
		t.Errorf("files copied in: %v", got.files)
	}
	calls := f.called()
	create, archive, start := slices.Index(calls, "POST /containers/create"), slices.Index(calls, "PUT /containers/"+c.ID()+"/archive"),
		slices.Index(calls, "POST /containers/"+c.ID()+"/start")
	if create < 0 || archive < create || start < archive {
		t.Errorf("calls %v: want create, copy, start in that order", calls)
	}
}

// TestStartLeavesAWritableRootAlone: a container with a writable root
// (none of the suite's) keeps its tmpfs as given, and its image is not
// asked for its volumes.
func TestStartLeavesAWritableRootAlone(t *testing.T) {
	f := newFakeEngine(t)
	f.image("srv:1", "/data")
	spec := contained("srv:1")
	spec.ReadOnly, spec.Files = false, nil
	c, err := f.connect(t).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if tmpfs := f.container(c.ID()).req.HostConfig.Tmpfs; len(tmpfs) != 1 {
		t.Errorf("tmpfs %v, want the spec's alone", tmpfs)
	}
	if slices.Contains(f.called(), "GET /images/srv:1/json") {
		t.Error("the image was inspected for a container with a writable root")
	}
}

// TestPublishedServerGetsANetworkOfItsOwn: a published port makes a
// network that masquerades nothing, with the container's labels, the port
// bound on the address given at a port the engine picks, which State
// reads back; removing the container removes the network.
func TestPublishedServerGetsANetworkOfItsOwn(t *testing.T) {
	f := newFakeEngine(t)
	f.image("srv:1")
	spec := contained("srv:1")
	spec.NoNetwork, spec.Publish, spec.PublishIP = false, map[int]int{50051: 0}, "10.231.0.2"
	ctx := context.Background()
	c, err := f.connect(t).Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	hc := f.container(c.ID()).req.HostConfig
	n, ok := f.network(string(hc.NetworkMode))
	if !ok || n.Options["com.docker.network.bridge.enable_ip_masquerade"] != "false" || n.Options["com.docker.network.bridge.enable_icc"] != "false" ||
		n.Labels[backend.RunLabel] != "r1" {
		t.Errorf("network %q: %+v", hc.NetworkMode, n)
	}
	if b := hc.PortBindings["50051/tcp"]; len(b) != 1 || b[0].HostIP != "10.231.0.2" || b[0].HostPort != "" {
		t.Errorf("port bindings %+v, want 50051 on 10.231.0.2 at a port the engine picks", hc.PortBindings)
	}
	st, err := c.State(ctx)
	if err != nil || !st.Running || st.Ports[50051] != 32768 {
		t.Errorf("State = %+v, %v; want running with 50051 at 32768", st, err)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if len(f.networkIDs()) != 0 || f.container(c.ID()) != nil {
		t.Errorf("left after Remove: networks %v, container %v", f.networkIDs(), f.container(c.ID()))
	}
}

// TestStartThatFailsRemovesTheContainer: a container the engine created
// but could not start is removed, with its network.
func TestStartThatFailsRemovesTheContainer(t *testing.T) {
	f := newFakeEngine(t)
	f.image("srv:1")
	f.failStart = true
	spec := contained("srv:1")
	spec.Publish, spec.PublishIP = map[int]int{50051: 0}, "10.231.0.2"
	_, err := f.connect(t).Start(context.Background(), spec)
	if err == nil || !strings.Contains(err.Error(), "exec format error") {
		t.Fatalf("Start = %v, want the engine's reason", err)
	}
	if len(f.containerIDs()) != 0 || len(f.networkIDs()) != 0 {
		t.Errorf("left behind: containers %v, networks %v", f.containerIDs(), f.networkIDs())
	}
}

// TestReapRemovesByLabel: every container with the label, running or not,
// goes, with the networks of the label; others stay.
func TestReapRemovesByLabel(t *testing.T) {
	f := newFakeEngine(t)
	mine := map[string]string{backend.ImagesLabel: "bench"}
	f.add("a", mine, true)
	f.add("b", mine, false)
	other := f.add("c", map[string]string{backend.ImagesLabel: "another"}, true)
	f.addNetwork("n1", mine)
	f.addNetwork("n2", other.req.Labels)
	n, err := f.connect(t).Reap(context.Background(), backend.ImagesLabel, "bench")
	if err != nil || n != 2 {
		t.Fatalf("Reap = %d, %v; want 2", n, err)
	}
	if left := f.containerIDs(); len(left) != 1 || left[0] != other.id {
		t.Errorf("containers left: %v, want c alone", left)
	}
	if left := f.networkIDs(); !slices.Equal(left, []string{"n2"}) {
		t.Errorf("networks left: %v, want n2 alone", left)
	}
}

// TestWaitLogsAndState: Wait returns the exit code once the container
// stops, Logs splits stdout from stderr, State says it ended.
func TestWaitLogsAndState(t *testing.T) {
	f := newFakeEngine(t)
	f.image("cli:1")
	spec := contained("cli:1")
	spec.Files = nil
	ctx := context.Background()
	c, err := f.connect(t).Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	fc := f.container(c.ID())
	fc.stdout, fc.stderr = "result\n", "progress\n"
	go func() {
		time.Sleep(50 * time.Millisecond)
		f.exit(c.ID(), 3)
	}()
	code, err := c.Wait(ctx)
	if err != nil || code != 3 {
		t.Fatalf("Wait = %d, %v; want 3", code, err)
	}
	var stdout, stderr bytes.Buffer
	if err := c.Logs(ctx, false, &stdout, &stderr); err != nil || stdout.String() != "result\n" || stderr.String() != "progress\n" {
		t.Errorf("Logs = %q, %q, %v", stdout.String(), stderr.String(), err)
	}
	if st, err := c.State(ctx); err != nil || st.Running || st.ExitCode != 3 {
		t.Errorf("State = %+v, %v", st, err)
	}
}

// TestStatsStreamsUntilItEnds: each document of the stream after the
// first is a sample, the stream is copied raw as it comes, and its end is
// the end of Stats; a stream the engine cuts off mid-document is an
// error.
func TestStatsStreamsUntilItEnds(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "server-stats.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.TrimSpace(string(data)), "\n")
	f := newFakeEngine(t)
	f.image("srv:1")
	f.stats = docs
	ctx := context.Background()
	c, err := f.connect(t).Start(ctx, contained("srv:1"))
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	var samples []backend.Sample
	if err := c.Stats(ctx, &raw, func(s backend.Sample) { samples = append(samples, s) }); err != nil {
		t.Fatal(err)
	}
	if len(samples) != len(docs)-1 || raw.String() != strings.Join(docs, "\n")+"\n" {
		t.Errorf("%d samples of %d documents, %d raw bytes of %d", len(samples), len(docs), raw.Len(), len(data))
	}
	for _, s := range samples {
		if s.CPUPercent < 0 || s.MemoryBytes == 0 || !s.Read.After(s.PreRead) {
			t.Errorf("sample %+v", s)
		}
	}

	f.stats = append(docs[:3:3], docs[3][:len(docs[3])/2])
	err = c.Stats(ctx, &raw, func(backend.Sample) {})
	if err == nil || !strings.Contains(err.Error(), "stats of container") {
		t.Errorf("Stats of a stream cut off mid-document = %v, want an error", err)
	}
}

// TestStatsEndWithTheirContext: a stream that goes on ends when the
// caller is done with it.
func TestStatsEndWithTheirContext(t *testing.T) {
	f := newFakeEngine(t)
	f.image("srv:1")
	f.statsHold = true
	c, err := f.connect(t).Start(context.Background(), contained("srv:1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Stats(ctx, &bytes.Buffer{}, func(backend.Sample) {}) }()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("Stats ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stats did not end with its context")
	}
}

// TestWatchOOMCountsTheContainersKills: the watch asks for the OOM events
// of the container only, and counts each.
func TestWatchOOMCountsTheContainersKills(t *testing.T) {
	f := newFakeEngine(t)
	f.image("srv:1")
	f.oom = 2
	c, err := f.connect(t).Start(context.Background(), contained("srv:1"))
	if err != nil {
		t.Fatal(err)
	}
	// The events come as the engine sends them: watch until they are in.
	n := 0
	for deadline := time.Now().Add(5 * time.Second); n != 2 && time.Now().Before(deadline); {
		stop := c.WatchOOM(context.Background())
		time.Sleep(50 * time.Millisecond)
		n = stop()
	}
	if n != 2 {
		t.Errorf("OOM kills counted: %d, want 2", n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.calls, "GET /events") {
		t.Error("no events were asked for")
	}
}

// TestEngineGoingAwayMidCall: a wait that the engine's stop cuts off is
// an error, not an exit code; the engine answers Ping again at once (a
// socket-activated engine starts again) but Ping says it stopped, and a
// new connection to it has nothing to say; an engine that is gone fails
// Ping.
func TestEngineGoingAwayMidCall(t *testing.T) {
	f := newFakeEngine(t)
	f.image("srv:1")
	h := f.connect(t)
	ctx := context.Background()
	if err := h.Ping(ctx); err != nil {
		t.Fatalf("Ping before the stop: %v", err)
	}
	c, err := h.Start(ctx, contained("srv:1"))
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { _, err := c.Wait(ctx); waited <- err }()
	time.Sleep(50 * time.Millisecond)
	f.stop()
	select {
	case err := <-waited:
		if err == nil {
			t.Error("Wait cut off by the engine's stop returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not end when the engine stopped")
	}
	var restarted *RestartedError
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !errors.As(err, &restarted); {
		err = h.Ping(ctx)
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.As(err, &restarted) || !strings.Contains(err.Error(), "stopped at") {
		t.Errorf("Ping after the engine stopped = %v, want a RestartedError", err)
	}
	if err := f.connect(t).Ping(ctx); err != nil {
		t.Errorf("Ping on a new connection = %v, want none", err)
	}
	f.gone()
	if err := h.Ping(ctx); err == nil || errors.As(err, &restarted) {
		t.Errorf("Ping of an engine that is gone = %v, want it unreachable", err)
	}
}

// TestFactsComeFromInfo: the engine's info, the architecture as Go names
// it.
func TestFactsComeFromInfo(t *testing.T) {
	facts, err := newFakeEngine(t).connect(t).Facts(context.Background())
	if err != nil || facts.CPUs != 2 || facts.Arch != "amd64" || facts.Version != "20.10.24" || facts.Cgroup != "2" || facts.Storage != "overlay2" {
		t.Errorf("Facts = %+v, %v", facts, err)
	}
}
