package docker

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

var (
	owner   = backend.Owner{Host: "bench1", Boot: "b", PIDNamespace: "pid:[1]", PID: 40, Start: 500, Run: "run-1", Token: "t1", Dir: "/r/run-1"}
	another = backend.Owner{Host: "bench1", Boot: "b", PIDNamespace: "pid:[1]", PID: 41, Start: 600, Run: "run-2", Token: "t2", Dir: "/r/run-2"}
)

func says(alive bool) func(context.Context, backend.Owner) bool {
	return func(context.Context, backend.Owner) bool { return alive }
}

// TestLockIsARunningContainer: on an engine without the lock's image, the
// image is imported with the program for the engine's architecture; the
// lock is a container of the image name's lock name, labelled with its
// owner, contained, and started (prune removes what does not run); it is
// held until released, and then gone.
func TestLockIsARunningContainer(t *testing.T) {
	f := newFakeEngine(t)
	h := f.connect(t)
	ctx := context.Background()
	release, err := h.Lock(ctx, "docker.io/library/bench", owner, says(true))
	if err != nil {
		t.Fatal(err)
	}
	img := f.imageOf(lockImage)
	if img == nil || !slices.Contains(img.changes, "LABEL "+LockLabel+"=image") {
		t.Fatalf("lock image %s: %+v", lockImage, img)
	}
	prog, err := elf.NewFile(bytes.NewReader(img.files["pause"]))
	if err != nil || prog.Machine != elf.EM_X86_64 {
		t.Fatalf("the lock image's program for an x86_64 engine: %v, %v", prog, err)
	}
	c := f.container("grpcbench-lock-bench")
	if c == nil || !c.running || c.started != 1 {
		t.Fatalf("lock container %+v, want one started once", c)
	}
	cfg, hc := c.req.Config, c.req.HostConfig
	if cfg.Labels[LockLabel] != "bench" || backend.OwnerOf(cfg.Labels) != owner || !slices.Equal(cfg.Cmd, []string{lockProgram}) || cfg.StopSignal != "SIGKILL" {
		t.Errorf("lock config: labels %v, cmd %v, stop signal %q", cfg.Labels, cfg.Cmd, cfg.StopSignal)
	}
	if hc.NetworkMode != "none" || !hc.ReadonlyRootfs || !slices.Equal(hc.CapDrop, []string{"ALL"}) || cfg.User != nobody ||
		hc.PidsLimit == nil || *hc.PidsLimit != 1 || hc.Memory == 0 {
		t.Errorf("lock containment: network %q, read-only %v, caps %v, user %q, pids %v, memory %d", hc.NetworkMode, hc.ReadonlyRootfs, hc.CapDrop, cfg.User, hc.PidsLimit, hc.Memory)
	}
	if held, err := h.LockHeld(ctx, "bench", owner.Token); !held || err != nil {
		t.Errorf("LockHeld = %v, %v; want held", held, err)
	}
	if held, _ := h.LockHeld(ctx, "bench", another.Token); held {
		t.Error("LockHeld with another token = true")
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	if held, err := h.LockHeld(ctx, "bench", owner.Token); held || err != nil {
		t.Errorf("LockHeld after release = %v, %v", held, err)
	}
	// The image is there now: the next lock imports nothing.
	imports := strings.Count(strings.Join(f.called(), "\n"), "POST /images/create")
	if _, err := h.Lock(ctx, "bench", owner, says(true)); err != nil || imports != 1 ||
		strings.Count(strings.Join(f.called(), "\n"), "POST /images/create") != 1 {
		t.Errorf("a second lock: %v, imports %d", err, strings.Count(strings.Join(f.called(), "\n"), "POST /images/create"))
	}
}

// TestLockStartedAgainWhenTheEngineRefusedItsStart: an engine just
// restarted refused a new lock's start once; the lock is made again,
// and the one that did not start is gone.
func TestLockStartedAgainWhenTheEngineRefusedItsStart(t *testing.T) {
	f := newFakeEngine(t)
	f.lockStartFailures = 1
	h := f.connect(t)
	if _, err := h.Lock(context.Background(), "bench", owner, says(true)); err != nil {
		t.Fatalf("Lock after a refused start: %v", err)
	}
	if c := f.container("grpcbench-lock-bench"); c == nil || !c.running || c.started != 1 {
		t.Errorf("lock container %+v, want one, started", c)
	}
	f.lockStartFailures = lockStarts
	if _, err := h.Lock(context.Background(), "other", owner, says(true)); err == nil || !strings.Contains(err.Error(), "cannot start a stopped process") {
		t.Errorf("Lock refused every time = %v, want the engine's reason", err)
	}
	if c := f.container("grpcbench-lock-other"); c != nil {
		t.Errorf("a lock that never started is left: %+v", c)
	}
}

// TestLockRefusedWhileTheOwnerLives: a lock whose owner lives refuses,
// naming its holder and how to remove it, and stays as it was.
func TestLockRefusedWhileTheOwnerLives(t *testing.T) {
	f := newFakeEngine(t)
	h := f.connect(t)
	ctx := context.Background()
	if _, err := h.Lock(ctx, "bench", owner, says(true)); err != nil {
		t.Fatal(err)
	}
	held := f.container("grpcbench-lock-bench").id
	var asked backend.Owner
	_, err := h.Lock(ctx, "bench", another, func(_ context.Context, o backend.Owner) bool { asked = o; return true })
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Holder.Run != "run-1" || !strings.Contains(err.Error(), "docker rm -f grpcbench-lock-bench") {
		t.Fatalf("Lock beside a live holder = %v", err)
	}
	if asked != owner {
		t.Errorf("alive was asked about %+v, want the holder %+v", asked, owner)
	}
	if c := f.container("grpcbench-lock-bench"); c == nil || c.id != held || !c.running {
		t.Errorf("the live holder's lock was touched: %+v", c)
	}
}

// TestLockTakenOverFromADeadOwner: a dead owner's lock is removed by its
// id, and a new one created for the taker and started.
func TestLockTakenOverFromADeadOwner(t *testing.T) {
	f := newFakeEngine(t)
	h := f.connect(t)
	ctx := context.Background()
	if _, err := h.Lock(ctx, "bench", owner, says(true)); err != nil {
		t.Fatal(err)
	}
	dead := f.container("grpcbench-lock-bench").id
	if _, err := h.Lock(ctx, "bench", another, says(false)); err != nil {
		t.Fatal(err)
	}
	c := f.container("grpcbench-lock-bench")
	if c == nil || c.id == dead || !c.running || backend.OwnerOf(c.req.Labels).Run != "run-2" {
		t.Fatalf("lock after the takeover: %+v", c)
	}
	if !slices.Contains(f.called(), "DELETE /containers/"+dead) {
		t.Errorf("the dead lock was not removed by its id: %v", f.called())
	}
}

// TestOwnLockStoppedIsStartedAgain: an engine's restart stops the lock
// (a stopped one is what prune removes): LockHeld says it is not held,
// and Lock with the owner's token starts the same container again.
func TestOwnLockStoppedIsStartedAgain(t *testing.T) {
	f := newFakeEngine(t)
	h := f.connect(t)
	ctx := context.Background()
	if _, err := h.Lock(ctx, "bench", owner, says(true)); err != nil {
		t.Fatal(err)
	}
	f.exit("grpcbench-lock-bench", 137)
	if held, err := h.LockHeld(ctx, "bench", owner.Token); held || err != nil {
		t.Errorf("LockHeld of a stopped lock = %v, %v; want not held", held, err)
	}
	release, err := h.Lock(ctx, "bench", owner, says(true))
	if err != nil {
		t.Fatal(err)
	}
	if c := f.container("grpcbench-lock-bench"); c == nil || !c.running || c.started != 2 {
		t.Errorf("the lock after Lock again: %+v, want the same container started a second time", c)
	}
	if err := release(ctx); err != nil || f.container("grpcbench-lock-bench") != nil {
		t.Errorf("release = %v, lock %+v", err, f.container("grpcbench-lock-bench"))
	}
}

// TestLockRecordsTheOwnersContainer: the owner's container is kept; its
// start only when this engine runs it.
func TestLockRecordsTheOwnersContainer(t *testing.T) {
	f := newFakeEngine(t)
	h := f.connect(t)
	ctx := context.Background()
	compose := f.add("compose", nil, true)
	inCompose := owner
	inCompose.Container = compose.id
	if _, err := h.Lock(ctx, "a", inCompose, says(true)); err != nil {
		t.Fatal(err)
	}
	if o := backend.OwnerOf(f.container("grpcbench-lock-a").req.Labels); o.Container != compose.id || o.Started != compose.startedAt {
		t.Errorf("owner recorded %+v, want container %s started %s", o, compose.id, compose.startedAt)
	}
	elsewhere := owner
	elsewhere.Container = strings.Repeat("e", 64)
	if _, err := h.Lock(ctx, "b", elsewhere, says(true)); err != nil {
		t.Fatal(err)
	}
	if o := backend.OwnerOf(f.container("grpcbench-lock-b").req.Labels); o.Container != elsewhere.Container || o.Started != "" {
		t.Errorf("owner in a container of another engine recorded %+v, want its container without a start", o)
	}
}

// TestLockNamesOneRepository: the names Docker takes for one repository
// have one lock; names that only look alike do not.
func TestLockNamesOneRepository(t *testing.T) {
	for _, tc := range [][2]string{{"grpc_bench", "docker.io/library/grpc_bench"}, {"team/bench", "docker.io/team/bench"}, {"team/bench", "index.docker.io/team/bench"}} {
		if LockName(tc[0]) != LockName(tc[1]) {
			t.Errorf("LockName(%s) = %s, LockName(%s) = %s; want one lock", tc[0], LockName(tc[0]), tc[1], LockName(tc[1]))
		}
	}
	if LockName("grpc_bench") != "grpcbench-lock-grpc_bench" {
		t.Errorf("LockName(grpc_bench) = %s", LockName("grpc_bench"))
	}
	if a, b := LockName("a/b"), LockName("a_b"); a == b {
		t.Errorf("a/b and a_b share the lock %s", a)
	}
	f := newFakeEngine(t)
	h := f.connect(t)
	if _, err := h.Lock(context.Background(), "grpc_bench", owner, says(true)); err != nil {
		t.Fatal(err)
	}
	var locked *LockedError
	if _, err := h.Lock(context.Background(), "docker.io/library/grpc_bench", another, says(true)); !errors.As(err, &locked) {
		t.Errorf("a second run under the long name of the repository = %v, want refused", err)
	}
}

// TestProcessesAreTheEnginesPIDs: the PID column of the engine's top.
func TestProcessesAreTheEnginesPIDs(t *testing.T) {
	f := newFakeEngine(t)
	f.top = [][]string{{"65534", "4242", "grpcbench bench"}, {"0", "4250", "sh"}}
	c := f.add("long-lived", nil, true)
	pids, err := f.connect(t).Processes(context.Background(), c.id)
	if err != nil || !slices.Equal(pids, []int{4242, 4250}) {
		t.Errorf("Processes = %v, %v", pids, err)
	}
	if _, err := f.connect(t).Processes(context.Background(), "gone"); !errors.Is(err, backend.ErrMissing) {
		t.Errorf("Processes of no container = %v, want ErrMissing", err)
	}
}

// TestPauseProgramWaitsForEver: the lock's program is a static executable
// of each architecture, and, on this one, runs until it is killed.
func TestPauseProgramWaitsForEver(t *testing.T) {
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		b, err := pauseProgram(arch)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if prog.Machine != machine || prog.Type != elf.ET_EXEC || len(prog.Progs) != 1 || prog.Progs[0].Type != elf.PT_LOAD ||
			prog.Entry < prog.Progs[0].Vaddr || prog.Entry >= prog.Progs[0].Vaddr+prog.Progs[0].Memsz {
			t.Errorf("%s: machine %v, type %v, segments %v, entry %#x", arch, prog.Machine, prog.Type, prog.Progs, prog.Entry)
		}
	}
	if _, err := pauseProgram("s390x"); err == nil {
		t.Error("a program for s390x, which has none")
	}
	if runtime.GOOS != "linux" || pauseCode[runtime.GOARCH].code == nil {
		return
	}
	b, _ := pauseProgram(runtime.GOARCH)
	path := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the program ended by itself: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the program after SIGKILL: %v", err)
	}
}
