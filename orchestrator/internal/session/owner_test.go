package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// engineSays answers for containers as an engine would.
type engineSays struct {
	started string
	running bool
	err     error
}

func (e engineSays) Started(context.Context, string) (string, bool, error) {
	return e.started, e.running, e.err
}

// TestRestartedOwnerIsNotAlive: inside the compose container a restarted
// grpcbench has the hostname, the boot id and the pid (1) of the one that
// took the lock, and only its start differs. That is emulated here with
// this test process: a lock with its host, boot and pid but another start
// is a dead owner's; with its own start, a live one's. Where the owner's
// container runs on the lock's engine, the engine's start of it decides.
func TestRestartedOwnerIsNotAlive(t *testing.T) {
	me := self("r", t.TempDir(), newToken())
	if me.Start == 0 || me.Boot == "" {
		t.Fatalf("no start or boot id for this process: %+v", me)
	}
	restarted := me
	restarted.Start++
	otherMachine := me
	otherMachine.Boot = "another boot"
	rebooted := otherMachine
	if err := os.WriteFile(filepath.Join(rebooted.Dir, TokenFile), []byte(rebooted.Token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	otherMachine.Dir = t.TempDir() // its run folder is not here
	inContainer := backend.Owner{Host: "4f1c2b9a8e7d", Boot: me.Boot, PID: 1, Start: 5, Container: "4f1c2b9a8e7d0000", Started: "2026-12-01T10:00:00Z"}
	missing := fmt.Errorf("inspect: %w", backend.ErrMissing)
	for _, tc := range []struct {
		name   string
		owner  backend.Owner
		engine engineSays
		alive  bool
	}{
		{"this process", me, engineSays{}, true},
		{"same host, boot and pid, another start", restarted, engineSays{}, false},
		{"a machine of the same name", otherMachine, engineSays{}, true},
		{"this machine, rebooted", rebooted, engineSays{}, false},
		{"another machine", backend.Owner{Host: "elsewhere", Boot: "b", PID: 7, Start: 9}, engineSays{}, true},
		{"its container runs", inContainer, engineSays{started: inContainer.Started, running: true}, true},
		{"its container restarted", inContainer, engineSays{started: "2026-12-01T10:05:00Z", running: true}, false},
		{"its container stopped", inContainer, engineSays{started: inContainer.Started}, false},
		{"its container removed", inContainer, engineSays{err: missing}, false},
		{"the engine cannot tell", inContainer, engineSays{err: errors.New("timeout")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := alive(tc.engine)(context.Background(), tc.owner); got != tc.alive {
				t.Errorf("alive = %v, want %v", got, tc.alive)
			}
		})
	}
}
