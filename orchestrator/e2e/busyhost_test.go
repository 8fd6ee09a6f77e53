//go:build e2e

package e2e_test

import (
	"strings"
	"sync/atomic"
	"testing"
)

// TestBusyHostIsFlagged keeps a core of the machine busy beside a run: the
// run must say so in bench.txt and record the other work of each round.
func TestBusyHostIsFlagged(t *testing.T) {
	api := engine(t)
	var stop atomic.Bool
	spun := make(chan struct{})
	go func() {
		defer close(spun)
		for !stop.Load() {
		}
	}()
	env := benchEnv(t, map[string]string{"GRPC_LOAD_TOOL": "h2"})
	res := runBinary(t, repoRoot(t), env, "bench")
	stop.Store(true)
	<-spun
	if res.code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	bench, run := readRun(t, runFolder(t, env))
	if !containsLine(bench, "! go_grpc: busy host: other work than the server and its client kept more than 0.3 cores busy in 1 of 1 rounds") {
		t.Errorf("bench.txt does not flag the busy host:\n%s", bench)
	}
	m := servers(t, run)[0].Rounds[0].Measurement
	if m.OtherCores == nil || *m.OtherCores < 0.3 {
		t.Errorf("other work recorded %v cores, want at least 0.3 beside a spinning core", m.OtherCores)
	}
	assertNoContainersLeft(t, api)
}

// containsLine says whether a line of text starts with prefix.
func containsLine(text, prefix string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}
