package report_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// ms is a latency given in milliseconds.
func ms(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Millisecond))) }

// mibBytes is the byte count that shows as v MiB.
func mibBytes(v float64) uint64 { return uint64(math.Round(v * 1048576)) }

// row is one line of the seed's table, with values a little off the printed
// hundredths so that the formatting has to round them.
type row struct {
	name                string
	rps                 float64
	mean, p90, p95, p99 float64 // ms
	cpu                 float64 // percent
	mem                 float64 // MiB
}

// seedRows are grpc_bench's results from seed 001, in a shuffled order.
var seedRows = []row{
	{"go_connect", 101786.8, 8.9012, 21.7093, 29.0188, 40.0712, 1188.9901, 77.73},
	{"rust_thruster_st", 128904.2, 7.4589, 8.3011, 17.4909, 23.7608, 89.5213, 11.01},
	{"node_grpcjs_st", 25245.6, 39.5187, 50.9413, 53.3792, 55.3088, 139.8912, 68.96},
	{"rust_tonic_mt", 132125.4, 4.7811, 4.7093, 7.7288, 60.9712, 292.9291, 26.01},
	{"go_grpc", 130184.9, 5.4902, 8.9688, 14.6413, 54.7893, 499.5912, 27.77},
	{"rust_tonic_st", 135381.7, 7.3491, 7.7012, 7.8488, 8.2011, 102.6388, 10.8},
	{"go_vtconnect", 102773.3, 8.7911, 22.6987, 29.8012, 41.7389, 1156.1812, 81.96},
	{"rust_thruster_mt", 120439.5, 5.3408, 4.8611, 9.2893, 64.7712, 209.0787, 22.88},
	{"go_vtgrpc", 130477.1, 5.2693, 7.5812, 11.5988, 56.4811, 426.8309, 31.52},
	{"rust_grpcio", 129512.2, 5.2311, 4.8589, 7.3412, 61.0393, 258.6288, 158.94},
}

// server is the row as a server measured in one round.
func (r row) server() record.Server {
	return record.Server{
		Name:   r.name,
		Image:  "grpc_bench:" + r.name + "-complex_proto",
		Rounds: []record.Round{{Round: 1, Measurement: r.measurement(r.rps)}},
	}
}

// measurement is the row's figures at a given req/s.
func (r row) measurement(rps float64) record.Measurement {
	ok := uint64(rps * 30)
	return record.Measurement{Load: &record.Result{
		Tool:     "ghz",
		Requests: ok,
		OK:       ok,
		Statuses: map[string]uint64{"OK": ok},
		RPS:      rps,
		Latency: record.Latency{
			Count: ok,
			Mean:  ms(r.mean),
			P90:   ms(r.p90),
			P95:   ms(r.p95),
			P99:   ms(r.p99),
		},
	},
		Server: record.Usage{Samples: 30, CPUAvgPercent: r.cpu, CPUMaxPercent: r.cpu + 10, MemoryAvgBytes: mibBytes(r.mem)},
		Client: record.Usage{Samples: 30, CPUAvgPercent: 40},
	}
}

const seedCommit = "160be4a Thu, 25 Apr 2024 16:18:16 +0200 GitHub Update sbt-assembly to 2.2.0 (#446)"

var seedSettings = []record.Setting{
	{Name: "GRPC_BENCHMARK_DURATION", Value: "30s"},
	{Name: "GRPC_BENCHMARK_WARMUP", Value: "10s"},
	{Name: "GRPC_SERVER_CPUS", Value: "16"},
	{Name: "GRPC_SERVER_RAM", Value: "2048m"},
	{Name: "GRPC_CLIENT_CONNECTIONS", Value: "50"},
	{Name: "GRPC_CLIENT_CONCURRENCY", Value: "1000"},
	{Name: "GRPC_CLIENT_QPS", Value: "0"},
	{Name: "GRPC_CLIENT_CPUS", Value: "8"},
	{Name: "GRPC_REQUEST_SCENARIO", Value: "complex_proto"},
}

// runOf is a run of one cell with the seed's settings.
func runOf(servers ...record.Server) record.Run {
	return record.Run{Commit: seedCommit, Settings: seedSettings, Cells: []record.Cell{
		{Scenario: "complex_proto", ServerCPUs: 16, ClientCPUs: 8, Connections: 50, Concurrency: 1000,
			Settings: seedSettings, Servers: servers},
	}}
}

func seedRun() record.Run {
	var servers []record.Server
	for _, r := range seedRows {
		servers = append(servers, r.server())
	}
	return runOf(servers...)
}

func writeBench(t *testing.T, run record.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteBench(&b, analysis.Of(run)); err != nil {
		t.Fatalf("WriteBench error: %v", err)
	}
	return b.String()
}

func TestWriteBenchMatchesGrpcBench(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "seed001_bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := writeBench(t, seedRun())
	if got != string(golden) {
		t.Errorf("WriteBench output differs from testdata/seed001_bench.txt:\n%s\nfull output:\n%s", testfiles.LineDiff(string(golden), got), got)
	}
}

// lines splits a bench.txt into its lines, without the final empty one.
func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// tableNames returns the names in the table rows, in order.
func tableNames(bench string) []string {
	var names []string
	ls := lines(bench)
	rules := 0
	for _, l := range ls {
		if strings.HasPrefix(l, "---") {
			rules++
			continue
		}
		if rules == 2 && strings.HasPrefix(l, "| ") {
			names = append(names, strings.TrimSpace(strings.Split(l, "|")[1]))
		}
	}
	return names
}

// notes returns the "! " lines and checks they sit between the closing
// rule and "Benchmark Execution Parameters:".
func notes(t *testing.T, bench string) []string {
	t.Helper()
	ls := lines(bench)
	params := slices.Index(ls, "Benchmark Execution Parameters:")
	if params < 0 {
		t.Fatalf("no parameters heading in:\n%s", bench)
	}
	lastRule := -1
	for i, l := range ls {
		if strings.HasPrefix(l, "---") {
			lastRule = i
		}
	}
	var out []string
	for i, l := range ls {
		if !strings.HasPrefix(l, "! ") {
			continue
		}
		if i < lastRule || i > params {
			t.Errorf("note %q at line %d is not between the table (ends line %d) and the parameters (line %d)", l, i+1, lastRule+1, params+1)
		}
		out = append(out, l)
	}
	return out
}

func TestWriteBenchSortsByRPS(t *testing.T) {
	got := tableNames(writeBench(t, seedRun()))
	want := []string{"rust_tonic_st", "rust_tonic_mt", "go_vtgrpc", "go_grpc", "rust_grpcio",
		"rust_thruster_st", "rust_thruster_mt", "go_vtconnect", "go_connect", "node_grpcjs_st"}
	if !slices.Equal(got, want) {
		t.Errorf("table order = %v, want %v", got, want)
	}
}

func TestWriteBenchFailedServer(t *testing.T) {
	run := runOf(
		seedRows[4].server(), // go_grpc
		record.Server{Name: "java_broken", Failure: &record.Failure{Phase: "build", Reason: "exit status 1"}},
		// A server whose second round failed under load is not ranked on
		// its first round's figures either.
		func() record.Server {
			s := seedRows[5].server() // rust_tonic_st, faster than go_grpc
			s.Rounds = append(s.Rounds, record.Round{Round: 2, Failure: &record.Failure{Phase: "load", Reason: "server exited with code 137"}})
			return s
		}(),
	)
	bench := writeBench(t, run)
	if got := tableNames(bench); !slices.Equal(got, []string{"go_grpc"}) {
		t.Errorf("table rows = %v, want only go_grpc", got)
	}
	wantNotes := []string{
		"! java_broken: not ranked, build failed: exit status 1",
		"! rust_tonic_st: not ranked, round 2, load failed: server exited with code 137",
	}
	if got := notes(t, bench); !slices.Equal(got, wantNotes) {
		t.Errorf("notes = %q, want %q", got, wantNotes)
	}
	ls := lines(bench)
	if i := slices.Index(ls, wantNotes[1]); i < 0 || i+1 >= len(ls) || ls[i+1] != "Benchmark Execution Parameters:" {
		t.Errorf("the parameters do not follow the notes directly:\n%s", bench)
	}
}

func TestWriteBenchErrorShare(t *testing.T) {
	flaky := seedRows[4].server()
	flaky.Name = "flaky"
	l := flaky.Rounds[0].Load
	l.Requests, l.OK = 2000, 1900
	l.Statuses = map[string]uint64{"OK": 1900, "Unavailable": 60, "DeadlineExceeded": 40}
	// Half a percent of failed calls is below the mark.
	fine := seedRows[0].server()
	l = fine.Rounds[0].Load
	l.Requests, l.OK = 2000, 1990
	l.Statuses = map[string]uint64{"OK": 1990, "Unavailable": 10}

	bench := writeBench(t, runOf(fine, flaky))
	if got := tableNames(bench); !slices.Equal(got, []string{"flaky", "go_connect"}) {
		t.Errorf("table rows = %v, want flaky then go_connect", got)
	}
	want := []string{"! flaky: 5.0% of calls failed (DeadlineExceeded: 40, Unavailable: 60); req/s counts OK calls only",
		"! no two rows are told apart: fewer than 3 rounds; the order of the rows is not significant"}
	if got := notes(t, bench); !slices.Equal(got, want) {
		t.Errorf("notes = %q, want %q", got, want)
	}
}

func TestWriteBenchLoadNotesAndInterruption(t *testing.T) {
	s := seedRows[4].server()
	s.Rounds[0].Load.Notes = []string{"latencies from 1 of 50 connections"}
	run := runOf(s)
	run.State = record.Interrupted
	bench := writeBench(t, run)
	want := []string{
		"! go_grpc: latencies from 1 of 50 connections",
		"! the run was interrupted: servers and rounds after the last one listed were not measured",
	}
	if got := notes(t, bench); !slices.Equal(got, want) {
		t.Errorf("notes = %q, want %q", got, want)
	}
}

func TestWriteBenchClientBound(t *testing.T) {
	s := seedRows[4].server()
	s.Rounds[0].ClientBound = true
	s.Rounds[0].Client.CPUAvgPercent = 98.4 * 8 // of the cell's 8 client CPUs
	bench := writeBench(t, runOf(s))
	if got := tableNames(bench); !slices.Equal(got, []string{"go_grpc"}) {
		t.Errorf("a client-bound row is still a row: table rows = %v", got)
	}
	want := []string{"! go_grpc: client-bound: the load client used 787% CPU and its quota throttled it in 0% of its periods, " +
		"at its GRPC_CLIENT_CPUS limit; this row measures the client: its req/s (≥) is a lower bound of the server's, " +
		"sorted by that bound and not tested against other rows (see summary.txt for the server's capacity)"}
	if got := notes(t, bench); !slices.Equal(got, want) {
		t.Errorf("notes = %q, want %q", got, want)
	}
}

// TestClientBoundRowsAreLowerBounds: a row client-bound in any round shows
// its req/s as a bound (≥, in seed 001's column), sorts by it, and is not
// in a tie: two client-bound rows whose ranges overlap measure the same
// client, which says nothing of the servers.
func TestClientBoundRowsAreLowerBounds(t *testing.T) {
	bound := func(s record.Server, which ...int) record.Server {
		for _, i := range which {
			s.Rounds[i].ClientBound = true
			s.Rounds[i].Client.CPUAvgPercent = 99 * 8 // of the cell's 8 client CPUs
		}
		return s
	}
	run := runOf(
		bound(rounds(seedRows[0], "a", 30000, 31000, 30500), 0, 1, 2),
		bound(rounds(seedRows[1], "b", 30200, 30800, 30400), 1), // one round of three is enough
		rounds(seedRows[2], "c", 20000, 21000, 20500),
		rounds(seedRows[3], "d", 20300, 20800, 20400), // overlaps c
	)
	bench := writeBench(t, run)
	if got := tableNames(bench); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("table = %v, want by median (the bounds' included)", got)
	}
	for _, want := range []string{"| a                           |  ≥30500 |", "| b                           |  ≥30400 |", "| c                           |   20500 |"} {
		if !strings.Contains(bench, want) {
			t.Errorf("bench.txt lacks %q:\n%s", want, bench)
		}
	}
	var ties []string
	for _, n := range notes(t, bench) {
		if strings.Contains(n, "cannot be told apart") {
			ties = append(ties, n)
		}
	}
	// The bounds are not tested: the groups name c and d alone.
	if len(ties) != 1 || !strings.HasPrefix(ties[0], "! groups: rows that share a letter cannot be told apart: a: c, d;") {
		t.Errorf("ties = %q, want one group of c and d alone", ties)
	}
}

func TestWriteBenchBusyHost(t *testing.T) {
	s := seedRows[4].server()
	quiet, busy := 0.12, 0.85
	s.Rounds[0].OtherCores = &busy
	s.Rounds = append(s.Rounds, s.Rounds[0])
	s.Rounds[1].OtherCores = &quiet
	bench := writeBench(t, runOf(s))
	want := []string{"! go_grpc: busy host: other work than the server and its client kept more than 0.3 cores busy in 1 of 2 rounds (up to 0.85); its figures may be disturbed"}
	if got := notes(t, bench); !slices.Equal(got, want) {
		t.Errorf("notes = %q, want %q", got, want)
	}
}

func TestWriteBenchConformanceWarning(t *testing.T) {
	s := seedRows[4].server()
	s.Conformance = &record.Conformance{Passed: true, Warnings: []string{"unknown method answered promptly with grpc-status NotFound (5)"}}
	bench := writeBench(t, runOf(s))
	if got := tableNames(bench); !slices.Equal(got, []string{"go_grpc"}) {
		t.Errorf("a server with a warning is still ranked: table rows = %v", got)
	}
	want := []string{"! go_grpc: conformance warning: unknown method answered promptly with grpc-status NotFound (5)"}
	if got := notes(t, bench); !slices.Equal(got, want) {
		t.Errorf("notes = %q, want %q", got, want)
	}
}

func TestWriteBenchEmptyRun(t *testing.T) {
	run := runOf()
	run.Commit, run.Cells[0].Settings = "abc", seedSettings[:1]
	bench := writeBench(t, run)
	rule := strings.Repeat("-", 137)
	want := []string{
		rule,
		"| name                        |   req/s |   avg. latency |        90 % in |        95 % in |        99 % in | avg. cpu |   avg. memory |",
		rule,
		rule,
		"Benchmark Execution Parameters:",
		"abc",
		"- GRPC_BENCHMARK_DURATION=30s",
	}
	if got := lines(bench); !slices.Equal(got, want) {
		t.Errorf("empty run:\n%s", testfiles.LineDiff(strings.Join(want, "\n"), strings.Join(got, "\n")))
	}
}

type failingWriter struct{}

var errWrite = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWriteBenchWriteError(t *testing.T) {
	if err := report.WriteBench(failingWriter{}, analysis.Of(seedRun())); !errors.Is(err, errWrite) {
		t.Errorf("WriteBench to a failing writer = %v, want %v", err, errWrite)
	}
}

// names lists the rows' servers.
func names(rows []analysis.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

func TestRanking(t *testing.T) {
	mk := func(name string, rps ...float64) record.Server {
		s := record.Server{Name: name}
		for i, v := range rps {
			s.Rounds = append(s.Rounds, record.Round{Round: i + 1, Measurement: seedRows[0].measurement(v)})
		}
		return s
	}
	failed := mk("failed_fast", 1e6)
	failed.Failure = &record.Failure{Phase: "load", Reason: "crash"}
	servers := []record.Server{
		mk("slow", 10, 11, 9),
		failed,
		mk("fast", 30, 1, 31), // one disturbed round does not decide
		{Name: "never_loaded"},
		mk("tie_first", 20),
		mk("tie_second", 20),
	}
	before := slices.Clone(servers)
	cell := runOf(servers...).Cells[0]
	rows := analysis.LoadRanking(cell)
	if want := []string{"fast", "tie_first", "tie_second", "slow"}; !slices.Equal(names(rows), want) {
		t.Errorf("Ranking = %v, want %v", names(rows), want)
	}
	if rows[0].RPS.Median != 30 || rows[0].RPS.Lo != 1 || rows[0].RPS.Hi != 31 {
		t.Errorf("fast: %+v, want the median 30 in 1–31", rows[0].RPS)
	}
	if !reflect.DeepEqual(servers, before) {
		t.Error("Ranking reordered its argument")
	}
	if r := analysis.LoadRanking(record.Cell{}); len(r) != 0 {
		t.Errorf("Ranking of an empty cell = %v, want empty", r)
	}
}

func TestRankingKeepsTiesInCatalogOrder(t *testing.T) {
	// Enough servers that a sort which is not stable would show it.
	var servers []record.Server
	var want []string
	for _, rps := range []float64{300, 200, 100} {
		for i := range 20 {
			want = append(want, fmt.Sprintf("s%.0f_%02d", rps, i))
		}
	}
	for i := range 20 {
		for _, rps := range []float64{100, 300, 200} {
			servers = append(servers, record.Server{Name: fmt.Sprintf("s%.0f_%02d", rps, i),
				Rounds: []record.Round{{Round: 1, Measurement: seedRows[0].measurement(rps)}}})
		}
	}
	if got := names(analysis.LoadRanking(runOf(servers...).Cells[0])); !slices.Equal(got, want) {
		t.Errorf("Ranking of tied servers =\n%v\nwant\n%v", got, want)
	}
}

func TestSave(t *testing.T) {
	start := time.Date(2026, 11, 30, 7, 32, 20, 123456789, time.UTC)
	run := seedRun()
	run.ID = "2026-11-30_07-32-20"
	run.Started = start
	run.State, run.Ended = record.Finished, start.Add(7*time.Minute+3*time.Second)
	run.Hardware = record.Hardware{CPUModel: "AMD Ryzen 9 7950X3D 16-Core Processor", CPUs: 32, MemoryBytes: 96 << 30,
		Kernel: "6.8.0-35-generic", OS: "Ubuntu 24.04 LTS", DockerVersion: "20.10.24", CgroupVersion: "1", StorageDriver: "overlay2"}
	c := &run.Cells[0]
	c.Placement = record.Placement{ServerCPUSet: "0-15", ClientCPUSet: "16-23"}
	r := &c.Servers[0].Rounds[0]
	r.Start = start
	r.Phases = []record.Phase{{Name: "start", Start: start, Seconds: 0.5}, {Name: "load", Start: start.Add(time.Second), Seconds: 40}}
	r.Client = record.Usage{Samples: 29, CPUAvgPercent: 790.25, CPUMaxPercent: 801.5, MemoryAvgBytes: 1 << 27, MemoryMaxBytes: 1 << 28,
		CPUSeconds: 237.075, ThrottledShare: 0.25, ThrottledSeconds: 1.5}
	r.Load.Start = start.Add(time.Minute)
	r.Load.End = start.Add(time.Minute + 30*time.Second)
	steal := 0.02
	r.HostSteal = &steal
	r.ClientBound = true
	r.Capacity = &record.Measurement{Load: &record.Result{Tool: "h2", RPS: 150000, OK: 100, Requests: 100}}
	c.Servers[1].Rounds[0].Load.Statuses = map[string]uint64{"OK": 100, "Unavailable": 3}
	c.Servers[1].Rounds[0].Load.Errors = map[string]uint64{"connection refused": 3}
	c.Servers = append(c.Servers, record.Server{Name: "java_broken", Failure: &record.Failure{Phase: "build", Reason: "exit status 1"}})

	dir := t.TempDir()
	if err := report.Save(record.Folder{Dir: dir}, run); err != nil {
		t.Fatalf("Save error: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if want := []string{"bench.txt", "report.html", "results.csv", "results.json", "results.md", "summary.txt"}; !slices.Equal(files, want) {
		t.Errorf("Save left %v in the folder, want %v", files, want)
	}
	bench, err := os.ReadFile(filepath.Join(dir, "bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := writeBench(t, run); string(bench) != want {
		t.Errorf("bench.txt differs from WriteBench:\n%s", testfiles.LineDiff(want, string(bench)))
	}
	js, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back record.Run
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("results.json does not decode: %v", err)
	}
	if back.Version != record.Version {
		t.Errorf("results.json is of layout %d, want %d", back.Version, record.Version)
	}
	run.Version = record.Version
	if !reflect.DeepEqual(back, run) {
		t.Errorf("decoded run differs from the saved one:\n got %+v\nwant %+v", back, run)
	}
}

func TestSaveIntoMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no", "such", "folder")
	if err := report.Save(record.Folder{Dir: dir}, seedRun()); err == nil {
		t.Error("Save into a missing folder returned nil error")
	}
}

func TestWriteHardware(t *testing.T) {
	var b bytes.Buffer
	h := record.Hardware{CPUModel: "AMD Ryzen 9 7950X3D 16-Core Processor", CPUs: 32, MemoryBytes: 96 << 30,
		Kernel: "6.8.0-35-generic", OS: "Ubuntu 24.04 LTS", DockerVersion: "20.10.24", CgroupVersion: "1", StorageDriver: "overlay2"}
	if err := report.WriteHardware(&b, h); err != nil {
		t.Fatal(err)
	}
	want := "CPU:       AMD Ryzen 9 7950X3D 16-Core Processor, 32 cores\n" +
		"Memory:    96.0 GiB\n" +
		"Kernel:    6.8.0-35-generic\n" +
		"OS:        Ubuntu 24.04 LTS\n" +
		"Docker:    20.10.24 (cgroup v1, overlay2)\n"
	if b.String() != want {
		t.Errorf("WriteHardware:\n%s", testfiles.LineDiff(want, b.String()))
	}
}

// TestWriteBenchStreamingCell: a streaming cell's rate column says it
// counts messages, in bench.txt and summary.txt, and a server whose stack
// does not serve the scenario is listed as not supported, not as failed.
func TestWriteBenchStreamingCell(t *testing.T) {
	run := runOf(seedRows[4].server(), record.Server{Name: "no_streams", Unsupported: "its stack has no bidi streams"})
	run.Cells[0].Scenario, run.Cells[0].Kind = "stream_pingpong", string(scenario.BidiStreaming)
	bench := writeBench(t, run)
	if !strings.Contains(bench, "| name                        |   msg/s |") {
		t.Errorf("the header does not say msg/s:\n%s", bench)
	}
	if got, want := notes(t, bench), []string{"! no_streams: not supported: its stack has no bidi streams"}; !slices.Equal(got, want) {
		t.Errorf("notes = %q, want %q", got, want)
	}
	var summary bytes.Buffer
	if err := report.WriteSummary(&summary, analysis.Of(run)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary.String(), "msg/s per core") {
		t.Errorf("summary.txt's header does not say msg/s per core:\n%s", summary.String())
	}
	if unary := writeBench(t, seedRun()); !strings.Contains(unary, "| name                        |   req/s |") {
		t.Errorf("a unary cell's header is not grpc_bench's req/s:\n%s", unary)
	}
}
