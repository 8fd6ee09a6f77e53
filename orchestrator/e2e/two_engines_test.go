//go:build e2e

package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
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
	if !strings.HasPrefix(s.ServerAddress, settings["GRPC_SERVER_ADDRESS"]+":") {
		t.Errorf("results.json records the server's address as %q, want %s and the port the engine picked", s.ServerAddress, settings["GRPC_SERVER_ADDRESS"])
	}
	assertNoContainersLeft(t, serverEngine)
	assertNoContainersLeft(t, clientEngine)
	assertNoNetworksLeft(t, serverEngine)

	// Ctrl-C in the middle of the load: nothing left on either engine.
	env = benchEnv(t, mergeSettings(settings, map[string]string{"GRPC_BENCHMARK_DURATION": "30s"}))
	cmd, sc := startBench(t, repoRoot(t), env, nil)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "go_grpc: ready") {
			serverIsContained(t, serverEngine, settings["GRPC_SERVER_ADDRESS"])
			time.Sleep(2 * time.Second)
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); !errors.As(err, new(*exec.ExitError)) {
		t.Errorf("interrupted run: %v", err)
	}
	assertNoContainersLeft(t, serverEngine)
	assertNoContainersLeft(t, clientEngine)
	assertNoNetworksLeft(t, serverEngine)

	engineGoesAway(t, settings, clientEngine)
	engineComesBack(t, settings, serverEngine)
}

// engineGoesAway stops the servers' engine after a run's first round: the
// run stops with exit status 1, says the engine went away, keeps the round
// it finished, and leaves nothing on the engine that is still there.
func engineGoesAway(t *testing.T, settings map[string]string, clientEngine *client.Client) {
	env := benchEnv(t, mergeSettings(settings, map[string]string{"GRPC_BENCHMARK_ROUNDS": "2", "GRPC_BENCHMARK_DURATION": "10s"}))
	var stderr strings.Builder
	cmd, sc := startBench(t, repoRoot(t), env, &stderr)
	pidFile := filepath.Join(os.TempDir(), "grpcbench-second-engine", "docker.pid")
	stopped := false
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
	err := cmd.Wait()
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

// hostSide is this machine's end of the veth pair to the servers'
// engine's namespace (scripts/second-engine): an address the test made.
const hostSide = "10.231.0.1"

// serverIsContained reads the running server container's network settings
// back from the servers' engine: its port is published on the address of
// GRPC_SERVER_ADDRESS only, at a port the engine picked, from a network
// of its own that masquerades nothing; and a connection the server's
// namespace opens to this machine, which listens for it, never gets through.
func serverIsContained(t *testing.T, api *client.Client, address string) {
	t.Helper()
	ctx := context.Background()
	ids := containerIDs(t, api, "io.grpcbench.role=server", "io.grpcbench.images="+testImageName)
	if len(ids) != 1 {
		t.Fatalf("want one server container on the servers' engine, have %v", ids)
	}
	info, err := api.ContainerInspect(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	asked := info.HostConfig.PortBindings["50051/tcp"]
	if len(asked) != 1 || asked[0].HostIP != address || asked[0].HostPort != "" {
		t.Errorf("port bindings asked for %+v, want 50051 on %s only, at a port the engine picks", asked, address)
	}
	got := info.NetworkSettings.Ports["50051/tcp"]
	if len(got) != 1 || got[0].HostIP != address || got[0].HostPort == "" || got[0].HostPort == "0" {
		t.Errorf("port published at %+v, want one binding on %s with the port the engine picked", got, address)
	}
	mode := string(info.HostConfig.NetworkMode)
	nw, err := api.NetworkInspect(ctx, mode, network.InspectOptions{})
	if err != nil {
		t.Fatalf("the server's network %q: %v", mode, err)
	}
	t.Logf("server container: network %s %v, ports %+v", mode, nw.Options, got)
	if nw.Options["com.docker.network.bridge.enable_ip_masquerade"] != "false" || nw.Options["com.docker.network.bridge.enable_icc"] != "false" ||
		nw.Labels["io.grpcbench.images"] != testImageName || len(nw.Containers) != 1 {
		t.Errorf("the server's network %s: options %v, labels %v, %d containers; want no masquerade, no inter-container traffic, the run's labels, the server alone",
			mode, nw.Options, nw.Labels, len(nw.Containers))
	}

	// The server's image is Debian's, with bash: from the server's own
	// namespace, connect to a port this test listens on.
	lis, err := net.Listen("tcp", hostSide+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := lis.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := lis.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d' && echo reached || echo cut off", hostSide, port)
	out := runIn(t, api, info.Config.Image, "container:"+ids[0], probe)
	select {
	case <-accepted:
		t.Errorf("the server's namespace reached this machine at %s:%d (%s)", hostSide, port, out)
	default:
	}
	if strings.TrimSpace(out) != "cut off" {
		t.Errorf("an outbound connection from the server's namespace: %q, want it cut off", out)
	}
	dnsIsCut(t, api, info.Config.Image, ids[0])
}

// dnsIsCut looks a name up from the server's namespace while this machine
// drops, and counts, the DNS queries the servers' engine's namespace sends
// through it (scripts/second-engine routes everything through this
// machine): the engine's DNS server must forward none for the server, and
// the name must not resolve.
func dnsIsCut(t *testing.T, api *client.Client, image, id string) {
	t.Helper()
	rule := []string{"FORWARD", "-i", "gbsecond0", "-p", "udp", "--dport", "53", "-m", "comment", "--comment", "grpcbench-e2e-dns", "-j", "DROP"}
	iptables := func(args ...string) string {
		out, err := exec.Command("iptables", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("iptables %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	iptables(append([]string{"-I"}, rule...)...)
	defer iptables(append([]string{"-D"}, rule...)...)
	info, err := api.ContainerInspect(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := runIn(t, api, image, "container:"+id, "timeout 10 getent hosts deb.debian.org && echo resolved || echo not resolved")
	dropped := -1
	for _, line := range strings.Split(iptables("-L", "FORWARD", "-v", "-x", "-n"), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(line, "grpcbench-e2e-dns") {
			fmt.Sscan(f[0], &dropped)
		}
	}
	t.Logf("server container: DNS %v; a lookup from its namespace: %s; queries it sent out: %d", info.HostConfig.DNS, strings.TrimSpace(out), dropped)
	if dropped != 0 || strings.TrimSpace(out) != "not resolved" {
		t.Errorf("a name lookup from the server's namespace: %q, %d queries sent out of its engine's namespace; want no answer and none sent", out, dropped)
	}
}

// runIn runs bash -c script in a throwaway container of image with the
// network mode given, and returns what it printed.
func runIn(t *testing.T, api *client.Client, image, mode, script string) string {
	t.Helper()
	ctx := context.Background()
	created, err := api.ContainerCreate(ctx, &container.Config{Image: image, Entrypoint: []string{"bash", "-c", script}},
		&container.HostConfig{NetworkMode: container.NetworkMode(mode)}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer api.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true})
	if err := api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	statusC, errC := api.ContainerWait(ctx, created.ID, container.WaitConditionNotRunning)
	select {
	case <-statusC:
	case err := <-errC:
		t.Fatal(err)
	}
	logs, err := api.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var stdout, stderr strings.Builder
	if _, err := stdcopy.StdCopy(&stdout, &stderr, logs); err != nil {
		t.Fatal(err)
	}
	return stdout.String()
}

// assertNoNetworksLeft: the servers' own networks go with them.
func assertNoNetworksLeft(t *testing.T, api *client.Client) {
	t.Helper()
	list, err := api.NetworkList(context.Background(), network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "io.grpcbench.images="+testImageName))})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list {
		t.Errorf("network left behind by the run: %s", n.Name)
	}
}

func mergeSettings(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
