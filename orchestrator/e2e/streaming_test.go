//go:build e2e

package e2e_test

import (
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// TestStreamingCell runs go_grpc under stream_pingpong end to end, beside
// servers that break the ping-pong's rules (one echo too many, none at
// all, a stream that never ends): go_grpc is ranked in messages per
// second, the others are stopped by the gate before the load, each with
// its reason.
func TestStreamingCell(t *testing.T) {
	api := engine(t)
	broken := map[string]string{
		"stream_wrong_count": "more than the 10 replies the call asks for",
		"stream_no_echo":     "no echo of request 1 of 10: the server ended the stream early with OK",
		"stream_never_ends":  "after 10 replies: the stream did not end within 10s",
	}
	root := copyRepo(t, nil)
	addBrokenServers(t, root)
	var names []string
	for name := range broken {
		names = append(names, name)
	}
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": strings.Join(append(names, "go_grpc"), " "),
		"GRPC_REQUEST_SCENARIO": "stream_pingpong", "GRPC_LOAD_TOOL": "h2",
		"GRPC_BENCHMARK_DURATION": "3s", "GRPC_CLIENT_CONNECTIONS": "4", "GRPC_CLIENT_CONCURRENCY": "64"})
	res := runBinary(t, root, env, "bench")
	if res.code != 3 {
		t.Errorf("exit code %d, want 3\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	bench, run := readRun(t, runFolder(t, env))
	if !strings.Contains(bench, "| name                        |   msg/s |") {
		t.Errorf("bench.txt's header does not say msg/s:\n%s", bench)
	}
	rows := parseRows(t, bench)
	if r, ok := rows["go_grpc"]; !ok || r.rps <= 0 {
		t.Errorf("go_grpc is not ranked with messages per second:\n%s", bench)
	}
	for name, reason := range broken {
		if _, ok := rows[name]; ok {
			t.Errorf("%s is ranked:\n%s", name, bench)
		}
		if !strings.Contains(bench, "! "+name+": not ranked, round 1, conformance failed: ") || !strings.Contains(bench, reason) {
			t.Errorf("bench.txt does not say %s failed the gate with %q:\n%s", name, reason, bench)
		}
	}
	if kind := scenario.Kind(run.Cells[0].Kind); kind != scenario.BidiStreaming {
		t.Errorf("the cell's call kind is %q in results.json, want %q", kind, scenario.BidiStreaming)
	}
	for _, s := range servers(t, run) {
		if s.Name != "go_grpc" {
			continue
		}
		r := s.Rounds[0]
		if r.Load == nil || r.Load.OK == 0 || r.Load.OK != r.Load.Requests || r.Load.Latency.Count != r.Load.OK {
			t.Errorf("go_grpc's round: %+v, want every message OK and timed", r.Load)
		}
	}
	assertNoContainersLeft(t, api)
}
