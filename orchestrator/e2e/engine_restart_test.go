//go:build e2e

package e2e_test

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// socketActivated listens at a socket of its own for an engine's socket,
// as systemd does for a socket-activated dockerd: it accepts every
// connection at once and passes it on when the engine listens, so that an
// engine restarting is, to its clients, an engine that is slow to answer
// for a while, never one that is gone. It returns the address to use.
func socketActivated(t *testing.T, engineSocket string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "activated.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { lis.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { passOn(c, engineSocket) })
		}
	})
	return "unix://" + path
}

// passOn connects c to the engine's socket, once there is one to connect
// to (for up to two minutes), and copies each way until either side ends.
func passOn(c net.Conn, engineSocket string) {
	defer c.Close()
	var e net.Conn
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if e, err = net.Dial("unix", engineSocket); err == nil {
			break
		}
	}
	if e == nil {
		return
	}
	defer e.Close()
	ended := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(e, c); ended <- struct{}{} }()
	go func() { _, _ = io.Copy(c, e); ended <- struct{}{} }()
	<-ended
}

// TestEngineRestartCutsTheRoundShort restarts the servers' engine, reached
// as a socket-activated one, in the middle of a round: the round is cut
// short (the engine, not the server, ended it), the run stops interrupted
// with exit status 1, and --resume runs every round.
func TestEngineRestartCutsTheRoundShort(t *testing.T) {
	settings := secondEngine(t)
	dir := filepath.Join(os.TempDir(), "grpcbench-second-engine")
	settings["GRPC_SERVER_DOCKER_HOST"] = socketActivated(t, filepath.Join(dir, "docker.sock"))
	env := benchEnv(t, mergeSettings(settings, map[string]string{"GRPC_BENCHMARK_ROUNDS": "2", "GRPC_BENCHMARK_DURATION": "10s"}))
	var stderr strings.Builder
	cmd, sc := startBench(t, repoRoot(t), env, &stderr)
	restarted := false
	for sc.Scan() {
		if restarted || !strings.HasPrefix(sc.Text(), "go_grpc: ready;") {
			continue
		}
		time.Sleep(3 * time.Second) // into the load
		pid, err := os.ReadFile(filepath.Join(dir, "docker.pid"))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("kill", "-TERM", strings.TrimSpace(string(pid))).CombinedOutput(); err != nil {
			t.Fatalf("stop the servers' engine: %v %s", err, out)
		}
		if out, err := exec.Command(filepath.Join(repoRoot(t), "scripts", "second-engine"), "start", dir).CombinedOutput(); err != nil {
			t.Fatalf("start the servers' engine again: %v\n%s", err, out)
		}
		restarted = true
	}
	err := cmd.Wait()
	if !restarted {
		t.Fatalf("the run ended (%v) before its server was ready\nstderr:\n%s", err, stderr.String())
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Errorf("a run whose engine restarted: %v, want exit status 1\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped at") {
		t.Errorf("the run does not say its engine stopped:\n%s", stderr.String())
	}
	folder := runFolder(t, env)
	_, run := readRun(t, folder)
	srv := servers(t, run)[0]
	if len(srv.Rounds) != 1 || srv.Rounds[0].Failure == nil || !srv.Rounds[0].Failure.CutShort || run.State != record.Interrupted {
		t.Fatalf("rounds %+v, state %q: want round 1 cut short and the run interrupted", srv.Rounds, run.State)
	}
	t.Logf("round 1: %s", srv.Rounds[0].Failure.Reason)

	res := runBinary(t, repoRoot(t), env, "bench", "--resume", folder)
	if res.code != 0 {
		t.Fatalf("--resume: exit %d\nstderr:\n%s", res.code, res.stderr)
	}
	_, run = readRun(t, folder)
	srv = servers(t, run)[0]
	if len(srv.Rounds) != 2 || srv.FirstFailure() != nil || run.State != record.Finished {
		t.Errorf("after --resume: rounds %+v, state %q; want both rounds measured and the run finished", srv.Rounds, run.State)
	}
	assertNoContainersLeft(t, engineAt(t, "unix://"+filepath.Join(dir, "docker.sock")))
	assertNoContainersLeft(t, engine(t))
}
