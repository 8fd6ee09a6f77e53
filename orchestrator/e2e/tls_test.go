//go:build e2e

package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
)

// TestTLSMatrix runs go_grpc and a copy that serves plaintext whatever it
// is asked, plaintext and over TLS, with ghz as the load tool and h2 as
// the capacity tool: go_grpc is measured over TLS by both, every client
// verifying its chain; the plaintext server passes the plaintext cell and
// fails the TLS cell's gate saying why; bench.txt ends with go_grpc's TLS
// cost.
func TestTLSMatrix(t *testing.T) {
	api := engine(t)
	root := copyRepo(t, nil)
	addBrokenServers(t, root)
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "go_grpc plaintext_only", "GRPC_TLS": "off,on",
		"GRPC_BENCHMARK_DURATION": "2s", "GRPC_BENCHMARK_WARMUP": "1s", "GRPC_CAPACITY_TOOL": "h2"})
	res := runBinary(t, root, env, "bench")
	if res.code != 3 {
		t.Errorf("exit code %d, want 3 (a server failed)\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	folder := runFolder(t, env)
	bench, run := readRun(t, folder)
	if len(run.Cells) != 2 || run.Cells[0].TLS || !run.Cells[1].TLS {
		t.Fatalf("cells %+v, want plaintext then TLS", run.Cells)
	}
	for i, c := range run.Cells {
		for _, s := range c.Servers {
			if want := s.Name == "go_grpc" || !c.TLS; s.Ranked() != want {
				t.Errorf("cell %d (TLS %v): %s ranked %v, want %v", i+1, c.TLS, s.Name, s.Ranked(), want)
			}
			if s.Name == "go_grpc" && c.TLS {
				v := s.Conformance
				if v == nil || !v.Passed || v.Checks[0].Name != probe.TLSCheck {
					t.Errorf("go_grpc's TLS verdict %+v: want passed, the handshake checked first", v)
				}
				r := s.Rounds[0]
				if r.Load == nil || r.Load.OK == 0 || r.Capacity == nil || r.Capacity.Load == nil || r.Capacity.Load.OK == 0 {
					t.Errorf("go_grpc over TLS: load %+v, capacity %+v; want calls answered by both tools", r.Load, r.Capacity)
				}
			}
		}
	}
	if !strings.Contains(bench, "! plaintext_only: not ranked, round 1, conformance failed: "+probe.TLSCheck+": the server does not answer TLS") {
		t.Errorf("bench.txt does not say why plaintext_only failed over TLS:\n%s", bench)
	}
	if !strings.Contains(bench, "- GRPC_TLS=on\n") || !strings.Contains(bench, "== cell 2 of 2: complex_proto, server 1 CPU") {
		t.Errorf("bench.txt lacks the TLS cell's heading or footer:\n%s", bench)
	}
	i := strings.Index(bench, "== TLS cost: ")
	if i < 0 || !strings.Contains(bench[i:], "| go_grpc ") || !strings.Contains(bench[i:], "by the capacity tool") ||
		!strings.Contains(bench[i:], "not compared (not ranked in both cells): plaintext_only") {
		t.Errorf("bench.txt has no TLS cost of go_grpc by both tools:\n%s", bench)
	}
	spec, err := os.ReadFile(filepath.Join(folder, "go_grpc", "complex_proto_cpu1_tls", "round-1", "server.log"))
	if err != nil || !strings.Contains(string(spec), "grpcbench-server: workers=1") {
		t.Errorf("the TLS cell's server log: %q, %v", spec, err)
	}
	assertNoContainersLeft(t, api)
}
