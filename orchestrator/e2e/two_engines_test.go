package e2e_test

import (
	"bufio"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// secondEngine starts a second Docker engine in a network namespace of its
// own, joined to this machine by a veth pair (scripts/second-engine), and
// returns the settings that put the servers on it. It is torn down when the
// test ends.
func secondEngine(t *testing.T) map[string]string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("a second engine in a network namespace needs root")
	}
	if err := exec.Command("ip", "netns", "list").Run(); err != nil {
		t.Fatalf("this machine forbids network namespaces (ip netns: %v)", err)
	}
	dir := filepath.Join(os.TempDir(), "grpcbench-second-engine")
	script := filepath.Join(repoRoot(t), "scripts", "second-engine")
	out, err := exec.Command(script, "up", dir).CombinedOutput()
	t.Cleanup(func() {
		if out, err := exec.Command(script, "down", dir).CombinedOutput(); err != nil {
			t.Errorf("second-engine down: %v\n%s", err, out)
		}
	})
	if err != nil {
		t.Fatalf("second-engine up: %v\n%s", err, out)
	}
	settings := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "GRPC_") {
			settings[k] = v
		}
	}
	if settings["GRPC_SERVER_DOCKER_HOST"] == "" || settings["GRPC_SERVER_ADDRESS"] == "" {
		t.Fatalf("second-engine printed no settings:\n%s", out)
	}
	return settings
}

func engineAt(t *testing.T, host string) *client.Client {
	t.Helper()
	api, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	return api
}

// TestServerAndClientOnTwoEngines runs go_grpc on one engine and its
// clients on another: the server publishes its port at its namespace's
// address and the clients reach it over the veth pair. Both engines'
// containers are in results.json, the round trip in the footer, and
// neither engine keeps a container, after the run and after Ctrl-C. Then
// the servers' engine goes away in the middle of a run, and comes back.
func TestServerAndClientOnTwoEngines(t *testing.T) {
	settings := secondEngine(t)
	serverEngine, clientEngine := engineAt(t, settings["GRPC_SERVER_DOCKER_HOST"]), engine(t)
	env := benchEnv(t, settings)
	res := runBinary(t, repoRoot(t), env, "bench")
	if res.code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	dir := runFolder(t, env)
	bench, run := readRun(t, dir)
	if r, ok := parseRows(t, bench)["go_grpc"]; !ok || r.rps <= 0 {
		t.Errorf("no go_grpc row:\n%s", bench)
	}
	if !strings.Contains(bench, "- network round trip between the client's and the servers' machines: ") || run.RoundTrip == nil || *run.RoundTrip <= 0 {
		t.Errorf("no round trip in the footer or results.json (%v):\n%s", run.RoundTrip, bench)
	}
	if run.ClientHardware == nil || run.Hardware.DockerVersion == "" {
		t.Errorf("results.json does not describe both machines: %+v %+v", run.Hardware, run.ClientHardware)
	}
	hw, _ := os.ReadFile(filepath.Join(dir, "hardware.txt"))
	if !strings.Contains(string(hw), "Servers' machine:") || !strings.Contains(string(hw), "Clients' machine:") {
		t.Errorf("hardware.txt:\n%s", hw)
	}
	s := servers(t, run)[0].Rounds[0]
	if s.Server.Samples == 0 || s.Client.Samples == 0 {
		t.Errorf("stats from each engine: server %+v client %+v", s.Server, s.Client)
	}
	assertNoContainersLeft(t, serverEngine)
	assertNoContainersLeft(t, clientEngine)

	// Ctrl-C in the middle of the load: nothing left on either engine.
	env = benchEnv(t, mergeSettings(settings, map[string]string{"GRPC_BENCHMARK_DURATION": "30s"}))
	cmd := exec.Command(binary, "bench")
	cmd.Dir, cmd.Env = repoRoot(t), env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "go_grpc: ready") {
			time.Sleep(2 * time.Second)
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); !errors.As(err, new(*exec.ExitError)) {
		t.Errorf("interrupted run: %v", err)
	}
	assertNoContainersLeft(t, serverEngine)
	assertNoContainersLeft(t, clientEngine)

	engineGoesAway(t, settings, clientEngine)
	engineComesBack(t, settings, serverEngine)
}

// engineGoesAway stops the servers' engine after a run's first round: the
// run stops with exit status 1, says the engine went away, keeps the round
// it finished, and leaves nothing on the engine that is still there.
func engineGoesAway(t *testing.T, settings map[string]string, clientEngine *client.Client) {
	env := benchEnv(t, mergeSettings(settings, map[string]string{"GRPC_BENCHMARK_ROUNDS": "2", "GRPC_BENCHMARK_DURATION": "10s"}))
	cmd := exec.Command(binary, "bench")
	cmd.Dir, cmd.Env = repoRoot(t), env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(os.TempDir(), "grpcbench-second-engine", "docker.pid")
	stopped := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if !stopped && strings.HasPrefix(sc.Text(), "go_grpc: ") && strings.Contains(sc.Text(), " req/s, server CPU ") {
			pid, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("kill", "-TERM", strings.TrimSpace(string(pid))).CombinedOutput(); err != nil {
				t.Fatalf("stop the servers' engine: %v %s", err, out)
			}
			stopped = true
		}
	}
	io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if !stopped {
		t.Fatalf("the run ended (%v) before its first round finished\nstderr:\n%s", err, stderr.String())
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Errorf("a run whose engine went away: %v, want exit status 1\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "the Docker engine went away during the run") {
		t.Errorf("the run does not say its engine went away:\n%s", stderr.String())
	}
	_, run := readRun(t, runFolder(t, env))
	rounds := servers(t, run)[0].Rounds
	if len(rounds) == 0 || rounds[0].Failure != nil || rounds[0].Load == nil || rounds[0].Load.RPS <= 0 {
		t.Errorf("the round finished before the engine went away is not in results.json: %+v", rounds)
	}
	assertNoContainersLeft(t, clientEngine)
}

// engineComesBack starts the servers' engine again, on the data it kept
// when it went away with a run's lock and containers in it: the next run
// takes the dead run's lock over, runs, and leaves nothing behind.
func engineComesBack(t *testing.T, settings map[string]string, serverEngine *client.Client) {
	dir := filepath.Join(os.TempDir(), "grpcbench-second-engine")
	if out, err := exec.Command(filepath.Join(repoRoot(t), "scripts", "second-engine"), "start", dir).CombinedOutput(); err != nil {
		t.Fatalf("start the servers' engine again: %v\n%s", err, out)
	}
	env := benchEnv(t, settings)
	res := runBinary(t, repoRoot(t), env, "bench")
	if res.code != 0 {
		t.Fatalf("a run on the engine that came back: exit code %d\nstderr:\n%s", res.code, res.stderr)
	}
	bench, _ := readRun(t, runFolder(t, env))
	if r, ok := parseRows(t, bench)["go_grpc"]; !ok || r.rps <= 0 {
		t.Errorf("no go_grpc row after the engine came back:\n%s", bench)
	}
	assertNoContainersLeft(t, serverEngine)
}

func mergeSettings(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
