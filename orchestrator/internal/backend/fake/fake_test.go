package fake_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend/fake"
)

// start starts a container behaving as b on a new host.
func start(t *testing.T, b fake.Behaviour) (*fake.Host, *fake.Container) {
	t.Helper()
	h := fake.New("fake://test", backend.Facts{})
	h.Script = func(backend.ContainerSpec) fake.Behaviour { return b }
	if _, err := h.Start(context.Background(), backend.ContainerSpec{}); err != nil {
		t.Fatal(err)
	}
	return h, h.Containers()[0]
}

// exited waits for c in the background and says what Wait returned.
func exited(ctx context.Context, c *fake.Container) <-chan error {
	done := make(chan error, 1)
	go func() {
		code, err := c.Wait(ctx)
		if err == nil && code != 7 {
			err = errors.New("exit code is not the script's")
		}
		done <- err
	}()
	return done
}

// TestTakesRunsAMomentThenExits: a container that takes time runs for it,
// then has exited with its code, its logs followed to the end.
func TestTakesRunsAMomentThenExits(t *testing.T) {
	_, c := start(t, fake.Behaviour{Takes: 50 * time.Millisecond, Exit: 7, Stdout: "done\n"})
	if st, err := c.State(context.Background()); err != nil || !st.Running {
		t.Fatalf("state at the start %+v, %v: want running", st, err)
	}
	begun := time.Now()
	var out bytes.Buffer
	if err := c.Logs(context.Background(), true, &out, &out); err != nil || out.String() != "done\n" {
		t.Errorf("logs %q, %v", out.String(), err)
	}
	if err := <-exited(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begun); took < 40*time.Millisecond {
		t.Errorf("it exited after %v, before it had taken its time", took)
	}
	if st, err := c.State(context.Background()); err != nil || st.Running || st.ExitCode != 7 {
		t.Errorf("state at the end %+v, %v: want exited with 7", st, err)
	}
}

// TestTakesIsCutByTheContext: waiting for a container that takes time
// ends with ctx, and a wait begun after ctx ended returns at once, as on a
// real host, whether the container has exited by then or not.
func TestTakesIsCutByTheContext(t *testing.T) {
	_, c := start(t, fake.Behaviour{Takes: time.Hour, Exit: 7})
	ctx, cancel := context.WithCancel(context.Background())
	done := exited(ctx, c)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Wait = %v, want context.Canceled", err)
	}
	if err := c.Logs(ctx, true, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
		t.Errorf("following the logs = %v, want context.Canceled", err)
	}
	_, quick := start(t, fake.Behaviour{Exit: 7})
	if _, err := quick.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after ctx ended = %v, want context.Canceled", err)
	}
}

// TestEndStopsARunningContainer: a running container ended on demand has
// exited as End says, OOM kill included, and is still there to be read;
// whoever waited, followed its logs or read its stats goes on, and a
// second End changes nothing.
func TestEndStopsARunningContainer(t *testing.T) {
	h, c := start(t, fake.Behaviour{Runs: true})
	done := exited(context.Background(), c)
	followed := make(chan error, 1)
	go func() { followed <- c.Logs(context.Background(), true, &bytes.Buffer{}, &bytes.Buffer{}) }()
	sampled := make(chan error, 1)
	go func() { sampled <- c.Stats(context.Background(), &bytes.Buffer{}, func(backend.Sample) {}) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned before the end: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	c.End(7, true)
	c.End(0, false)
	for what, ch := range map[string]<-chan error{"Wait": done, "Logs": followed, "Stats": sampled} {
		if err := <-ch; err != nil {
			t.Errorf("%s after End: %v", what, err)
		}
	}
	st, err := c.State(context.Background())
	if err != nil || st.Running || st.ExitCode != 7 || !st.OOMKilled {
		t.Errorf("state %+v, %v: want exited with 7, OOM killed", st, err)
	}
	if c.Removed() || len(h.Left()) != 1 {
		t.Error("an ended container is gone: it stays until it is removed")
	}
}

// TestRemoveKillsARunningContainer: removing a running container kills
// it (137), and an ended one keeps its code.
func TestRemoveKillsARunningContainer(t *testing.T) {
	_, running := start(t, fake.Behaviour{Runs: true})
	_, ended := start(t, fake.Behaviour{Runs: true})
	ended.End(7, false)
	for _, c := range []*fake.Container{running, ended} {
		if err := c.Remove(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if code, err := running.Wait(context.Background()); err != nil || code != 137 {
		t.Errorf("a removed running container: Wait = %d, %v; want 137", code, err)
	}
	if code, err := ended.Wait(context.Background()); err != nil || code != 7 {
		t.Errorf("a removed ended container: Wait = %d, %v; want 7", code, err)
	}
}
