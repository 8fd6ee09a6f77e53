//go:build e2e

package e2e_test

// End-to-end tests: the real grpcbench binary against the real Docker engine,
// real images and real gRPC traffic. `make test` starts an engine first.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/calibrate"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/histogram"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"

	// The load tools, as the binary imports them.
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/ghz"
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/h2"
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/h2load"
)

// testImageName keeps the tests' images apart from a user's, and
// GRPCBENCH_TEST_IMAGE keeps two checkouts' tests apart on one engine (the
// lock is per image name).
var testImageName = cmp.Or(os.Getenv("GRPCBENCH_TEST_IMAGE"), "grpcbench-test")

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "grpcbench-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "grpcbench")
	build := exec.Command("go", "build", "-o", binary, "../cmd/grpcbench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static: the client image is this binary
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build grpcbench: %v\n%s", err, out)
		os.Exit(1)
	}
	// Build the base, client and go_grpc images first, so that each test
	// times its run, not a first build on a fresh machine.
	images := exec.Command(binary, "images")
	images.Dir, images.Env = "../..", testEnv(filepath.Join(dir, "results"), nil)
	if out, err := images.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "grpcbench images: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// repoRoot is the repository this test file lives in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// benchEnv is a complete, valid set of settings for a short run, so that a
// developer's .env or environment cannot change what a test runs.
func benchEnv(t *testing.T, overrides map[string]string) []string {
	t.Helper()
	return testEnv(t.TempDir(), overrides)
}

func testEnv(resultsDir string, overrides map[string]string) []string {
	vars := map[string]string{}
	defaults, err := config.Parse(nil, config.Offered(load.Runners()))
	if err != nil {
		panic(err) // the defaults always parse
	}
	for _, s := range defaults.All() {
		vars[s.Name] = s.Default
	}
	// One round without the capacity tool unless a test asks for more:
	// each test measures what it is about, no longer.
	vars["GRPC_BENCHMARK_DURATION"] = "5s"
	vars["GRPC_BENCHMARK_WARMUP"] = "2s"
	vars["GRPC_BENCHMARK_ROUNDS"] = "1"
	vars["GRPC_CAPACITY_TOOL"] = "off"
	vars["GRPC_BENCHMARKS"] = "go_grpc"
	vars["GRPC_IMAGE_NAME"] = testImageName
	vars["GRPC_RESULTS_DIR"] = resultsDir
	for k, v := range overrides {
		vars[k] = v
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GRPC_") {
			env = append(env, kv)
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// resultsDir returns the results folder env gives the binary.
func resultsDir(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GRPC_RESULTS_DIR="); ok {
			return v
		}
	}
	return ""
}

// engine connects to the Docker engine the binary uses.
func engine(t *testing.T) *client.Client {
	t.Helper()
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Ping(context.Background()); err != nil {
		t.Fatalf("no Docker engine answers (run the tests with `make test`, which starts one): %v", err)
	}
	t.Cleanup(func() { api.Close() })
	return api
}

// containerIDs lists the containers on the engine, running or not, that
// carry every one of labels (key=value).
func containerIDs(t *testing.T, api *client.Client, labels ...string) []string {
	t.Helper()
	opts := container.ListOptions{All: true, Filters: filters.NewArgs()}
	for _, l := range labels {
		opts.Filters.Add("label", l)
	}
	list, err := api.ContainerList(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(list))
	for i, c := range list {
		ids[i] = c.ID
	}
	return ids
}

// ownContainers lists the containers of this test's image name, its
// lock's included: other runs may share the engine, so a test counts only
// what its own runs could have started.
func ownContainers(t *testing.T, api *client.Client) []string {
	t.Helper()
	return append(containerIDs(t, api, "io.grpcbench.images="+testImageName), containerIDs(t, api, "io.grpcbench.lock="+testImageName)...)
}

func assertNoContainersLeft(t *testing.T, api *client.Client) {
	t.Helper()
	if left := containerIDs(t, api, "io.grpcbench.images="+testImageName); len(left) > 0 {
		t.Errorf("containers left behind by the run: %v", left)
	}
}

type runResult struct {
	code           int
	stdout, stderr string
	// maxRSS is the most memory the program held at once, in bytes.
	maxRSS int64
}

func runBinary(t *testing.T, root string, env []string, args ...string) runResult {
	t.Helper()
	return run(t, root, env, binary, args...)
}

// runProgram runs a program from PATH with the test's environment.
func runProgram(t *testing.T, root, name string, args ...string) runResult {
	t.Helper()
	return run(t, root, os.Environ(), name, args...)
}

func run(t *testing.T, root string, env []string, name string, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = root, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := runResult{stdout: stdout.String(), stderr: stderr.String()}
	if usage, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.maxRSS = usage.Maxrss << 10 // Linux counts it in KiB
	}
	if exitErr := (*exec.ExitError)(nil); errors.As(err, &exitErr) {
		res.code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return res
}

// runFolder returns the only run folder under the results directory.
func runFolder(t *testing.T, env []string) string {
	t.Helper()
	dir := resultsDir(env)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run folder in %s, have %v (%v)", dir, entries, err)
	}
	return filepath.Join(dir, entries[0].Name())
}

func TestBadInputIsRefusedBeforeAnyContainer(t *testing.T) {
	api := engine(t)
	cases := []struct {
		name, variable, value string
	}{
		{"unparsable duration", "GRPC_BENCHMARK_DURATION", "ten seconds"},
		{"zero duration", "GRPC_BENCHMARK_DURATION", "0s"},
		{"negative warm-up", "GRPC_BENCHMARK_WARMUP", "-5s"},
		{"unparsable server CPUs", "GRPC_SERVER_CPUS", "one"},
		{"zero server CPUs", "GRPC_SERVER_CPUS", "0"},
		{"more server CPUs than the engine has", "GRPC_SERVER_CPUS", "4096"},
		{"more client CPUs than the engine has", "GRPC_CLIENT_CPUS", "4096"},
		{"negative client CPUs", "GRPC_CLIENT_CPUS", "-1"},
		{"unparsable RAM", "GRPC_SERVER_RAM", "lots"},
		{"RAM below the floor", "GRPC_SERVER_RAM", "16m"},
		{"zero connections", "GRPC_CLIENT_CONNECTIONS", "0"},
		{"more connections than concurrency", "GRPC_CLIENT_CONNECTIONS", "2000"},
		{"unparsable concurrency", "GRPC_CLIENT_CONCURRENCY", "many"},
		{"negative rate", "GRPC_CLIENT_QPS", "-1"},
		{"unknown scenario", "GRPC_REQUEST_SCENARIO", "no_such_scenario"},
		{"unknown server", "GRPC_BENCHMARKS", "go_grpc no_such_server"},
		{"invalid image name", "GRPC_IMAGE_NAME", "Not An Image"},
		{"zero readiness timeout", "GRPC_SERVER_READY_TIMEOUT", "0s"},
		{"a list with one bad CPU limit", "GRPC_SERVER_CPUS", "1,4096"},
		{"a list with an unknown scenario", "GRPC_REQUEST_SCENARIO", "complex_proto,no_such_scenario"},
		{"a list with an unknown profile", "GRPC_LOAD_PROFILE", "1a,9z"},
		{"zero rounds", "GRPC_BENCHMARK_ROUNDS", "0"},
		{"unknown capacity tool", "GRPC_CAPACITY_TOOL", "wrk"},
		{"a load tool setting's old name", "GRPC_LOAD_ENGINE", "h2"},
		{"a second engine without the server's address", "GRPC_CLIENT_DOCKER_HOST", "unix:///nonexistent/docker.sock"},
		{"an engine address that does not parse", "GRPC_SERVER_DOCKER_HOST", "docker-box:2375"},
		{"a rate no engine can schedule", "GRPC_CLIENT_QPS", "2000000000"},
		{"a duration below the stats period", "GRPC_BENCHMARK_DURATION", "1ns"},
		{"a duration beyond the bound", "GRPC_BENCHMARK_DURATION", "1000h"},
		{"RAM that overflows", "GRPC_SERVER_RAM", "99999999999g"},
		{"RAM beyond the engine host's", "GRPC_SERVER_RAM", "4096g"},
		{"a server listed twice", "GRPC_BENCHMARKS", "go_grpc go_grpc"},
		{"an image name too long", "GRPC_IMAGE_NAME", strings.Repeat("a", 300)},
		{"a results folder that is a file", "GRPC_RESULTS_DIR", "/etc/hostname"},
		{"a misspelled setting", "GRPC_BENCHMARK_DURATON", "3s"},
	}
	before := ownContainers(t, api)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := benchEnv(t, map[string]string{tc.variable: tc.value})
			res := runBinary(t, repoRoot(t), env, "bench")
			if res.code != 2 {
				t.Errorf("exit code %d, want 2; stderr:\n%s", res.code, res.stderr)
			}
			if !strings.Contains(res.stderr, tc.variable) || !strings.Contains(res.stderr, tc.value) || !strings.Contains(res.stderr, "allowed") {
				t.Errorf("message does not name %s, the value %q and what is allowed:\n%s", tc.variable, tc.value, res.stderr)
			}
			if strings.Contains(res.stdout, "building") {
				t.Errorf("something was built:\n%s", res.stdout)
			}
			if entries, _ := os.ReadDir(resultsDir(env)); len(entries) > 0 {
				t.Errorf("a run folder was created: %v", entries)
			}
		})
	}
	flags := []struct {
		name string
		args []string
		want []string // the flag, the value, what is allowed
	}{
		{"zero accuracy rounds", []string{"accuracy", "--rounds", "0"}, []string{"--rounds", `"0"`, "from 1 to 20"}},
		{"unknown accuracy profile", []string{"accuracy", "--profiles", "2b,4c"}, []string{"--profiles", `"4c"`, `"1a","1b","2a","2b","3a","3b"`}},
		{"unknown command", []string{"benchmark"}, []string{"unexpected argument benchmark"}},
		{"a server outside servers/", []string{"tools", "--server", "../../x"}, []string{"--server", `"../../x"`, "a folder of servers/"}},
	}
	for _, tc := range flags {
		t.Run(tc.name, func(t *testing.T) {
			env := benchEnv(t, nil)
			res := runBinary(t, repoRoot(t), env, tc.args...)
			if res.code != 2 {
				t.Errorf("exit code %d, want 2; stderr:\n%s", res.code, res.stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("message lacks %s:\n%s", want, res.stderr)
				}
			}
			if entries, _ := os.ReadDir(resultsDir(env)); len(entries) > 0 {
				t.Errorf("a run folder was created: %v", entries)
			}
		})
	}
	if after := ownContainers(t, api); len(after) != len(before) {
		t.Errorf("containers before: %d, after: %d", len(before), len(after))
	}
}

// TestBadFilesAreRefusedBeforeAnyContainer refuses what the repository's
// files get wrong, all in one message: a .env line that does not parse
// (with its line), a scenario whose request does not carry a message as
// field 1, and a server folder whose name cannot be an image tag.
func TestBadFilesAreRefusedBeforeAnyContainer(t *testing.T) {
	api := engine(t)
	root := copyRepo(t, nil)
	write := func(name, content string) {
		t.Helper()
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".env", "GRPC_BENCHMARK_WARMUP=2s\nthis is not a setting\n")
	proto, err := os.ReadFile(filepath.Join(root, "scenarios", "string_10B", "helloworld.proto"))
	if err != nil {
		t.Fatal(err)
	}
	write("scenarios/flat/helloworld.proto", strings.Replace(string(proto), "Hello request = 1;", "string request = 1;", 1))
	write("scenarios/flat/payload.json", `{"request": "x"}`)
	write("servers/Go GRPC/Dockerfile", "FROM debian:bookworm-slim\n")
	write("servers/Go GRPC/server.json", testfiles.Manifest)

	before := ownContainers(t, api)
	env := benchEnv(t, map[string]string{"GRPC_REQUEST_SCENARIO": "flat", "GRPC_BENCHMARKS": ""})
	res := runBinary(t, root, env, "bench")
	if res.code != 2 {
		t.Errorf("exit code %d, want 2; stderr:\n%s", res.code, res.stderr)
	}
	for _, want := range []string{
		`.env:2="this is not a setting"`,
		`GRPC_REQUEST_SCENARIO="flat": scenario flat: field 1 of helloworld.HelloRequest is not a message`,
		`the server folder "Go GRPC" cannot name an image tag`,
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("the message lacks %q:\n%s", want, res.stderr)
		}
	}
	if strings.Count(res.stderr, "allowed:") != 3 {
		t.Errorf("want exactly the three problems, each with what is allowed:\n%s", res.stderr)
	}
	if entries, _ := os.ReadDir(resultsDir(env)); len(entries) > 0 {
		t.Errorf("a run folder was created: %v", entries)
	}
	if after := ownContainers(t, api); len(after) != len(before) {
		t.Errorf("containers before: %d, after: %d", len(before), len(after))
	}
}

func TestUnreachableEngineIsExplained(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"the only engine", map[string]string{"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
			[]string{"cannot reach the Docker engine at unix:///nonexistent/docker.sock", "make engine"}},
		{"the clients' engine", map[string]string{"GRPC_CLIENT_DOCKER_HOST": "unix:///nonexistent/docker.sock", "GRPC_SERVER_ADDRESS": "10.231.0.2:50051"},
			[]string{"cannot reach the Docker engine of the clients at unix:///nonexistent/docker.sock"}},
		{"the servers' engine", map[string]string{"GRPC_SERVER_DOCKER_HOST": "unix:///nonexistent/docker.sock", "GRPC_SERVER_ADDRESS": "10.231.0.2:50051"},
			[]string{"cannot reach the Docker engine of the servers at unix:///nonexistent/docker.sock"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := benchEnv(t, tc.env)
			res := runBinary(t, repoRoot(t), env, "bench")
			if res.code != 1 {
				t.Errorf("exit code %d, want 1\n%s", res.code, res.stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("message lacks %q:\n%s", want, res.stderr)
				}
			}
		})
	}
}

// row is one line of the bench.txt table.
type row struct {
	name                  string
	rps                   float64
	bound                 bool    // client-bound: its req/s (≥) is a lower bound
	avg, p90, p95, p99    float64 // ms
	cpuPercent, memoryMiB float64
}

var rowPattern = regexp.MustCompile(`^\| (\S+)\s+\|\s+(≥?)(\d+) \|\s+([\d.]+) ms \|\s+([\d.]+) ms \|\s+([\d.]+) ms \|\s+([\d.]+) ms \|\s+([\d.]+)% \|\s+([\d.]+) MiB \|$`)

func parseRows(t *testing.T, bench string) map[string]row {
	t.Helper()
	rows := map[string]row{}
	for _, line := range strings.Split(bench, "\n") {
		m := rowPattern.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var f [7]float64
		for i := range f {
			v, err := strconv.ParseFloat(m[i+3], 64)
			if err != nil {
				t.Fatal(err)
			}
			f[i] = v
		}
		rows[m[1]] = row{m[1], f[0], m[2] != "", f[1], f[2], f[3], f[4], f[5], f[6]}
	}
	return rows
}

func readRun(t *testing.T, dir string) (string, record.Run) {
	t.Helper()
	bench, err := os.ReadFile(filepath.Join(dir, "bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := record.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return string(bench), run
}

// servers are the servers of a run of one cell.
func servers(t *testing.T, run record.Run) []record.Server {
	t.Helper()
	if len(run.Cells) != 1 {
		t.Fatalf("%d cells, want 1", len(run.Cells))
	}
	return run.Cells[0].Servers
}

func TestBenchGoGRPC(t *testing.T) {
	api := engine(t)
	leftover := startLeftover(t, api)
	env := benchEnv(t, nil)
	res := runBinary(t, repoRoot(t), env, "bench")
	if res.code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if _, err := api.ContainerInspect(context.Background(), leftover); !cerrdefs.IsNotFound(err) {
		t.Errorf("the container left by a killed run is still there (%v)", err)
	}
	if !strings.Contains(res.stdout, "removed 1 containers left behind by an earlier run") {
		t.Errorf("the removal of the leftover was not reported:\n%s", res.stdout)
	}
	dir := runFolder(t, env)
	bench, run := readRun(t, dir)
	if !strings.Contains(res.stdout, bench) {
		t.Errorf("the ranking printed at the end differs from bench.txt")
	}
	r, ok := parseRows(t, bench)["go_grpc"]
	if !ok {
		t.Fatalf("no go_grpc row in bench.txt:\n%s", bench)
	}
	if r.rps <= 0 || r.avg <= 0 || r.p90 <= 0 || r.p99 < r.p90 || r.cpuPercent <= 0 || r.memoryMiB <= 0 {
		t.Errorf("implausible row: %+v", r)
	}
	srv := servers(t, run)
	if len(srv) != 1 || len(srv[0].Rounds) != 1 || srv[0].Rounds[0].Load == nil {
		t.Fatalf("results.json has no load for go_grpc: %+v", srv)
	}
	s := srv[0].Rounds[0]
	if got := math.Round(s.Load.RPS); got != r.rps {
		t.Errorf("results.json rps %v, bench.txt %v", got, r.rps)
	}
	if r.bound != s.ClientBound {
		t.Errorf("bench.txt marks the row as a bound (≥) %v, results.json says client-bound %v", r.bound, s.ClientBound)
	}
	if got := math.Round(s.Server.CPUAvgPercent*100) / 100; got != r.cpuPercent {
		t.Errorf("results.json cpu %v, bench.txt %v", got, r.cpuPercent)
	}
	// bench.txt shows the percentiles of the round's histogram, which
	// keeps three significant digits: ghz's own p99 is within 0.1% of it.
	pool := histogram.New()
	if err := pool.Add(s.Load.Histogram, 0); err != nil {
		t.Fatalf("results.json's histogram: %v", err)
	}
	if got := float64(pool.At(0.99)) / 1e6; math.Abs(got-r.p99) > 0.006 {
		t.Errorf("results.json's histogram p99 %v ms, bench.txt %v ms", got, r.p99)
	}
	if exact, pooled := float64(s.Load.Latency.P99), float64(pool.At(0.99)); math.Abs(pooled-exact) > 0.001*exact {
		t.Errorf("ghz's p99 %v ms, its histogram's %v ms: more than 0.1%% apart", exact/1e6, pooled/1e6)
	}
	if s.Load.OK != s.Load.Statuses["OK"] || s.Load.OK == 0 {
		t.Errorf("OK count %d disagrees with statuses %v", s.Load.OK, s.Load.Statuses)
	}
	if s.Server.Samples < 2 || s.Client.Samples < 2 || s.Client.CPUAvgPercent <= 0 {
		t.Errorf("too few stats samples in a 5s window or no client CPU: server %+v client %+v", s.Server, s.Client)
	}
	if flagged := strings.Contains(bench, "! go_grpc: client-bound"); flagged != s.ClientBound {
		t.Errorf("results.json client_bound=%v but bench.txt flag=%v (client CPU %.1f%%)", s.ClientBound, flagged, s.Client.CPUAvgPercent)
	}
	if v := srv[0].Conformance; v == nil || !v.Passed || len(v.Checks) != 4 || v.Checks[3].Name != probe.WorkersCheckName {
		t.Errorf("conformance verdict %+v: want three call checks and the workers check, all passed", v)
	}
	if srv[0].ImageID == "" || len(s.Phases) != 4 {
		t.Errorf("image id %q, phases %+v", srv[0].ImageID, s.Phases)
	}
	if s.Overhead <= 0 || s.Overhead > 5 {
		t.Errorf("round overhead %.2f s", s.Overhead)
	}
	if !strings.Contains(res.stdout, "the report with its charts: "+filepath.Join(dir, "report.html")) {
		t.Errorf("the run does not say where report.html is:\n%s", res.stdout)
	}
	for _, f := range []string{"hardware.txt", "summary.txt", "report.html", "results.csv", "results.md", "grpcbench-build.log",
		"go_grpc/build-complex_proto.log", "go_grpc/round-1/server.log",
		"go_grpc/round-1/load.json", "go_grpc/round-1/load-server-samples.jsonl", "go_grpc/round-1/load-client-samples.jsonl"} {
		if info, err := os.Stat(filepath.Join(dir, f)); err != nil || info.Size() == 0 {
			t.Errorf("%s missing or empty (%v)", f, err)
		}
	}
	if !strings.Contains(bench, "- GRPC_BENCHMARK_DURATION=5s\n") || !strings.Contains(bench, "Benchmark Execution Parameters:\n") {
		t.Errorf("footer lacks the parameters:\n%s", bench)
	}
	assertNoContainersLeft(t, api)
}

// TestBenchNonGoServer runs a server of another stack through the whole
// sequence, gate and both engines included: the catalog's fast subset.
func TestBenchNonGoServer(t *testing.T) {
	api := engine(t)
	for _, tool := range load.Names(load.Runners()) {
		t.Run(tool, func(t *testing.T) {
			env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "python_grpc", "GRPC_LOAD_TOOL": tool})
			res := runBinary(t, repoRoot(t), env, "bench")
			if res.code != 0 {
				t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
			}
			bench, run := readRun(t, runFolder(t, env))
			if r, ok := parseRows(t, bench)["python_grpc"]; !ok || r.rps <= 0 || r.cpuPercent <= 0 {
				t.Errorf("no plausible python_grpc row:\n%s", bench)
			}
			srv := servers(t, run)[0]
			s := srv.Rounds[0]
			if !srv.Conformance.Passed || s.Load.OK != s.Load.Requests || s.Load.Tool != tool {
				t.Errorf("verdict %+v, %d of %d calls OK, tool %s", srv.Conformance, s.Load.OK, s.Load.Requests, s.Load.Tool)
			}
			assertNoContainersLeft(t, api)
		})
	}
}

// startLeftover starts a container labelled as a run's, as a killed run
// would leave it.
func startLeftover(t *testing.T, api *client.Client) string {
	t.Helper()
	ctx := context.Background()
	created, err := api.ContainerCreate(ctx, &container.Config{
		Image:  "debian:bookworm-slim",
		Cmd:    []string{"sleep", "600"},
		Labels: map[string]string{"io.grpcbench.run": "killed-earlier", "io.grpcbench.images": testImageName, "io.grpcbench.role": "server"},
	}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true}) })
	if err := api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	return created.ID
}

// TestFailingServerIsListedAndTheRunGoesOn runs a server that exits at
// start before a good one: the first is listed with the reason, the second
// is ranked, and the exit status says that not every server was ranked.
func TestFailingServerIsListedAndTheRunGoesOn(t *testing.T) {
	api := engine(t)
	root := copyRepo(t, map[string]string{"orchestrator/e2e/testdata/servers/exits_at_start": "servers/exits_at_start"})
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "exits_at_start go_grpc"})
	res := runBinary(t, root, env, "bench")
	if res.code != 3 {
		t.Errorf("exit code %d, want 3\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	bench, run := readRun(t, runFolder(t, env))
	failed := servers(t, run)[0]
	for _, p := range failed.Rounds[0].Phases {
		if p.Name == "readiness" && p.Seconds > 30 {
			t.Errorf("readiness took %.0fs: the dead server was waited on until the readiness timeout", p.Seconds)
		}
	}
	rows := parseRows(t, bench)
	if _, ok := rows["exits_at_start"]; ok {
		t.Errorf("the failed server is ranked:\n%s", bench)
	}
	if _, ok := rows["go_grpc"]; !ok {
		t.Errorf("the server after the failed one was not ranked:\n%s", bench)
	}
	if !strings.Contains(bench, "! exits_at_start: not ranked, round 1, readiness failed: server exited with code 3") {
		t.Errorf("bench.txt does not say why exits_at_start failed:\n%s", bench)
	}
	if f := failed.Rounds[0].Failure; f == nil || f.Phase != "readiness" {
		t.Errorf("results.json failure = %+v, want the readiness phase", f)
	}
	serverLog, _ := os.ReadFile(filepath.Join(runFolder(t, env), "exits_at_start", "round-1", "server.log"))
	if !strings.Contains(string(serverLog), "cannot start: no such config") {
		t.Errorf("server.log lacks what the server said: %q", serverLog)
	}
	assertNoContainersLeft(t, api)
}

// TestBuildOverItsMemoryFailsAndTheRunGoesOn builds a server whose build
// step outgrows GRPC_BUILD_RAM before a good one: its build fails, killed
// at the limit, the reason is listed, and the next server is ranked.
func TestBuildOverItsMemoryFailsAndTheRunGoesOn(t *testing.T) {
	api := engine(t)
	root := copyRepo(t, map[string]string{"orchestrator/e2e/testdata/servers/eats_build_memory": "servers/eats_build_memory"})
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "eats_build_memory go_grpc", "GRPC_BUILD_RAM": "512m"})
	res := runBinary(t, root, env, "bench")
	if res.code != 3 {
		t.Errorf("exit code %d, want 3\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	bench, run := readRun(t, runFolder(t, env))
	rows := parseRows(t, bench)
	if _, ok := rows["go_grpc"]; !ok {
		t.Errorf("the server after the failed build was not ranked:\n%s", bench)
	}
	// The kernel kills tail (signal 9) in the step's cgroup: exit code 137.
	if !strings.Contains(bench, "! eats_build_memory: not ranked, build failed: ") || !strings.Contains(bench, "returned a non-zero code: 137") {
		t.Errorf("bench.txt does not say the build was killed at its memory limit:\n%s", bench)
	}
	if f := servers(t, run)[0].Failure; f == nil || f.Phase != "build" {
		t.Errorf("results.json failure = %+v, want the build phase", f)
	}
	assertNoContainersLeft(t, api)
}

// TestSilentBuildIsCutOff builds a server whose build step hangs without
// output: after GRPC_BUILD_STALL its build fails with the stall as the
// reason, its step's container is gone, and the next server is ranked.
func TestSilentBuildIsCutOff(t *testing.T) {
	api := engine(t)
	root := copyRepo(t, map[string]string{"orchestrator/e2e/testdata/servers/silent_build": "servers/silent_build"})
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "silent_build go_grpc", "GRPC_BUILD_STALL": "1m"})
	res := runBinary(t, root, env, "bench")
	if res.code != 3 {
		t.Errorf("exit code %d, want 3\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	bench, _ := readRun(t, runFolder(t, env))
	if _, ok := parseRows(t, bench)["go_grpc"]; !ok {
		t.Errorf("the server after the stalled build was not ranked:\n%s", bench)
	}
	want := "! silent_build: not ranked, build failed: the build of " + testImageName + ":silent_build-complex_proto stalled: no output for 1m0s (GRPC_BUILD_STALL)"
	if !strings.Contains(bench, want) {
		t.Errorf("bench.txt does not say the build stalled (%s):\n%s", want, bench)
	}
	list, err := api.ContainerList(context.Background(), container.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if strings.Contains(c.Command, "grpcbench-e2e-silent-build") {
			t.Errorf("the stalled step's container is still there: %s %s (%s)", c.ID, c.Command, c.State)
		}
	}
	assertNoContainersLeft(t, api)
}

// TestErrorFloodKeepsTheRecordSmall runs a server that, past the gate,
// answers every call with a 4 KiB error message of its own: the record
// keeps the most frequent few, the rest counted, so results.json and the
// load client's report stay small.
func TestErrorFloodKeepsTheRecordSmall(t *testing.T) {
	api := engine(t)
	root := copyRepo(t, nil)
	addBrokenServers(t, root)
	// ghz keeps each distinct error message (its error distribution, and
	// a million calls' details): at this server's speed on a quiet machine
	// 7 s of 4 KiB messages outgrew the client's 1 GiB. The round is then
	// failed, and said so; this test is about the record, so it loads for
	// 2 s.
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "error_flood", "GRPC_BENCHMARK_WARMUP": "1s", "GRPC_BENCHMARK_DURATION": "1s"})
	res := runBinary(t, root, env, "bench")
	if res.code != 3 { // not one call OK after the warm-up: not ranked
		t.Errorf("exit code %d, want 3\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	dir := runFolder(t, env)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil && strings.HasSuffix(path, ".json") {
			t.Logf("%s: %d bytes", strings.TrimPrefix(path, dir+"/"), info.Size())
			if info.Size() >= 5<<20 {
				t.Errorf("%s holds %d bytes, want less than 5 MB", path, info.Size())
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	bench, run := readRun(t, dir)
	rounds := servers(t, run)[0].Rounds
	if len(rounds) != 1 || rounds[0].Load == nil {
		t.Fatalf("rounds %+v: want one measured\n%s", rounds, bench)
	}
	got := rounds[0].Load
	t.Logf("%d calls, %d OK, %d error messages kept, %d counted under %q", got.Requests, got.OK, len(got.Errors), got.Errors[load.Others], load.Others)
	if got.Requests-got.OK < 10*load.MaxDistinct || len(got.Errors) > load.MaxDistinct+1 || got.Errors[load.Others] == 0 {
		t.Errorf("%d failed calls, %d error messages kept: want many and at most %d, the rest under %q", got.Requests-got.OK, len(got.Errors), load.MaxDistinct+1, load.Others)
	}
	assertNoContainersLeft(t, api)
}

// TestLongBuildLineIsCapped builds a server whose build step prints 3 GB
// on one line and fails: the orchestrator's memory stays bounded (the line
// is cut, not held), the log is capped with a note, the failure says so,
// and the next server is ranked.
func TestLongBuildLineIsCapped(t *testing.T) {
	api := engine(t)
	root := copyRepo(t, map[string]string{"orchestrator/e2e/testdata/servers/long_build_line": "servers/long_build_line"})
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "long_build_line go_grpc"})
	res := runBinary(t, root, env, "bench")
	if res.code != 3 {
		t.Errorf("exit code %d, want 3\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	t.Logf("the orchestrator's peak memory: %d MiB", res.maxRSS>>20)
	if res.maxRSS <= 0 || res.maxRSS >= 512<<20 {
		t.Errorf("the orchestrator's peak memory was %d MiB, want less than 512 MiB", res.maxRSS>>20)
	}
	dir := runFolder(t, env)
	bench, _ := readRun(t, dir)
	if _, ok := parseRows(t, bench)["go_grpc"]; !ok {
		t.Errorf("the server after the long build line was not ranked:\n%s", bench)
	}
	if !strings.Contains(bench, "! long_build_line: not ranked, build failed: ") || !strings.Contains(bench, "build output capped: lines over 64 KiB cut (1)") {
		t.Errorf("bench.txt does not say the build failed with its output capped:\n%s", bench)
	}
	info, err := os.Stat(filepath.Join(dir, "long_build_line", "build-complex_proto.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the build log: %d bytes", info.Size())
	if info.Size() > 1<<20 {
		t.Errorf("the build log holds %d bytes: the line was not cut", info.Size())
	}
	assertNoContainersLeft(t, api)
}

// TestConformanceGateCatchesBrokenServers runs servers that answer
// wrongly, one with a changed message and one with an error status, and
// two that answer well but state the wrong workers at start or none: the
// gate must stop them all before the load, with the reason.
func TestConformanceGateCatchesBrokenServers(t *testing.T) {
	api := engine(t)
	broken := map[string]string{
		"changes_payload": "answer is not the echo of the request (name: sent",
		"error_status":    "grpc-status Internal: broken on purpose",
		"wrong_workers":   "workers: the server started workers=7, where GRPC_SERVER_CPUS=1 on",
		"no_start_line":   `workers: the server printed no start-up line "grpcbench-server: workers=N"`,
		// A server's text is shown escaped, on one line of its own.
		"hostile_text": `grpc-status Internal: =HYPERLINK("http://evil")\x1b]0;pwned\a\x1b[2J\n| fake_server |`,
	}
	root := copyRepo(t, nil)
	addBrokenServers(t, root)
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "changes_payload error_status hostile_text wrong_workers no_start_line go_grpc"})
	res := runBinary(t, root, env, "bench")
	if res.code != 3 {
		t.Errorf("exit code %d, want 3\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	bench, run := readRun(t, runFolder(t, env))
	rows := parseRows(t, bench)
	for name, reason := range broken {
		if _, ok := rows[name]; ok {
			t.Errorf("%s is ranked:\n%s", name, bench)
		}
		if !strings.Contains(bench, "! "+name+": not ranked, round 1, conformance failed: ") || !strings.Contains(bench, reason) {
			t.Errorf("bench.txt does not say %s failed the gate with %q:\n%s", name, reason, bench)
		}
	}
	if _, ok := rows["go_grpc"]; !ok {
		t.Errorf("go_grpc is not ranked:\n%s", bench)
	}
	hostileTextStaysInItsPlace(t, runFolder(t, env), res)
	for _, s := range servers(t, run) {
		if s.Conformance == nil {
			t.Errorf("%s has no verdict in results.json", s.Name)
		} else if s.Conformance.Passed != (s.Name == "go_grpc") {
			t.Errorf("%s verdict %+v", s.Name, s.Conformance)
		}
	}
	assertNoContainersLeft(t, api)
}

// TestVariantRunsItsBasesImageWithItsSettings declares a variant of
// go_grpc that turns grpc-go's logging on: it is built once with its base,
// ranked under its own name, and only its server sees its environment.
func TestVariantRunsItsBasesImageWithItsSettings(t *testing.T) {
	api := engine(t)
	root := copyRepo(t, nil)
	variants := `{"go_grpc_logged": {"GRPC_GO_LOG_SEVERITY_LEVEL": "info", "GRPC_GO_LOG_VERBOSITY_LEVEL": "2"}}`
	if err := os.WriteFile(filepath.Join(root, "servers", "go_grpc", "variants.json"), []byte(variants), 0o644); err != nil {
		t.Fatal(err)
	}
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "go_grpc go_grpc_logged"})
	res := runBinary(t, root, env, "bench")
	if res.code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	dir := runFolder(t, env)
	bench, run := readRun(t, dir)
	rows := parseRows(t, bench)
	for _, name := range []string{"go_grpc", "go_grpc_logged"} {
		if _, ok := rows[name]; !ok {
			t.Errorf("%s is not ranked:\n%s", name, bench)
		}
	}
	srvs := servers(t, run)
	if len(srvs) != 2 || srvs[0].ImageID == "" || srvs[0].ImageID != srvs[1].ImageID {
		t.Errorf("the variant does not run its base's image: %+v", srvs)
	}
	if _, err := os.Stat(filepath.Join(dir, "go_grpc_logged", "build-complex_proto.log")); err == nil {
		t.Error("the variant was built on its own")
	}
	logged := map[string]bool{}
	for _, name := range []string{"go_grpc", "go_grpc_logged"} {
		out, err := os.ReadFile(filepath.Join(dir, name, "round-1", "server.log"))
		if err != nil {
			t.Fatal(err)
		}
		logged[name] = strings.Contains(string(out), "[core]")
	}
	if !logged["go_grpc_logged"] || logged["go_grpc"] {
		t.Errorf("grpc-go logged in the variant: %v, in the base: %v; want only the variant", logged["go_grpc_logged"], logged["go_grpc"])
	}
	assertNoContainersLeft(t, api)
}

// composeProject is a copy of the repository with docker-compose.yml and a
// .env that runs go_grpc for duration in rounds, and a compose project of
// this test process, taken down (with its volumes) when the test ends:
// the arguments of a `docker compose` command of the project, and a
// command run to its end.
func composeProject(t *testing.T, name, duration string, rounds int) (root string, args func(...string) []string, compose func(...string) runResult) {
	t.Helper()
	root = copyRepo(t, map[string]string{"docker-compose.yml": "docker-compose.yml"})
	env := "GRPC_BENCHMARKS=go_grpc\nGRPC_BENCHMARK_DURATION=" + duration + "\nGRPC_BENCHMARK_WARMUP=1s\nGRPC_BENCHMARK_ROUNDS=" + strconv.Itoa(rounds) +
		"\nGRPC_CAPACITY_TOOL=off\nGRPC_IMAGE_NAME=" + testImageName + "\n"
	if err := os.WriteFile(filepath.Join(root, ".env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	project := name + "-" + strconv.Itoa(os.Getpid())
	args = func(a ...string) []string { return append([]string{"compose", "--project-name", project}, a...) }
	compose = func(a ...string) runResult { return runProgram(t, root, "docker", args(a...)...) }
	t.Cleanup(func() { compose("down", "--remove-orphans", "--volumes") }) // the project's own cache volume too
	return root, args, compose
}

// TestComposeUp runs the suite as a user of `docker compose up` does, from
// the orchestrator's image, with the settings in .env.
func TestComposeUp(t *testing.T) {
	api := engine(t)
	root, _, compose := composeProject(t, "grpcbench-test", "3s", 1)
	res := compose("up")
	if res.code != 0 {
		t.Fatalf("docker compose up: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	entries, err := os.ReadDir(filepath.Join(root, "results"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run folder in results/, have %v (%v)", entries, err)
	}
	bench, _ := readRun(t, filepath.Join(root, "results", entries[0].Name()))
	if r, ok := parseRows(t, bench)["go_grpc"]; !ok || r.rps <= 0 {
		t.Errorf("no go_grpc row with req/s > 0 in bench.txt:\n%s", bench)
	}
	if !strings.Contains(bench, "- GRPC_BENCHMARK_DURATION=3s\n") {
		t.Errorf(".env was not read:\n%s", bench)
	}
	// The compose log ends by saying where the report is, as the container
	// sees it: the results folder is the host's ./results.
	if !strings.Contains(res.stdout, "the report with its charts: results/"+entries[0].Name()+"/report.html") {
		t.Errorf("the compose log does not say where report.html is:\n%s", res.stdout)
	}
	assertNoContainersLeft(t, api)
}

// TestRateIsTotal checks that GRPC_CLIENT_QPS is the total rate (grpc_bench
// divided it by the concurrency), with both load tools.
func TestRateIsTotal(t *testing.T) {
	for _, tool := range load.Names(load.Runners()) {
		t.Run(tool, func(t *testing.T) {
			env := benchEnv(t, map[string]string{"GRPC_CLIENT_QPS": "2000", "GRPC_BENCHMARK_DURATION": "10s", "GRPC_LOAD_TOOL": tool})
			res := runBinary(t, repoRoot(t), env, "bench")
			if res.code != 0 {
				t.Fatalf("exit code %d\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			_, run := readRun(t, runFolder(t, env))
			l := servers(t, run)[0].Rounds[0].Load
			if l.Tool != tool {
				t.Errorf("tool %q ran, want %q", l.Tool, tool)
			}
			// h2 keeps its schedule whatever happens; ghz's pacer makes up
			// for a delay only once a whole second has passed, so on a busy
			// machine it falls a few percent short. Either way a rate
			// divided by the concurrency, as grpc_bench's, would give 2.
			tolerance := map[string]float64{"h2": 0.02, "ghz": 0.05}[tool]
			if math.Abs(l.RPS-2000)/2000 > tolerance {
				t.Errorf("asked for 2000 req/s, measured %.1f (tolerance %.0f%%)", l.RPS, 100*tolerance)
			}
			if l.Requests != l.OK || l.Latency.Count != l.OK {
				t.Errorf("%d requests, %d OK, %d latencies", l.Requests, l.OK, l.Latency.Count)
			}
		})
	}
}

// TestToolsSideBySide runs `grpcbench tools`: three load tools against one
// server container, and the line tracked from run to run.
func TestToolsSideBySide(t *testing.T) {
	api := engine(t)
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARK_DURATION": "3s", "GRPC_BENCHMARK_WARMUP": "1s"})
	res := runBinary(t, repoRoot(t), env, "tools", "--server", "go_grpc")
	if res.code != 0 {
		t.Fatalf("exit code %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	dir := runFolder(t, env)
	table, err := os.ReadFile(filepath.Join(dir, "tools.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(table)), "\n")
	if last := lines[len(lines)-1]; !regexp.MustCompile(`^per-core ratio: h2/ghz=\d+\.\d\d h2/h2load=\d+\.\d\d$`).MatchString(last) {
		t.Errorf("last line %q", last)
	}
	var got struct{ Rows []calibrate.ToolRun }
	readJSON(t, filepath.Join(dir, "tools.json"), &got)
	compared := []string{"h2", "ghz", "h2load"} // the subject, then the others
	if len(got.Rows) != len(compared) {
		t.Fatalf("%d tools measured, want %d", len(got.Rows), len(compared))
	}
	for i, e := range got.Rows {
		if e.Tool != compared[i] || e.Load.Tool != e.Tool {
			t.Errorf("row %d is %s (load by %s), want %s", i, e.Tool, e.Load.Tool, compared[i])
		}
		if e.Load.RPS <= 0 || e.Load.OK != e.Load.Requests || e.Client.CPUSeconds <= 0 || e.Server.CPUAvgPercent <= 0 {
			t.Errorf("%s: %.0f req/s, %d of %d OK, client %.2f CPU-s, server %.1f%%", e.Tool, e.Load.RPS, e.Load.OK, e.Load.Requests, e.Client.CPUSeconds, e.Server.CPUAvgPercent)
		}
	}
	assertNoContainersLeft(t, api)
}

// TestAccuracyAlternatesTheTools runs `grpcbench accuracy` for two rounds
// of one shape: both tools measured in each round, in alternating order.
func TestAccuracyAlternatesTheTools(t *testing.T) {
	api := engine(t)
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARK_DURATION": "3s", "GRPC_BENCHMARK_WARMUP": "1s"})
	res := runBinary(t, repoRoot(t), env, "accuracy", "--profiles", "2b", "--rounds", "2")
	if res.code != 0 {
		t.Fatalf("exit code %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	dir := runFolder(t, env)
	var got struct{ Rows []calibrate.AccuracyRow }
	readJSON(t, filepath.Join(dir, "accuracy.json"), &got)
	if len(got.Rows) != 1 || got.Rows[0].Server != "go_grpc" || got.Rows[0].Profile != "2b" || len(got.Rows[0].Rounds) != 2 {
		t.Fatalf("rows: %+v", got.Rows)
	}
	for i, r := range got.Rows[0].Rounds {
		if r.Subject.Load.Tool != "h2" || r.Reference.Load.Tool != "h2load" || r.Subject.Load.RPS <= 0 || r.Reference.Load.RPS <= 0 {
			t.Errorf("round %d: %s %.0f req/s, %s %.0f req/s", i+1, r.Subject.Load.Tool, r.Subject.Load.RPS, r.Reference.Load.Tool, r.Reference.Load.RPS)
		}
		if h2First := r.Subject.Load.Start.Before(r.Reference.Load.Start); h2First != (i%2 == 0) {
			t.Errorf("round %d: h2 first = %v", i+1, h2First)
		}
	}
	if row := got.Rows[0]; row.Connections != 10 || row.Concurrency != 100 {
		t.Errorf("shape 2b ran as %d connections, %d calls in flight", row.Connections, row.Concurrency)
	}
	if v := got.Rows[0].Agreement().Verdict; v == calibrate.NotMeasured || v == calibrate.Failing {
		t.Errorf("verdict %q", v)
	}
	if !strings.Contains(res.stdout, "of 1\n") {
		t.Errorf("no summary line:\n%s", res.stdout)
	}
	assertNoContainersLeft(t, api)
}

// TestRoundsInterleaveAndCapacity: round 1 of every server, then round 2,
// each a fresh container; a client-bound round has the capacity tool's
// figures from the same container, and summary.txt ranks by them.
func TestRoundsInterleaveAndCapacity(t *testing.T) {
	api := engine(t)
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "go_grpc python_grpc", "GRPC_BENCHMARK_ROUNDS": "2",
		"GRPC_BENCHMARK_DURATION": "4s", "GRPC_BENCHMARK_WARMUP": "1s", "GRPC_CAPACITY_TOOL": "h2"})
	res := runBinary(t, repoRoot(t), env, "bench")
	if res.code != 0 {
		t.Fatalf("exit code %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	dir := runFolder(t, env)
	_, run := readRun(t, dir)
	srv := servers(t, run)
	if len(srv) != 2 || len(srv[0].Rounds) != 2 || len(srv[1].Rounds) != 2 {
		t.Fatalf("servers %+v", srv)
	}
	// Rounds start in the order results.json records, round 1 of every
	// server before round 2 of any.
	if run.Seed == 0 || len(run.Order) != 2 {
		t.Fatalf("seed %d, order %+v: want a seed and 2 rounds", run.Seed, run.Order)
	}
	start := map[string]*record.Server{}
	for i := range srv {
		start[srv[i].Name] = &srv[i]
	}
	var order []string
	var starts []time.Time
	for r, visits := range run.Order {
		for _, v := range visits {
			order = append(order, fmt.Sprintf("%s/%d", v.Server, r+1))
			starts = append(starts, start[v.Server].Rounds[r].Start)
		}
	}
	for i := 1; i < len(starts); i++ {
		if !starts[i-1].Before(starts[i]) {
			t.Errorf("rounds did not start in the recorded order %v: %v", order, starts)
		}
	}
	for _, s := range srv {
		for _, r := range s.Rounds {
			// 4 s over 2 rounds; a loaded machine may stop the client late,
			// which lengthens its window, counted as it is.
			if d := r.Load.End.Sub(r.Load.Start); d < 1800*time.Millisecond || d > 3*time.Second {
				t.Errorf("%s round %d measured %v, want 4s split over 2 rounds", s.Name, r.Round, d)
			}
			// Every round of every server, client-bound or not.
			if r.Capacity == nil {
				t.Errorf("%s round %d (client-bound %v) has no capacity measurement", s.Name, r.Round, r.ClientBound)
				continue
			}
			if r.Capacity.Load.Tool != "h2" || r.Capacity.Load.RPS <= 0 {
				t.Errorf("%s round %d capacity %+v", s.Name, r.Round, r.Capacity.Load)
			}
			// half the round's 2 s, but never under a second
			if d := r.Capacity.Load.End.Sub(r.Capacity.Load.Start); d < 900*time.Millisecond || d > 2*time.Second {
				t.Errorf("%s round %d: the capacity tool measured %v, want 1s", s.Name, r.Round, d)
			}
			if r.HostSteal == nil {
				t.Errorf("%s round %d has no host steal", s.Name, r.Round)
			}
		}
	}
	summary, err := os.ReadFile(filepath.Join(dir, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary), "server capacity") || !strings.Contains(string(summary), "min–max") {
		t.Errorf("summary.txt:\n%s", summary)
	}
	for _, row := range analysis.CapacityRanking(run.Cells[0]) {
		if !slices.Equal(row.Tools, []string{"h2"}) || row.RPS.N != 2 {
			t.Errorf("capacity row %s: tools %v over %d rounds, want h2 alone over 2", row.Name, row.Tools, row.RPS.N)
		}
	}
	for _, f := range []string{"go_grpc/round-1/load.json", "go_grpc/round-2/load.json", "python_grpc/round-2/server.log"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	assertNoContainersLeft(t, api)
}

// TestMatrixRun: list-valued settings make one run of their product, one
// bench.txt section per cell, each server image built once per scenario.
func TestMatrixRun(t *testing.T) {
	api := engine(t)
	env := benchEnv(t, map[string]string{"GRPC_REQUEST_SCENARIO": "complex_proto,string_10B", "GRPC_LOAD_PROFILE": "1a,2b",
		"GRPC_CLIENT_CONNECTIONS": "", "GRPC_CLIENT_CONCURRENCY": "", // the profiles set the shapes
		"GRPC_BENCHMARK_DURATION": "2s", "GRPC_BENCHMARK_WARMUP": "1s", "GRPC_LOAD_TOOL": "h2"})
	res := runBinary(t, repoRoot(t), env, "bench")
	if res.code != 0 {
		t.Fatalf("exit code %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	dir := runFolder(t, env)
	bench, run := readRun(t, dir)
	if len(run.Cells) != 4 {
		t.Fatalf("%d cells, want 4", len(run.Cells))
	}
	for i, want := range []string{"complex_proto 1a", "complex_proto 2b", "string_10B 1a", "string_10B 2b"} {
		c := run.Cells[i]
		if got := c.Scenario + " " + c.Profile; got != want || !c.Servers[0].Ranked() {
			t.Errorf("cell %d is %s (ranked %v), want %s", i+1, got, c.Servers[0].Ranked(), want)
		}
	}
	if strings.Count(bench, "Benchmark Execution Parameters:") != 4 || !strings.Contains(bench, "== cell 4 of 4: string_10B") ||
		!strings.Contains(bench, "- GRPC_LOAD_PROFILE=2b\n") {
		t.Errorf("bench.txt:\n%s", bench)
	}
	if n := strings.Count(res.stdout, "go_grpc: building"); n != 2 {
		t.Errorf("go_grpc built %d times, want once per scenario:\n%s", n, res.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "go_grpc", "string_10B_cpu1_2b", "round-1", "load.json")); err != nil {
		t.Error(err)
	}
	assertNoContainersLeft(t, api)
}

// TestCompare: a run against itself shows no change, and a folder that is
// not a run is refused with exit 2.
func TestCompare(t *testing.T) {
	env := benchEnv(t, nil)
	if res := runBinary(t, repoRoot(t), env, "bench"); res.code != 0 {
		t.Fatalf("exit code %d\n%s", res.code, res.stderr)
	}
	dir := runFolder(t, env)
	res := runBinary(t, repoRoot(t), env, "compare", dir, dir)
	if res.code != 0 || !strings.Contains(res.stdout, "go_grpc") || !strings.Contains(res.stdout, "~ (+0.0%)") {
		t.Errorf("compare with itself: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	for _, bad := range []string{filepath.Join(t.TempDir(), "missing"), t.TempDir()} {
		res := runBinary(t, repoRoot(t), env, "compare", dir, bad)
		if res.code != 2 || !strings.Contains(res.stderr, "run-b") || !strings.Contains(res.stderr, bad) {
			t.Errorf("compare with %s: exit %d\n%s", bad, res.code, res.stderr)
		}
	}
}

// TestShortWindowsReadAtMostTheCore: a server pinned to one core, loaded
// by h2 in the shortest windows the settings allow (1 s a round after a
// 1 s warm-up), never reads above 100% of its core plus the counters'
// resolution, with the stats interpolated to the windows' ends.
func TestShortWindowsReadAtMostTheCore(t *testing.T) {
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARK_DURATION": "3s", "GRPC_BENCHMARK_ROUNDS": "3", "GRPC_BENCHMARK_WARMUP": "1s",
		"GRPC_LOAD_TOOL": "h2", "GRPC_SERVER_CPUS": "1"})
	if res := runBinary(t, repoRoot(t), env, "bench"); res.code != 0 {
		t.Fatalf("exit code %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	_, run := readRun(t, runFolder(t, env))
	if p := run.Cells[0].Placement; p.Shared || p.ServerCPUSet == "" {
		t.Fatalf("the server was not pinned to a core of its own: %+v", p)
	}
	const resolution = 0.5 // percent of a core
	for _, r := range servers(t, run)[0].Rounds {
		if r.Failure != nil {
			t.Fatalf("round %d failed: %+v", r.Round, r.Failure)
		}
		window := r.Load.End.Sub(r.Load.Start)
		t.Logf("round %d: %v window, server CPU %.2f%% from %d samples, %.0f req/s", r.Round, window, r.Server.CPUAvgPercent, r.Server.Samples, r.Load.RPS)
		if r.Server.Samples == 0 || r.Server.CPUAvgPercent <= 0 || r.Server.CPUAvgPercent > 100+resolution {
			t.Errorf("round %d: the pinned one-core server read %.2f%% over %v from %d samples, want (0, %.1f]",
				r.Round, r.Server.CPUAvgPercent, window, r.Server.Samples, 100+resolution)
		}
	}
}

// TestCompareGate: compare as a CI gate on real runs. A run against itself
// exits 0 with the gate on; a run held to 200 req/s in all (a change that
// slows the server's figures whatever else the machine does) is a
// regression, exit 4, and the other way round is not.
func TestCompareGate(t *testing.T) {
	short := map[string]string{"GRPC_BENCHMARK_DURATION": "3s", "GRPC_BENCHMARK_ROUNDS": "3", "GRPC_BENCHMARK_WARMUP": "1s", "GRPC_LOAD_TOOL": "h2"}
	folder := func(qps string) string {
		vars := maps.Clone(short)
		vars["GRPC_CLIENT_QPS"] = qps
		env := benchEnv(t, vars)
		if res := runBinary(t, repoRoot(t), env, "bench"); res.code != 0 {
			t.Fatalf("GRPC_CLIENT_QPS=%s: exit code %d\n%s\n%s", qps, res.code, res.stdout, res.stderr)
		}
		return runFolder(t, env)
	}
	full, held := folder("0"), folder("200")
	gate := func(a, b string) runResult {
		return runBinary(t, repoRoot(t), os.Environ(), "compare", "--fail-on", "regression", a, b)
	}
	if res := gate(full, full); res.code != 0 || !strings.Contains(res.stdout, "regressions: none") {
		t.Errorf("a run against itself: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res := gate(full, held)
	if res.code != 4 || !strings.Contains(res.stdout, "settings that differ: GRPC_CLIENT_QPS=0→200") ||
		!strings.Contains(res.stdout, "- go_grpc: slower by more than 10%: req/s") {
		t.Errorf("as fast as it goes, then 200 req/s: exit %d, want 4\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	t.Logf("compare %s %s:\n%s", filepath.Base(full), filepath.Base(held), res.stdout)
	if res := gate(held, full); res.code != 0 || !strings.Contains(res.stdout, "regressions: none") {
		t.Errorf("200 req/s, then as fast as it goes: exit %d, want 0\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res = runBinary(t, repoRoot(t), os.Environ(), "compare", "--format", "json", full, held)
	var got struct {
		Regressions int `json:"regressions"`
		Cells       []struct {
			Servers []struct {
				Server, Status string
			} `json:"servers"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil || res.code != 0 || got.Regressions != 1 ||
		len(got.Cells) != 1 || len(got.Cells[0].Servers) != 1 || got.Cells[0].Servers[0].Status != "compared" {
		t.Errorf("compare --format json: exit %d, %v: %+v\n%s", res.code, err, got, res.stdout)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestInterruptKeepsFinishedServers stops a two-server run with SIGINT while
// the second server is under load: the first server's row must survive and
// no container may stay behind.
func TestInterruptKeepsFinishedServers(t *testing.T) {
	api := engine(t)
	root := copyRepo(t, map[string]string{"servers/go_grpc": "servers/go_grpc_again"})
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "go_grpc go_grpc_again", "GRPC_BENCHMARK_DURATION": "30s"})
	var stderr bytes.Buffer
	cmd, sc := startBench(t, root, env, &stderr)
	var printed strings.Builder
	// The round visits the two in a random order: interrupt the second.
	var ready []string
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if name, _, ok := strings.Cut(sc.Text(), ": ready;"); ok {
			if ready = append(ready, name); len(ready) == 2 {
				time.Sleep(3 * time.Second) // into the load phase
				if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	err := cmd.Wait()
	if exitErr := (*exec.ExitError)(nil); !errors.As(err, &exitErr) || exitErr.ExitCode() != 130 {
		t.Errorf("exit %v, want status 130\nstdout:\n%s\nstderr:\n%s", err, printed.String(), stderr.String())
	}
	if len(ready) != 2 {
		t.Fatalf("servers ready: %v, want both\n%s", ready, printed.String())
	}
	bench, run := readRun(t, runFolder(t, env))
	if _, ok := parseRows(t, bench)[ready[0]]; !ok {
		t.Errorf("the finished server's row is gone:\n%s", bench)
	}
	if !strings.Contains(bench, "! "+ready[1]+": not ranked, round 1, load failed: interrupted") || run.State != record.Interrupted {
		t.Errorf("the interrupted server is not reported as such:\n%s", bench)
	}
	assertNoContainersLeft(t, api)
}

// TestClosedPipeCleansUp runs `grpcbench bench | sed q`, and the same with
// sed quitting once a server is up: the closed pipe stops the run as an
// interrupt, the cleanup's own writes to it do not count as a second one,
// so no container and no lock are left, and results.json says
// interrupted.
func TestClosedPipeCleansUp(t *testing.T) {
	api := engine(t)
	for _, tc := range []struct{ name, sed string }{
		{"at the first line", "q"},
		{"with a server up", "/: ready;/q"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := benchEnv(t, map[string]string{"GRPC_BENCHMARK_DURATION": "30s"})
			res := run(t, repoRoot(t), env, "sh", "-c", `"$0" bench | sed "$1"`, binary, tc.sed)
			t.Logf("printed before the pipe closed:\n%s\nstderr:\n%s", res.stdout, res.stderr)
			if strings.Contains(res.stderr, "interrupted again") {
				t.Errorf("the cleanup's writes were taken for a second interrupt:\n%s", res.stderr)
			}
			if left := ownContainers(t, api); len(left) > 0 {
				t.Errorf("containers (the lock's included) left behind: %v\nstderr:\n%s", left, res.stderr)
			}
			var run record.Run
			readJSON(t, filepath.Join(runFolder(t, env), "results.json"), &run)
			if run.State != record.Interrupted {
				t.Errorf("results.json does not say the run was interrupted\nstderr:\n%s", res.stderr)
			}
		})
	}
}

// startBench starts `grpcbench bench` in dir and returns it with a scanner
// of its stdout, for a test that acts on what the run prints; stderr goes
// where the caller says (nil: discarded).
func startBench(t *testing.T, dir string, env []string, stderr io.Writer) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(binary, "bench")
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env, stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(stdout)
}

// benchInBackground starts grpcbench bench in dir, its output to out
// (nil: dropped), and says on done how it ended.
func benchInBackground(t *testing.T, dir string, env []string, out io.Writer) (cmd *exec.Cmd, done <-chan error) {
	t.Helper()
	cmd = exec.Command(binary, "bench")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	return cmd, ended
}

// copyRepo copies what a run needs of the repository into a temporary
// addBrokenServers adds to a copy of the repository the servers of
// testdata/broken_server: go_grpc with that main.go, each behaviour a
// variant of it (testdata/broken_server/variants.json). The folder is the
// same in every test, so the engine builds its image once for the suite.
func addBrokenServers(t *testing.T, root string) {
	t.Helper()
	dir := filepath.Join(root, "servers", "broken_server")
	copyTree(t, filepath.Join(root, "servers", "go_grpc"), dir)
	for _, f := range []string{"main.go", "variants.json"} {
		copyTree(t, filepath.Join(repoRoot(t), "orchestrator", "e2e", "testdata", "broken_server", f), filepath.Join(dir, f))
	}
}

// folder, with the extra copies of folders given by renames (from → to).
func copyRepo(t *testing.T, renames map[string]string) string {
	t.Helper()
	src, dst := repoRoot(t), t.TempDir()
	paths := []string{"Dockerfile", ".dockerignore", "go.mod", "go.sum", "orchestrator", "scenarios", "servers"}
	for _, p := range paths {
		copyTree(t, filepath.Join(src, p), filepath.Join(dst, p))
	}
	for from, to := range renames {
		copyTree(t, filepath.Join(src, from), filepath.Join(dst, to))
	}
	return dst
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}
