package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// engineSays answers for containers as an engine would.
type engineSays struct {
	started string
	running bool
	err     error
	pids    []int
}

func (e engineSays) Started(context.Context, string) (string, bool, error) {
	return e.started, e.running, e.err
}

func (e engineSays) Processes(context.Context, string) ([]int, error) { return e.pids, e.err }

// fakeProc writes a process of a proc file system under dir: its start
// time and its pids from the reader's namespace down.
func fakeProc(t *testing.T, dir string, start uint64, nspid ...int) {
	t.Helper()
	pid := filepath.Join(dir, strconv.Itoa(nspid[0]))
	if err := os.MkdirAll(pid, 0o755); err != nil {
		t.Fatal(err)
	}
	// A command name with spaces and a parenthesis, as a server's may be.
	stat := fmt.Sprintf("%d (a (b) c) S 1 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 %d 1000 100\n", nspid[0], start)
	var ns []string
	for _, n := range nspid {
		ns = append(ns, strconv.Itoa(n))
	}
	status := "Name:\tgrpcbench\nNSpid:\t" + strings.Join(ns, "\t") + "\n"
	if err := os.WriteFile(filepath.Join(pid, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pid, "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOwnerAlive: each rule of aliveAs, for a taker on a machine's own
// namespaces (me) and one in a container, with processes in a proc file
// system the test writes.
func TestOwnerAlive(t *testing.T) {
	proc := t.TempDir()
	fakeProc(t, proc, 500, 40)      // a process of my namespace
	fakeProc(t, proc, 700, 900, 1)  // a container's first process, as I see it
	fakeProc(t, proc, 710, 910, 35) // a process exec'd into that container
	fakeProc(t, proc, 720, 920)     // a process of my namespace again
	me := backend.Owner{Host: "bench1", Boot: "boot-2", Machine: "m1", PIDNamespace: "pid:[4026531836]"}
	inContainer := backend.Owner{Host: "bench1", Boot: "boot-2", Container: "c0ffee", PIDNamespace: "pid:[4026532184]"}
	withMe := func(f func(*backend.Owner)) backend.Owner { o := me; f(&o); return o }
	withC := func(f func(*backend.Owner)) backend.Owner { o := inContainer; f(&o); return o }
	rebootedWithToken := withMe(func(o *backend.Owner) { o.Boot, o.Machine, o.Token, o.Dir = "boot-1", "", newToken(), t.TempDir() })
	if err := os.WriteFile(filepath.Join(rebootedWithToken.Dir, TokenFile), []byte(rebootedWithToken.Token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	running := engineSays{started: "2026-12-01T10:00:00Z", running: true, pids: []int{900, 910}}
	execd := withC(func(o *backend.Owner) { o.Started, o.PID, o.Start = running.started, 35, 710 })
	missing := fmt.Errorf("inspect: %w", backend.ErrMissing)
	for _, tc := range []struct {
		name   string
		taker  backend.Owner
		owner  backend.Owner
		engine engineSays
		alive  bool
	}{
		{"my namespace: its process runs", me, withMe(func(o *backend.Owner) { o.PID, o.Start = 40, 500 }), engineSays{}, true},
		{"my namespace: another process has its pid", me, withMe(func(o *backend.Owner) { o.PID, o.Start = 40, 501 }), engineSays{}, false},
		{"my namespace: no process has its pid", me, withMe(func(o *backend.Owner) { o.PID, o.Start = 41, 500 }), engineSays{}, false},
		{"an older grpcbench's lock, its process gone", me, backend.Owner{Host: me.Host, Boot: me.Boot, PID: 40, Start: 499}, engineSays{}, false},
		{"an older grpcbench's lock, its process there", me, backend.Owner{Host: me.Host, Boot: me.Boot, PID: 40, Start: 500}, engineSays{}, true},
		{"another namespace of my boot, a container the host does not run", me, withC(func(o *backend.Owner) { o.PID, o.Start = 40, 999 }), engineSays{}, true},
		{"a host run seen from a --network host container", withC(func(o *backend.Owner) {}), withMe(func(o *backend.Owner) { o.PID, o.Start = 77, 5 }), engineSays{}, true},
		{"my container, since started again", withC(func(o *backend.Owner) { o.PIDNamespace = "pid:[4026532999]" }), withC(func(o *backend.Owner) { o.PID, o.Start = 1, 5 }), engineSays{}, false},
		{"my container, rebooted", withC(func(o *backend.Owner) { o.Boot = "boot-3" }), withC(func(o *backend.Owner) { o.PID, o.Start = 1, 5 }), engineSays{}, false},
		{"its container runs with its process", me, execd, running, true},
		{"its container runs, its exec'd process gone", me, withC(func(o *backend.Owner) { o.Started, o.PID, o.Start = running.started, 36, 711 }), running, false},
		{"its container runs, its processes out of sight", me, withC(func(o *backend.Owner) { o.Started, o.PID, o.Start = running.started, 36, 711 }),
			engineSays{started: running.started, running: true, pids: []int{920}}, true},
		{"its container runs, on another boot", withMe(func(o *backend.Owner) { o.Boot = "elsewhere" }), execd, running, true},
		{"its container started again", me, execd, engineSays{started: "2026-12-01T10:05:00Z", running: true}, false},
		{"its container stopped", me, execd, engineSays{started: running.started}, false},
		{"its container removed", me, execd, engineSays{err: missing}, false},
		{"the engine cannot tell", me, execd, engineSays{err: errors.New("timeout")}, true},
		{"this machine rebooted, its run folder gone", me, withMe(func(o *backend.Owner) { o.Boot, o.PID, o.Start, o.Dir = "boot-1", 40, 500, "/gone" }), engineSays{}, false},
		{"this machine rebooted, its run folder here", me, rebootedWithToken, engineSays{}, false},
		{"a machine of the same name", me, withMe(func(o *backend.Owner) { o.Boot, o.Machine, o.Dir = "boot-9", "m2", t.TempDir() }), engineSays{}, true},
		{"a container of the same name, elsewhere", me, withC(func(o *backend.Owner) { o.Boot, o.Host = "boot-9", "bench1" }), engineSays{}, true},
		{"another machine", me, backend.Owner{Host: "elsewhere", Boot: "b", PID: 7, Start: 9}, engineSays{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := aliveAs(tc.taker, tc.engine, procfs(proc))(context.Background(), tc.owner); got != tc.alive {
				t.Errorf("alive = %v, want %v", got, tc.alive)
			}
		})
	}
}

// TestSelfIsAliveAndARestartIsNot: this process, as self describes it, is
// alive to itself; with another start (a restarted container's pid 1 has
// the pid, boot and namespace's place again) it is not.
func TestSelfIsAliveAndARestartIsNot(t *testing.T) {
	me := self("r", t.TempDir(), newToken())
	if me.Start == 0 || me.Boot == "" || !strings.HasPrefix(me.PIDNamespace, "pid:[") {
		t.Fatalf("no start, boot id or PID namespace for this process: %+v", me)
	}
	restarted := me
	restarted.Start++
	check := alive(engineSays{})
	if !check(context.Background(), me) || check(context.Background(), restarted) {
		t.Errorf("alive(self) = %v, alive(restarted) = %v; want true, false", check(context.Background(), me), check(context.Background(), restarted))
	}
}

// TestContainerOfReadsTheContainersOwnMounts: inside a container, the
// engine's folder of the container is mounted at /etc/hostname; a
// machine's own mount table names other containers' folders (a container
// started with --ipc=shareable, a swarm service's secrets), which are not
// this process's container, nor is the shm of a container whose IPC this
// one joined.
func TestContainerOfReadsTheContainersOwnMounts(t *testing.T) {
	const own = "3309fad0eb5d76f3245910736c78ea7ce4779b0a942309124d6f42c75d2b0e3f"
	const other = "51e0ff94d099a6a0c1b0e3f2e4c46d7d1fcb0a6d7cf2c1c0e0d4aa8c7f3e2b19"
	inContainer := "95 107 0:52 / /dev/shm rw - tmpfs shm rw\n" +
		"96 107 254:0 /var/lib/docker/containers/" + other + "/mounts/shm /dev/shm rw,relatime - ext4 /dev/vda rw\n" +
		"97 107 254:0 /var/lib/docker/containers/" + own + "/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/vda rw\n" +
		"98 107 254:0 /var/lib/docker/containers/" + own + "/hostname /etc/hostname rw,relatime - ext4 /dev/vda rw\n"
	onHost := "29 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n" +
		"412 29 0:61 / /var/lib/docker/containers/" + other + "/mounts/shm rw,nosuid,nodev,noexec,relatime shared:220 - tmpfs shm rw,size=65536k\n" +
		"413 29 0:62 / /var/lib/docker/containers/" + other + "/mounts/secrets rw,relatime - tmpfs tmpfs rw\n"
	if got := containerOf([]byte(inContainer)); got != own {
		t.Errorf("in a container: %q, want %q", got, own)
	}
	if got := containerOf([]byte(onHost)); got != "" {
		t.Errorf("on a machine with other containers' mounts: %q, want none", got)
	}
}
