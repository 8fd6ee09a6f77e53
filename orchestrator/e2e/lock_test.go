//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/docker"
)

// TestSecondRunIsRefusedAndADeadOnesLockTakenOver starts a run, then a
// second one under the same image name while the first measures: the
// second exits 1 naming the first, whose containers are left alone. Then a
// lock left by a process that is gone is taken over.
func TestSecondRunIsRefusedAndADeadOnesLockTakenOver(t *testing.T) {
	api := engine(t)
	ctx := context.Background()
	first := benchEnv(t, map[string]string{"GRPC_BENCHMARK_DURATION": "8s"})
	cmd, done := benchInBackground(t, repoRoot(t), first, nil)
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
	pidNamespace, _ := os.Readlink("/proc/self/ns/pid")
	eng, err := docker.Connect(ctx, backend.Target{Address: api.DaemonHost()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	left, err := eng.Lock(ctx, testImageName, backend.Owner{Host: host, Boot: strings.TrimSpace(string(boot)), PIDNamespace: pidNamespace, PID: cmd.Process.Pid, Start: 1,
		Run: "killed-earlier"}, func(context.Context, backend.Owner) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { left(ctx) })
	third := benchEnv(t, nil)
	if res := runBinary(t, repoRoot(t), third, "bench"); res.code != 0 {
		t.Errorf("a run after a dead run's lock: exit code %d\nstderr:\n%s", res.code, res.stderr)
	}
	assertNoContainersLeft(t, api)
}

// waitForServer waits until a run's server container runs, and returns
// its id: up to 10 minutes, as compose builds the orchestrator's image
// first.
func waitForServer(t *testing.T, done <-chan error) string {
	t.Helper()
	api := engine(t)
	deadline := time.After(10 * time.Minute)
	for {
		list, err := api.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(
			filters.Arg("label", "io.grpcbench.images="+testImageName), filters.Arg("label", "io.grpcbench.role=server"))})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			return list[0].ID
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended (%v) before its server started", err)
		case <-deadline:
			t.Fatal("no server running after 10 minutes")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestComposeUpAfterAnUncleanStop kills the compose container in the
// middle of a run (no cleanup: its lock and server stay behind), then runs
// `docker compose up` again: the same container restarts, with the same
// hostname, boot id and pid 1 as the run that took the lock, and must take
// that lock over, remove what the killed run left and finish.
func TestComposeUpAfterAnUncleanStop(t *testing.T) {
	api := engine(t)
	root, composeArgs, compose := composeProject(t, "grpcbench-restart", "6s", 2)

	first := exec.Command("docker", composeArgs("up")...)
	var output bytes.Buffer
	first.Dir, first.Stdout, first.Stderr = root, &output, &output
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	done, exited := make(chan error, 1), make(chan struct{})
	go func() { done <- first.Wait(); close(exited) }()
	// Before the project is taken down: an `up` still building would
	// start its container after the `down`.
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			first.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("the first docker compose up:\n%s", output.String())
		}
	})
	waitForServer(t, done)
	before := compose("ps", "--all", "--quiet")
	if res := compose("kill"); res.code != 0 {
		t.Fatalf("docker compose kill: exit %d\n%s", res.code, res.stderr)
	}
	<-done
	if n := len(containerIDs(t, api, "io.grpcbench.images="+testImageName)); n == 0 {
		t.Fatal("the killed run left no container behind: the test kills too late")
	}

	res := compose("up")
	if res.code != 0 {
		t.Fatalf("docker compose up after a kill: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if after := compose("ps", "--all", "--quiet"); after.stdout != before.stdout {
		t.Errorf("compose made another container (%q, before %q): the test must restart the same one", after.stdout, before.stdout)
	}
	if !strings.Contains(res.stdout, "containers left behind by an earlier run") {
		t.Errorf("the restarted run does not say it removed the killed run's containers:\n%s", res.stdout)
	}
	entries, err := os.ReadDir(filepath.Join(root, "results"))
	if err != nil || len(entries) != 2 {
		t.Fatalf("want two run folders in results/, have %v (%v)", entries, err)
	}
	bench, _ := readRun(t, filepath.Join(root, "results", entries[1].Name()))
	if _, ok := parseRows(t, bench)["go_grpc"]; !ok {
		t.Errorf("the run after the restart did not rank go_grpc:\n%s", bench)
	}
	assertNoContainersLeft(t, api)
}

// TestLockRemovedMidRunIsTakenAgain removes the lock container during round
// 1, as `docker container prune` would: before round 2 the run takes it
// again, so a second run is refused, and the run ends with both rounds.
func TestLockRemovedMidRunIsTakenAgain(t *testing.T) {
	api := engine(t)
	ctx := context.Background()
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARK_ROUNDS": "2", "GRPC_BENCHMARK_DURATION": "6s"})
	var stderr bytes.Buffer
	cmd, sc := startBench(t, repoRoot(t), env, &stderr)
	lock := docker.LockName(testImageName)
	removed, retaken := false, false
	for sc.Scan() {
		line := sc.Text()
		if !removed && strings.Contains(line, ": ready;") {
			if err := api.ContainerRemove(ctx, lock, container.RemoveOptions{Force: true}); err != nil {
				t.Fatalf("remove the lock %s: %v", lock, err)
			}
			removed = true
		}
		if removed && !retaken && strings.Contains(line, "round 2 of 2") {
			if _, err := api.ContainerInspect(ctx, lock); err != nil {
				t.Errorf("round 2 started without the lock: %v", err)
			}
			res := runBinary(t, repoRoot(t), benchEnv(t, nil), "bench")
			if res.code != 1 || !strings.Contains(res.stderr, "another grpcbench run uses") {
				t.Errorf("a second run beside it exited %d, want 1 naming the first\n%s", res.code, res.stderr)
			}
			retaken = true
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !removed || !retaken {
		t.Fatalf("the lock was removed %v, round 2 seen %v", removed, retaken)
	}
	_, run := readRun(t, runFolder(t, env))
	if srv := servers(t, run); len(srv) != 1 || len(srv[0].Rounds) != 2 || srv[0].FirstFailure() != nil {
		t.Errorf("rounds: %+v", srv)
	}
	assertNoContainersLeft(t, api)
}

// TestPruneDuringARoundLeavesTheLock runs `docker container prune` in
// the middle of a round (filtered to this test's lock, the engine being
// shared; prune's rule, every container that does not run, is the same),
// then starts a second run under the same image name: the lock is still
// there, the second run exits 1 naming the first, and the first keeps
// every round.
func TestPruneDuringARoundLeavesTheLock(t *testing.T) {
	api := engine(t)
	ctx := context.Background()
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARK_ROUNDS": "2", "GRPC_BENCHMARK_DURATION": "6s"})
	var stderr bytes.Buffer
	cmd, sc := startBench(t, repoRoot(t), env, &stderr)
	lock := docker.LockName(testImageName)
	pruned := false
	for sc.Scan() {
		if pruned || !strings.Contains(sc.Text(), ": ready;") {
			continue
		}
		pruned = true
		if res := runProgram(t, repoRoot(t), "docker", "container", "prune", "--force", "--filter", "label=io.grpcbench.lock="+testImageName); res.code != 0 {
			t.Fatalf("docker container prune: exit %d\n%s", res.code, res.stderr)
		}
		if info, err := api.ContainerInspect(ctx, lock); err != nil || info.State == nil || !info.State.Running {
			t.Errorf("after docker container prune the lock is not running: %v", err)
		}
		res := runBinary(t, repoRoot(t), benchEnv(t, nil), "bench")
		if res.code != 1 || !strings.Contains(res.stderr, "another grpcbench run uses") {
			t.Errorf("a second run after the prune exited %d, want 1 naming the first\n%s", res.code, res.stderr)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the first run: %v\n%s", err, stderr.String())
	}
	if !pruned {
		t.Fatal("the run ended before its server was ready")
	}
	_, run := readRun(t, runFolder(t, env))
	if srv := servers(t, run); len(srv) != 1 || len(srv[0].Rounds) != 2 || srv[0].FirstFailure() != nil {
		t.Errorf("the first run's rounds: %+v", srv)
	}
	if ids := containerIDs(t, api, "io.grpcbench.lock="+testImageName); len(ids) != 0 {
		t.Errorf("the lock is still there after the run: %v", ids)
	}
	assertNoContainersLeft(t, api)
}
