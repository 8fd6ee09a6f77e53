package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend/fake"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"

	// The Docker backend checks and compares the tcp:// and ssh:// addresses.
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/docker"
)

// machine is a host's machine, large enough for the default settings.
var machine = backend.Facts{CPUs: 4, Memory: 8 << 30, Arch: "amd64", Kernel: "6.1", OS: "Debian", Version: "26.1", Cgroup: "2", Storage: "overlay2"}

// hostsAt is the fake hosts by address, dialled in place of a backend.
type hostsAt map[string]*fake.Host

func (hs hostsAt) dial(_ context.Context, t backend.Target) (backend.Host, error) {
	h, ok := hs[t.Address]
	if !ok {
		return nil, fmt.Errorf("no host at %s: %w", t.Address, backend.ErrUnreachable)
	}
	return h, nil
}

// openOn opens a session of the repository's go_grpc on the hosts, with
// the settings vars add; results go to a folder of the test's.
func openOn(t *testing.T, hosts hostsAt, vars map[string]string) (*Session, string, error) {
	t.Helper()
	all := map[string]string{"GRPC_IMAGE_NAME": "sess", "GRPC_BENCHMARKS": "go_grpc", "GRPC_RESULTS_DIR": t.TempDir()}
	for k, v := range vars {
		all[k] = v
	}
	cfg, err := config.Parse(all, tools)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s, err := open(context.Background(), filepath.Join("..", "..", ".."), cfg, nil, nil, false, &out, hosts.dial)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, out.String(), err
}

const one = "tcp://one:2375"

// TestOpenTakesTheLockAndReaps: a session holds the host's lock of its
// image name with the token of its folder, removes the containers a killed
// run of that image name left (not another image name's), and gives the
// lock back and closes the host on Close.
func TestOpenTakesTheLockAndReaps(t *testing.T) {
	h := fake.New(one, machine)
	h.Leave(map[string]string{backend.ImagesLabel: "sess", backend.RunLabel: "killed"})
	h.Leave(map[string]string{backend.ImagesLabel: "sess", backend.RunLabel: "killed"})
	h.Leave(map[string]string{backend.ImagesLabel: "other", backend.RunLabel: "running"})
	s, out, err := openOn(t, hostsAt{one: h}, map[string]string{"DOCKER_HOST": one})
	if err != nil {
		t.Fatal(err)
	}
	holder, held := h.Holder("sess")
	token, _ := os.ReadFile(s.Folder.Path(TokenFile))
	if !held || holder.Run != s.Run.ID || holder.Token+"\n" != string(token) {
		t.Errorf("lock = %+v (held %v), want the run %s with its folder's token %q", holder, held, s.Run.ID, token)
	}
	if want := "removed 2 containers left behind by an earlier run on " + one; !strings.Contains(out, want) {
		t.Errorf("output %q does not say %q", out, want)
	}
	if left := h.Left(); len(left) != 1 || left[0].Spec().Labels[backend.ImagesLabel] != "other" {
		t.Errorf("%d containers left, want the other image name's only", len(left))
	}
	if s.Run.Hardware.CPUs != 4 || s.Run.Hardware.DockerVersion != "26.1" || s.Run.ClientHardware != nil {
		t.Errorf("hardware = %+v, client %+v; want the host's facts, and no client machine", s.Run.Hardware, s.Run.ClientHardware)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, held := h.Holder("sess"); held || !h.Closed() {
		t.Errorf("after Close: lock held %v, host closed %v; want given back and closed", held, h.Closed())
	}
}

// TestOpenRefusedByALiveLock: a lock a live run holds refuses the session,
// which leaves no folder and nothing removed; a dead run's is taken over.
func TestOpenRefusedByALiveLock(t *testing.T) {
	h := fake.New(one, machine)
	h.SetLock("sess", backend.Owner{Host: "elsewhere", Run: "other-run", PID: 7})
	h.Leave(map[string]string{backend.ImagesLabel: "sess"})
	results := t.TempDir()
	_, _, err := openOn(t, hostsAt{one: h}, map[string]string{"DOCKER_HOST": one, "GRPC_RESULTS_DIR": results})
	var locked *fake.LockedError
	if !errors.As(err, &locked) || locked.Holder.Run != "other-run" {
		t.Fatalf("Open = %v, want refused by other-run's lock", err)
	}
	if entries, _ := os.ReadDir(results); len(entries) != 0 {
		t.Errorf("a refused run left %d entries in the results folder", len(entries))
	}
	if len(h.Left()) != 1 || !h.Closed() {
		t.Errorf("a refused run removed containers (%d left) or kept the host open (closed %v)", len(h.Left()), h.Closed())
	}

	// A run of this machine and boot whose process is gone: its lock is
	// taken over.
	me := self("", "", "")
	h = fake.New(one, machine)
	h.SetLock("sess", backend.Owner{Host: me.Host, Boot: me.Boot, PIDNamespace: me.PIDNamespace, PID: os.Getpid(), Start: 1, Run: "dead-run"})
	s, _, err := openOn(t, hostsAt{one: h}, map[string]string{"DOCKER_HOST": one})
	if err != nil {
		t.Fatalf("Open over a dead run's lock: %v", err)
	}
	if holder, _ := h.Holder("sess"); holder.Run != s.Run.ID {
		t.Errorf("lock held by %s, want this run", holder.Run)
	}
}

// TestHeldTakesALostLockAgain: a lock removed during the run is taken
// again before the next round; one another live run took meanwhile stops
// the run.
func TestHeldTakesALostLockAgain(t *testing.T) {
	h := fake.New(one, machine)
	s, _, err := openOn(t, hostsAt{one: h}, map[string]string{"DOCKER_HOST": one})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Held(ctx); err != nil {
		t.Fatalf("Held with the lock in place: %v", err)
	}
	h.DropLock("sess")
	if err := s.Held(ctx); err != nil {
		t.Fatalf("Held after the lock was removed: %v", err)
	}
	if holder, held := h.Holder("sess"); !held || holder.Run != s.Run.ID {
		t.Errorf("lock after Held = %+v (held %v), want this run's again", holder, held)
	}
	h.DropLock("sess")
	h.SetLock("sess", backend.Owner{Host: "elsewhere", Run: "thief"})
	err = s.Held(ctx)
	if err == nil || !strings.Contains(err.Error(), "was removed during the run") || !strings.Contains(err.Error(), "thief") {
		t.Errorf("Held with another run's lock = %v, want the run stopped naming it", err)
	}
}

// TestTwoHosts: with servers and clients on two hosts, both are locked and
// reaped, the record has both machines, the suite's clients reach the
// servers at GRPC_SERVER_ADDRESS, and either host's silence is named.
func TestTwoHosts(t *testing.T) {
	const servers, clients = "tcp://servers:2375", "tcp://clients:2375"
	big := machine
	big.CPUs = 8
	hs := hostsAt{servers: fake.New(servers, machine), clients: fake.New(clients, big)}
	hs[clients].Leave(map[string]string{backend.ImagesLabel: "sess"})
	s, out, err := openOn(t, hs, map[string]string{"GRPC_SERVER_DOCKER_HOST": servers, "GRPC_CLIENT_DOCKER_HOST": clients,
		"GRPC_SERVER_ADDRESS": "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if holder, held := h.Holder("sess"); !held || holder.Run != s.Run.ID {
			t.Errorf("%s: lock = %+v (held %v), want this run's", h.Address(), holder, held)
		}
	}
	if !strings.Contains(out, "removed 1 containers left behind by an earlier run on "+clients) || len(hs[clients].Left()) != 0 {
		t.Errorf("output %q: the clients' host was not reaped", out)
	}
	for _, addr := range []string{servers, clients} {
		if !strings.Contains(out, "warning: the engine at "+addr+" is reached over plain TCP, without TLS") {
			t.Errorf("output %q does not warn that %s is reached without TLS", out, addr)
		}
	}
	if s.Run.ClientHardware == nil || s.Run.ClientHardware.CPUs != 8 || s.Run.Hardware.CPUs != 4 {
		t.Errorf("hardware = %+v, client %+v; want 4 and 8 CPUs", s.Run.Hardware, s.Run.ClientHardware)
	}
	sh := s.suiteOptions()
	if sh.Servers != hs[servers] || sh.Clients != hs[clients] || sh.Remote == nil || sh.Remote.IP != "192.0.2.1" {
		t.Errorf("suite hosts = %+v, want servers, clients and the remote address", sh)
	}
	if _, b := s.Builders(); b.Host != hs[clients] || b.Peer != hs[servers] {
		t.Error("the client image is not built on the clients' host with the servers' as its peer")
	}
	hs[clients].PingErr = errors.New("connection refused")
	if err := s.Alive(context.Background()); err == nil || !strings.Contains(err.Error(), clients) {
		t.Errorf("Alive with the clients' host gone = %v, want it named", err)
	}
}

// TestUnreachableHostWithBadSettings: a host that does not answer is said
// after the settings that are wrong.
func TestUnreachableHostWithBadSettings(t *testing.T) {
	_, _, err := openOn(t, hostsAt{}, map[string]string{"DOCKER_HOST": one, "GRPC_BENCHMARKS": "no_such_server"})
	var cfgErr *config.Error
	if !errors.As(err, &cfgErr) || !errors.Is(err, backend.ErrUnreachable) {
		t.Errorf("Open = %v, want the bad setting and the unreachable host", err)
	}
}
