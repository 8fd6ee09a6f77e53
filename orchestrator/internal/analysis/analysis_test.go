package analysis_test

import (
	"flag"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

var update = flag.Bool("update", false, "rewrite the fixture runs of testdata/runs from their builders")

// recordedRun is the folder of the run report's tests render too: a real
// run's record (of layout 2), cut down to a few servers.
var recordedRun = filepath.Join("..", "report", "testdata", "run")

// fixtures are the runs built here that report's tests render as well:
// they read them from testdata/runs/<name>, which TestFixtureRunsAreSaved
// keeps as the builders build them.
var fixtures = map[string]func(*testing.T) record.Run{
	"sweep":    sweepRun,
	"tls":      func(*testing.T) record.Run { return tlsRun() },
	"capacity": func(*testing.T) record.Run { return capacityRun() },
}

// TestFixtureRunsAreSaved: each fixture run's results.json is what its
// builder builds (-update rewrites it).
func TestFixtureRunsAreSaved(t *testing.T) {
	for name, build := range fixtures {
		f := record.Folder{Dir: t.TempDir()}
		if err := record.Save(f, build(t)); err != nil {
			t.Fatal(err)
		}
		testfiles.Golden(t, filepath.Join(fixtureDir(name), "results.json"), testfiles.Read(t, f.Path("results.json")), *update)
	}
}

// fixtureDir is the folder of a fixture run.
func fixtureDir(name string) string { return filepath.Join("testdata", "runs", name) }

// TestDesignOf: a record without a design had fixed rounds; one with a
// design was tested by it, as DesignRecord keeps it.
func TestDesignOf(t *testing.T) {
	if got := analysis.DesignOf(record.Run{}); !reflect.DeepEqual(got, stats.Fixed(0, 0)) {
		t.Errorf("no design: %+v, want a fixed one", got)
	}
	auto := stats.Design{Looks: []int{3, 6}, Levels: []float64{0.01, 0.04}, Margin: 0.05}
	if got := analysis.DesignOf(record.Run{Design: analysis.DesignRecord(auto)}); !reflect.DeepEqual(got, auto) {
		t.Errorf("design %+v, want the run's %+v", got, auto)
	}
}

// measured is a round's figures at rps, the server at cpu percent of a
// core: every call OK, a mean latency of 1 ms and a p99 of 4 ms, 10 MiB,
// the client at 40%.
func measured(rps, cpu float64) record.Measurement {
	calls := uint64(rps * 30)
	latency := record.Latency{Count: calls, Mean: time.Millisecond, P90: 2 * time.Millisecond, P95: 3 * time.Millisecond, P99: 4 * time.Millisecond}
	return record.Measurement{
		Load:   &record.Result{Tool: "ghz", Requests: calls, OK: calls, Statuses: map[string]uint64{"OK": calls}, RPS: rps, Latency: latency},
		Server: record.Usage{Samples: 30, CPUAvgPercent: cpu, CPUMaxPercent: cpu + 10, MemoryAvgBytes: 10 << 20},
		Client: record.Usage{Samples: 30, CPUAvgPercent: 40},
	}
}

// server is a server measured once per value of rps, at cpu percent.
func server(name string, cpu float64, rps ...float64) record.Server {
	s := record.Server{Name: name}
	for i, v := range rps {
		s.Rounds = append(s.Rounds, record.Round{Round: i + 1, Measurement: measured(v, cpu)})
	}
	return s
}

// cellOf is a cell of the servers, one core each for the server and its
// client.
func cellOf(servers ...record.Server) record.Cell {
	return record.Cell{Scenario: "complex_proto", ServerCPUs: 1, ClientCPUs: 1, Connections: 50, Concurrency: 1000, Servers: servers}
}

// names lists the rows' servers.
func names(rows []analysis.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}
