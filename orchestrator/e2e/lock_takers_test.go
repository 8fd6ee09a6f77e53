//go:build e2e

// The lock on the real engine: takers racing, release, registry paths.
package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/docker"
)

// lockEngine is the test engine (DOCKER_HOST, else the local socket).
func lockEngine(t *testing.T) *docker.Host {
	t.Helper()
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	eng, err := docker.Connect(context.Background(), backend.Target{Address: host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// lockName is an image name of this test process alone.
func lockName(base string) string {
	name := fmt.Sprintf("%s-%d", base, os.Getpid())
	if image := os.Getenv("GRPCBENCH_TEST_IMAGE"); image != "" {
		name = image + "-" + name
	}
	return name
}

// runs says a lock's owner is alive unless its run is named "dead".
func runs(_ context.Context, o backend.Owner) bool { return o.Run != "dead" }

// TestTwoTakersAtOnce leaves the lock of a dead run, then lets several
// takers go for it at the same moment, on the real engine: exactly one
// takes it over, the others are told who holds it. Once given back, it is
// gone, and a taker after that has it at once.
func TestTwoTakersAtOnce(t *testing.T) {
	eng := lockEngine(t)
	ctx := context.Background()
	name := lockName("takers")
	if _, err := eng.Lock(ctx, name, backend.Owner{Run: "dead"}, runs); err != nil { // never given back, as a killed run leaves it
		t.Fatal(err)
	}
	for round := range 3 {
		const takers = 4
		var wg sync.WaitGroup
		releases := make([]func(context.Context) error, takers)
		errs := make([]error, takers)
		for i := range takers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				releases[i], errs[i] = eng.Lock(ctx, name, backend.Owner{Run: fmt.Sprintf("taker-%d-%d", round, i), PID: i}, runs)
			}()
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			var locked *docker.LockedError
			switch {
			case err == nil && won >= 0:
				t.Fatalf("round %d: takers %d and %d both hold the lock", round, won, i)
			case err == nil:
				won = i
			case !errors.As(err, &locked):
				t.Errorf("round %d: taker %d: %v, want a LockedError", round, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no taker won: %v", round, errs)
		}
		for i, err := range errs {
			var locked *docker.LockedError
			if errors.As(err, &locked) && locked.Holder.Run != fmt.Sprintf("taker-%d-%d", round, won) {
				t.Errorf("round %d: taker %d was told %s holds the lock, not the winner %d", round, i, locked.Holder, won)
			}
		}
		// Dead from now on, as if its process had been killed: the next
		// round takes it over.
		if round == 2 {
			if err := releases[won](ctx); err != nil {
				t.Fatal(err)
			}
		} else {
			dead, err := eng.Lock(ctx, name, backend.Owner{Run: "dead"}, func(context.Context, backend.Owner) bool { return false })
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dead(ctx) })
		}
	}
	release, err := eng.Lock(ctx, name, backend.Owner{Run: "after"}, runs)
	if err != nil {
		t.Fatalf("the lock given back cannot be taken: %v", err)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseRemovesOnlyItsOwnLock: a run whose lock was taken over (it
// was thought dead) gives back nothing of the new owner's.
func TestReleaseRemovesOnlyItsOwnLock(t *testing.T) {
	eng := lockEngine(t)
	ctx := context.Background()
	name := lockName("release")
	first, err := eng.Lock(ctx, name, backend.Owner{Run: "first"}, runs)
	if err != nil {
		t.Fatal(err)
	}
	second, err := eng.Lock(ctx, name, backend.Owner{Run: "second"}, func(context.Context, backend.Owner) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	defer second(ctx)
	if err := first(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = eng.Lock(ctx, name, backend.Owner{Run: "third"}, runs)
	var locked *docker.LockedError
	if !errors.As(err, &locked) || locked.Holder.Run != "second" {
		t.Errorf("after the first run gave its lock back, a third taker gets %v, want the second run's lock", err)
	}
}

// TestLockOfARegistryPath: an image name with a registry path makes a
// valid container name, apart from the same name with _ for /.
func TestLockOfARegistryPath(t *testing.T) {
	eng := lockEngine(t)
	ctx := context.Background()
	name := "registry.local/team/" + lockName("bench")
	valid := regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)
	if lock := docker.LockName(name); !valid.MatchString(lock) || lock == docker.LockName("registry.local_team_"+lockName("bench")) {
		t.Errorf("lock name %q of %q", lock, name)
	}
	release, err := eng.Lock(ctx, name, backend.Owner{Run: "r"}, runs)
	if err != nil {
		t.Fatal(err)
	}
	_, err = eng.Lock(ctx, name, backend.Owner{Run: "s"}, runs)
	var locked *docker.LockedError
	if !errors.As(err, &locked) || locked.Lock != docker.LockName(name) {
		t.Errorf("a second taker of %s: %v", name, err)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
}
