//go:build e2e

package e2e_test

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// TestResumeAfterAKillFinishesEveryRound: a run interrupted in its first
// round, resumed, and killed outright (SIGKILL) during the resume is still
// a run to resume; the second resume measures every round and the run
// ends finished, nothing left on the engine.
func TestResumeAfterAKillFinishesEveryRound(t *testing.T) {
	api := engine(t)
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARK_ROUNDS": "3", "GRPC_BENCHMARK_DURATION": "6s", "GRPC_BENCHMARK_WARMUP": "1s"})
	// stopAtReady runs grpcbench with args and sends sig once a server is
	// ready, returning the exit status.
	stopAtReady := func(sig syscall.Signal, args ...string) int {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Dir, cmd.Env = repoRoot(t), env
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var printed strings.Builder
		buf := make([]byte, 4096)
		for {
			n, rerr := out.Read(buf)
			printed.Write(buf[:n])
			if strings.Contains(printed.String(), ": ready;") {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				break
			}
			if rerr != nil {
				t.Fatalf("%v ended before a server was ready:\n%s", args, printed.String())
			}
		}
		err = cmd.Wait()
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			t.Fatalf("%v after %v: %v, want an exit status", args, sig, err)
		}
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return exitErr.ExitCode()
	}
	if code := stopAtReady(syscall.SIGINT, "bench"); code != 130 {
		t.Fatalf("interrupted: exit %d, want 130", code)
	}
	dir := runFolder(t, env)
	if _, run := readRun(t, dir); run.State != record.Interrupted {
		t.Fatalf("after the interruption the run is %q, want interrupted", run.State)
	}
	if code := stopAtReady(syscall.SIGKILL, "bench", "--resume", dir); code != -int(syscall.SIGKILL) {
		t.Fatalf("killed: exit %d, want killed by SIGKILL", code)
	}
	if _, run := readRun(t, dir); run.State != record.Running {
		t.Fatalf("after the kill the run is %q, want running: a run to resume", run.State)
	}
	res := runBinary(t, repoRoot(t), env, "bench", "--resume", dir)
	if res.code != 0 {
		t.Fatalf("second resume: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	_, run := readRun(t, dir)
	srv := servers(t, run)
	if run.State != record.Finished || len(srv) != 1 || len(srv[0].Rounds) != 3 || !srv[0].Ranked() {
		t.Errorf("after the second resume: state %q, servers %+v; want finished with 3 rounds measured", run.State, srv)
	}
	assertNoContainersLeft(t, api)
}
