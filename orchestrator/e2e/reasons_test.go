//go:build e2e

package e2e_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKilledLoadClientIsSaidInWords kills the load client (SIGKILL) in the
// middle of its load: the reason says what happened to it, and what it
// printed last is in its log, not in the reason.
func TestKilledLoadClientIsSaidInWords(t *testing.T) {
	api := engine(t)
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "go_grpc", "GRPC_BENCHMARK_DURATION": "20s"})
	cmd, sc := startBench(t, repoRoot(t), env, nil)
	killed := false
	for sc.Scan() {
		if killed || !strings.HasPrefix(sc.Text(), "go_grpc: ready") {
			continue
		}
		for range 50 { // the client container starts a moment after the line
			if ids := containerIDs(t, api, "io.grpcbench.role=load", "io.grpcbench.images="+testImageName); len(ids) == 1 {
				time.Sleep(2 * time.Second) // into its load
				if err := api.ContainerKill(context.Background(), ids[0], "KILL"); err != nil {
					t.Fatal(err)
				}
				killed = true
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	err := cmd.Wait()
	if !killed {
		t.Fatalf("no load client to kill; the run ended with %v", err)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Errorf("a run whose load client was killed: %v, want exit status 3", err)
	}
	dir := runFolder(t, env)
	bench, run := readRun(t, dir)
	const reason = "the load client was killed (signal 9) (see load.log)"
	if !strings.Contains(bench, "! go_grpc: not ranked, round 1, load failed: "+reason) {
		t.Errorf("bench.txt does not say the load client was killed:\n%s", bench)
	}
	if f := servers(t, run)[0].Rounds[0].Failure; f == nil || f.Reason != reason {
		t.Errorf("results.json failure = %+v, want %q", f, reason)
	}
	if log, err := os.ReadFile(filepath.Join(dir, "go_grpc", "round-1", "load.log")); err != nil || !strings.Contains(string(log), "progress") {
		t.Errorf("load.log lacks what the client printed (%v): %q", err, log)
	}
	assertNoContainersLeft(t, api)
}
