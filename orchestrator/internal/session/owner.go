package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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

// self is this process as the owner of a run's lock, the run's folder dir
// holding token.
func self(run, dir, token string) backend.Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return backend.Owner{Host: host, Boot: bootID(), PID: pid, Start: processStart(pid), Run: run, Token: token, Dir: dir, Container: ownContainer()}
}

// newToken is a run's random token.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// processStart is when the process started, in clock ticks since boot
// (field 22 of /proc/<pid>/stat), 0 when it is not there: with the boot id
// and the pid it names one process, unlike the pid alone, which a
// restarted container's first process has again.
func processStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count after it.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 20 {
		return 0
	}
	start, _ := strconv.ParseUint(fields[19], 10, 64)
	return start
}

// dockerContainer finds the id of a Docker container in the mounts of its
// /etc/hostname and /etc/resolv.conf.
var dockerContainer = regexp.MustCompile(`/containers/([0-9a-f]{64})/`)

// ownContainer is the id of the container this process runs in, "" when
// its mounts do not name one.
func ownContainer() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	if m := dockerContainer.FindSubmatch(b); m != nil {
		return string(m[1])
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
}

// alive says whether the owner of a lock on a host still runs: its container
// on that host, running since the start the lock recorded; else a
// process of this machine and boot with the recorded start; else, on a
// machine of the same name since rebooted, gone when the run folder here
// holds the lock's token. Another machine, or a container the host
// cannot be asked about, counts as alive: a live run's lock must not be
// taken.
func alive(host owners) func(context.Context, backend.Owner) bool {
	me := self("", "", "")
	return func(ctx context.Context, o backend.Owner) bool {
		if o.Container != "" {
			started, running, err := host.Started(ctx, o.Container)
			if errors.Is(err, backend.ErrMissing) {
				return false
			}
			return err != nil || running && started == o.Started
		}
		switch {
		case o.Host == me.Host && o.Boot == me.Boot:
			return o.Start != 0 && processStart(o.PID) == o.Start
		case o.Host == me.Host:
			return !holdsToken(o.Dir, o.Token)
		default:
			return true
		}
	}
}
