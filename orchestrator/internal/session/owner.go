package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// TokenFile is the file of a run's folder that holds the token of its
// locks while it runs.
const TokenFile = ".lock-token"

// proc is this machine's process file system.
const proc = procfs("/proc")

// self is this process as the owner of a run's lock, the run's folder dir
// holding token.
func self(run, dir, token string) backend.Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	pidNamespace, _ := os.Readlink("/proc/self/ns/pid")
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	o := backend.Owner{Host: host, Boot: readTrimmed("/proc/sys/kernel/random/boot_id"), PIDNamespace: pidNamespace, PID: pid,
		Start: proc.start(pid), Run: run, Token: token, Dir: dir, Container: containerOf(mounts)}
	if o.Container == "" { // a container's machine id is its image's, shared by every container of it
		o.Machine = readTrimmed("/etc/machine-id")
	}
	return o
}

// newToken is a run's random token.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

func readTrimmed(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// procfs reads processes from a proc file system: /proc, or a folder of
// its shape in tests.
type procfs string

// start is when the process started, in clock ticks since boot (field 22
// of /proc/<pid>/stat), 0 when it is not there: with the boot id and the
// pid it names one process of a PID namespace, unlike the pid alone, which
// a restarted container's first process has again.
func (p procfs) start(pid int) uint64 {
	b, err := os.ReadFile(filepath.Join(string(p), strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count after it.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 20 {
		return 0
	}
	start, _ := strconv.ParseUint(fields[19], 10, 64)
	return start
}

// nspid is the process's pid in each PID namespace from the reader's own
// down to the process's (the NSpid line of /proc/<pid>/status): a process
// of a namespace below the reader's has two or more.
func (p procfs) nspid(pid int) []int {
	b, err := os.ReadFile(filepath.Join(string(p), strconv.Itoa(pid), "status"))
	if err != nil {
		return nil
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			var pids []int
			for _, f := range strings.Fields(rest) {
				n, err := strconv.Atoi(f)
				if err != nil {
					return nil
				}
				pids = append(pids, n)
			}
			return pids
		}
	}
	return nil
}

// containerHostname is where the engine keeps a Docker container's
// /etc/hostname, which it mounts into that container.
var containerHostname = regexp.MustCompile(`/containers/([0-9a-f]{64})/hostname$`)

// containerOf is the id of the Docker container whose mounts mountinfo
// (/proc/self/mountinfo) lists, "" when they are not a container's: only
// the mount at /etc/hostname counts, since a machine's own mounts may name
// other containers' folders (`--ipc=shareable`, swarm secrets).
func containerOf(mountinfo []byte) string {
	for line := range strings.Lines(string(mountinfo)) {
		// id parent major:minor root mount-point ...
		fields := strings.Fields(line)
		if len(fields) < 5 || fields[4] != "/etc/hostname" {
			continue
		}
		if m := containerHostname.FindStringSubmatch(fields[3]); m != nil {
			return m[1]
		}
	}
	return ""
}

// holdsToken says whether the run folder dir, here, holds token.
func holdsToken(dir, token string) bool {
	b, err := os.ReadFile(filepath.Join(dir, TokenFile))
	return err == nil && token != "" && strings.TrimSpace(string(b)) == token
}

// owners answers whether the owner of a lock on a host still runs.
type owners interface {
	Started(ctx context.Context, id string) (started string, running bool, err error)
	Processes(ctx context.Context, id string) ([]int, error)
}

// alive says whether the owner of a lock on a host still runs, as this
// process can tell.
func alive(host owners) func(context.Context, backend.Owner) bool {
	return aliveAs(self("", "", ""), host, proc)
}

// aliveAs says whether the owner of a lock on a host still runs, as me,
// reading processes from p, can tell:
//   - in my PID namespace and boot, when a process with its pid and start
//     runs (a lock that names no namespace, an older grpcbench's, of my
//     host name and boot, too);
//   - in my container but another PID namespace or boot, never: the
//     container started again since;
//   - in a container the host runs, when that container runs since the
//     start the lock recorded, and, on my boot, has the owner's process
//     among its processes wherever I can see them (a run started by
//     `docker exec` into a container that runs on is not that container);
//   - on another boot of this machine (the same machine id, or the run
//     folder here holding the lock's token), never: it rebooted since.
//
// Anything else counts as alive, a live run's lock must not be taken: a
// machine of the same name without that file, another PID namespace of
// this boot whose container the host does not run (a grpcbench in a
// `--network host` container), a host that cannot answer.
func aliveAs(me backend.Owner, host owners, p procfs) func(context.Context, backend.Owner) bool {
	return func(ctx context.Context, o backend.Owner) bool {
		thisBoot := o.Boot == me.Boot
		switch {
		case thisBoot && (o.PIDNamespace == me.PIDNamespace || o.PIDNamespace == "" && o.Host == me.Host): // "": a lock of an older grpcbench
			return o.Start != 0 && p.start(o.PID) == o.Start
		case o.Container != "" && o.Container == me.Container:
			return false
		case o.Started != "":
			return containerRuns(ctx, host, p, o, thisBoot)
		case !thisBoot:
			rebooted := o.Machine != "" && o.Machine == me.Machine || o.Host == me.Host && holdsToken(o.Dir, o.Token)
			return !rebooted
		default:
			return true
		}
	}
}

// containerRuns says whether the owner's container runs on the host since
// the start the lock recorded with the owner's process in it: a process of
// the container, by the host's pid, that this machine sees in a PID
// namespace below its own with the owner's pid and start. When the
// container's processes are out of sight, its running is all there is.
func containerRuns(ctx context.Context, host owners, p procfs, o backend.Owner, thisBoot bool) bool {
	started, running, err := host.Started(ctx, o.Container)
	if errors.Is(err, backend.ErrMissing) {
		return false
	}
	if err != nil {
		return true
	}
	if !running || started != o.Started {
		return false
	}
	if !thisBoot {
		return true
	}
	pids, err := host.Processes(ctx, o.Container)
	if err != nil {
		return true
	}
	seen := false
	for _, pid := range pids {
		ns := p.nspid(pid)
		if len(ns) < 2 { // not there, or not below this namespace: not the host's numbering
			continue
		}
		seen = true
		if ns[len(ns)-1] == o.PID && p.start(pid) == o.Start {
			return true
		}
	}
	return !seen
}
