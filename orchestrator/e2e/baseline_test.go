//go:build e2e

package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBaselineGate runs the gate of bench --baseline on a real change:
// testdata/slow_server, whose capacity is its service time's (4 calls at
// once), committed at 10 ms a call and changed in the tree to 20 ms, is
// half as fast as its baseline whatever the machine's noise, and must be
// flagged with exit 4; the reverse change, the tree faster than its
// baseline, is no regression (the test is one-sided) and exits 0. Both
// rows of each run are real images built from the two versions.
func TestBaselineGate(t *testing.T) {
	engine(t)
	root := copyRepo(t, nil)
	dir := filepath.Join(root, "servers", "slow_server")
	copyTree(t, filepath.Join(root, "servers", "go_grpc"), dir)
	mainGo := filepath.Join(dir, "main.go")
	copyTree(t, filepath.Join(repoRoot(t), "orchestrator", "e2e", "testdata", "slow_server", "main.go"), mainGo)
	fast, err := os.ReadFile(mainGo)
	if err != nil {
		t.Fatal(err)
	}
	const serviceTime = "serviceTime = 10 * time.Millisecond"
	if !strings.Contains(string(fast), serviceTime) {
		t.Fatalf("%s has no %q to change", mainGo, serviceTime)
	}
	slow := []byte(strings.Replace(string(fast), serviceTime, "serviceTime = 20 * time.Millisecond", 1))
	git := func(args ...string) {
		t.Helper()
		args = append([]string{"-C", root, "-c", "user.name=grpcbench", "-c", "user.email=grpcbench@localhost"}, args...)
		if res := runProgram(t, root, "git", args...); res.code != 0 {
			t.Fatalf("git %s: exit %d\n%s%s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
		}
	}
	commit := func(mainGoText []byte, message string) {
		t.Helper()
		if err := os.WriteFile(mainGo, mainGoText, 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "-A")
		git("commit", "-q", "-m", message)
	}
	git("init", "-q")
	gate := func(tree []byte) (int, string) {
		t.Helper()
		if err := os.WriteFile(mainGo, tree, 0o644); err != nil {
			t.Fatal(err)
		}
		env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "slow_server", "GRPC_LOAD_TOOL": "h2",
			"GRPC_BENCHMARK_ROUNDS": "3", "GRPC_BENCHMARK_DURATION": "3s", "GRPC_BENCHMARK_WARMUP": "1s"})
		res := runBinary(t, root, env, "bench", "--baseline", "HEAD", "--fail-on", "regression")
		text, run := readRun(t, runFolder(t, env))
		var names []string
		for _, s := range servers(t, run) {
			names = append(names, s.Name)
		}
		if strings.Join(names, " ") != "slow_server slow_server@HEAD" && strings.Join(names, " ") != "slow_server@HEAD slow_server" {
			t.Errorf("rows %q, want slow_server and slow_server@HEAD", names)
		}
		if !strings.Contains(text, "== gate: this tree against HEAD") {
			t.Errorf("bench.txt has no gate section:\n%s", text)
		}
		t.Logf("exit %d\n%s", res.code, text)
		return res.code, text
	}

	commit(fast, "slow_server at 10 ms a call")
	if code, text := gate(slow); code != 4 || !strings.Contains(text, "! 1 regressions") {
		t.Errorf("20 ms a call against 10 ms at HEAD: exit %d, want 4 and one regression\n%s", code, text)
	}
	commit(slow, "slow_server at 20 ms a call")
	if code, text := gate(fast); code != 0 || !strings.Contains(text, "! 0 regressions") {
		t.Errorf("10 ms a call against 20 ms at HEAD: exit %d, want 0 and no regression\n%s", code, text)
	}
}
