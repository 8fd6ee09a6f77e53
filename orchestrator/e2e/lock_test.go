package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
)

// TestSecondRunIsRefusedAndADeadOnesLockTakenOver starts a run, then a
// second one under the same image name while the first measures: the
// second exits 1 naming the first, whose containers are left alone. Then a
// lock left by a process that is gone is taken over.
func TestSecondRunIsRefusedAndADeadOnesLockTakenOver(t *testing.T) {
	api := engine(t)
	ctx := context.Background()
	first := benchEnv(t, map[string]string{"GRPC_BENCHMARK_DURATION": "8s"})
	cmd := exec.Command(binary, "bench")
	cmd.Dir, cmd.Env = repoRoot(t), first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitForServer(t, done)

	second := benchEnv(t, nil)
	res := runBinary(t, repoRoot(t), second, "bench")
	if res.code != 1 {
		t.Errorf("the second run's exit code %d, want 1\nstderr:\n%s", res.code, res.stderr)
	}
	want := "another grpcbench run uses GRPC_IMAGE_NAME=" + testImageName + " on this engine: run "
	if !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, "pid "+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("the second run does not name the first (pid %d):\n%s", cmd.Process.Pid, res.stderr)
	}
	if err := <-done; err != nil {
		t.Fatalf("the first run failed beside the refused one: %v", err)
	}
	bench, _ := readRun(t, runFolder(t, first))
	if _, ok := parseRows(t, bench)["go_grpc"]; !ok {
		t.Errorf("the first run did not rank go_grpc:\n%s", bench)
	}

	// The first run's process is gone: its lock, left behind as a killed
	// run would leave it, must not stop the next run.
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	lock := "grpcbench-lock-" + testImageName
	if _, err := api.VolumeCreate(ctx, volume.CreateOptions{Name: lock, Labels: map[string]string{
		"io.grpcbench.owner.host": host, "io.grpcbench.owner.boot": strings.TrimSpace(string(boot)),
		"io.grpcbench.owner.pid": strconv.Itoa(cmd.Process.Pid), "io.grpcbench.owner.run": "killed-earlier",
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.VolumeRemove(ctx, lock, true) })
	third := benchEnv(t, nil)
	if res := runBinary(t, repoRoot(t), third, "bench"); res.code != 0 {
		t.Errorf("a run after a dead run's lock: exit code %d\nstderr:\n%s", res.code, res.stderr)
	}
	assertNoContainersLeft(t, api)
}

// waitForServer waits until a run's server container runs.
func waitForServer(t *testing.T, done <-chan error) {
	t.Helper()
	api := engine(t)
	deadline := time.After(3 * time.Minute)
	for {
		list, err := api.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(
			filters.Arg("label", "io.grpcbench.images="+testImageName), filters.Arg("label", "io.grpcbench.role=server"))})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended (%v) before its server started", err)
		case <-deadline:
			t.Fatal("no server running after 3 minutes")
		case <-time.After(200 * time.Millisecond):
		}
	}
}
