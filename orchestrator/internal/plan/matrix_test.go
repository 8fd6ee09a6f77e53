package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
)

// The matrix of cells the settings make.

var testTools = []config.Tool{{Name: "ghz", Help: "the reference"}, {Name: "h2", Help: "the cheap one", OpenLoop: true}}

// facts are a catalog of one server and two scenarios on an engine of n
// CPUs and 24 GiB.
func facts(n int) config.Facts {
	return config.Facts{Servers: []string{"go_grpc"}, Scenarios: []string{"complex_proto", "string_10B"}, HostCPUs: n, HostMemory: 24 << 30}
}

func TestLoadProfileSetsTheShape(t *testing.T) {
	for name, p := range config.Profiles {
		cfg, err := config.Parse(map[string]string{"GRPC_LOAD_PROFILE": name}, testTools)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := cfg.Validate(facts(2)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		cells := product(cfg, 2, 2)
		if len(cells) != 1 {
			t.Fatalf("%s: %d cells", name, len(cells))
		}
		cell := cells[0]
		if cell.Connections != p.Connections || cell.Concurrency != p.Connections*p.Streams || cell.Profile != name {
			t.Errorf("%s: %d connections, %d in flight; want %d x %d", name, cell.Connections, cell.Concurrency, p.Connections, p.Streams)
		}
		settings := map[string]string{}
		for _, s := range Footer(cfg, cell) {
			settings[s.Name] = s.Value
		}
		if settings["GRPC_CLIENT_CONNECTIONS"] != strconv.Itoa(cell.Connections) || settings["GRPC_CLIENT_CONCURRENCY"] != strconv.Itoa(cell.Concurrency) {
			t.Errorf("%s: settings show %v", name, settings)
		}
	}
	if want := (config.Profile{Connections: 10, Streams: 10}); config.Profiles["2b"] != want {
		t.Errorf("2b = %+v, want %+v", config.Profiles["2b"], want)
	}
}

// TestCellsAreTheProduct checks the matrix: scenarios outermost, then
// server CPUs, then profiles, each cell with its own footer.
func TestCellsAreTheProduct(t *testing.T) {
	cfg, err := config.Parse(map[string]string{
		"GRPC_REQUEST_SCENARIO": "complex_proto,string_10B", "GRPC_SERVER_CPUS": "1,2", "GRPC_LOAD_PROFILE": "1a,2b",
	}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(facts(4)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range product(cfg, 4, 4) {
		got = append(got, fmt.Sprintf("%s/%s/%s/%s", c.Scenario, c.ServerCPUs, c.Profile, c.ClientCPUs))
	}
	want := []string{
		"complex_proto/1/1a/2", "complex_proto/1/2b/2", "complex_proto/2/1a/1", "complex_proto/2/2b/1",
		"string_10B/1/1a/2", "string_10B/1/2b/2", "string_10B/2/1a/1", "string_10B/2/2b/1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("cells = %v, want %v", got, want)
	}
	footer := map[string]string{}
	for _, s := range Footer(cfg, product(cfg, 4, 4)[6]) {
		footer[s.Name] = s.Value
	}
	for name, value := range map[string]string{"GRPC_REQUEST_SCENARIO": "string_10B", "GRPC_SERVER_CPUS": "2", "GRPC_LOAD_PROFILE": "1a",
		"GRPC_CLIENT_CONNECTIONS": "1", "GRPC_CLIENT_CONCURRENCY": "1", "GRPC_CLIENT_CPUS": "1 (auto)"} {
		if footer[name] != value {
			t.Errorf("footer %s=%q, want %q", name, footer[name], value)
		}
	}
}

// TestAutoClientCPUs: every core the server does not take, less one for
// dockerd once two or more are left, at least one.
func TestAutoClientCPUs(t *testing.T) {
	for _, tc := range []struct {
		engine int
		server string
		want   config.CPUs
	}{
		{2, "1", 1}, {2, "2", 1}, {2, "1.5", 1}, {4, "1", 2}, {8, "2", 5}, {3, "1", 1}, {1, "1", 1},
	} {
		cfg, err := config.Parse(map[string]string{"GRPC_SERVER_CPUS": tc.server}, testTools)
		if err != nil {
			t.Fatal(err)
		}
		if got := product(cfg, tc.engine, tc.engine)[0].ClientCPUs; got != tc.want {
			t.Errorf("auto beside a %s-CPU server on %d cores = %v, want %v", tc.server, tc.engine, got, tc.want)
		}
	}
	cfg, err := config.Parse(map[string]string{"GRPC_CLIENT_CPUS": "1.5"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	if got := product(cfg, 8, 8)[0].ClientCPUs; got != 1.5 {
		t.Errorf("an explicit 1.5 resolved to %v", got)
	}
}

// TestRatesAreCellsAfterTheSaturationLoad: each rate of a sweep is a cell
// of its own, after its saturation cell, with its rate in the footer; a
// latency objective without rates makes the search's probe cells.
func TestRatesAreCellsAfterTheSaturationLoad(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_LOAD_RATES": "25%, 50%", "GRPC_SERVER_CPUS": "1,2"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(facts(4)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range product(cfg, 4, 4) {
		rates := ""
		for _, s := range Footer(cfg, c) {
			if s.Name == "GRPC_LOAD_RATES" {
				rates = s.Value
			}
		}
		names = append(names, c.ServerCPUs.String()+"/"+c.Rate.String()+"/"+rates)
		if c.Swept() && c.Saturation() != (Cell{Scenario: c.Scenario, ServerCPUs: c.ServerCPUs, ClientCPUs: c.ClientCPUs,
			Connections: c.Connections, Concurrency: c.Concurrency}) {
			t.Errorf("cell %s: saturation cell %+v", c.Name(), c.Saturation())
		}
	}
	if want := "1/0/,1/25%/25%,1/50%/50%,2/0/,2/25%/25%,2/50%/50%"; strings.Join(names, ",") != want {
		t.Errorf("cells %s, want %s", strings.Join(names, ","), want)
	}
	cfg, err = config.Parse(map[string]string{"GRPC_LATENCY_SLO": "p99.9<20ms"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	cells := product(cfg, 2, 2)
	if len(cells) != 1+SLOProbes || cells[0].Swept() || cells[SLOProbes].Probe != SLOProbes ||
		!strings.Contains(cells[1].Name(), "probe 1") || cfg.SLO.Bound != 20*time.Millisecond || cfg.SLO.Percentile != "p99.9" {
		t.Errorf("objective %+v: cells %+v", cfg.SLO, cells)
	}
}

// TestTLSIsAMatrixDimension: GRPC_TLS=off,on runs each cell plaintext and
// over TLS, side by side, each footer with its own mode; the default is
// plaintext alone.
func TestTLSIsAMatrixDimension(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_SERVER_CPUS": "1,2", "GRPC_TLS": "off,on"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(facts(4)); err != nil {
		t.Fatal(err)
	}
	var got []string
	cells := product(cfg, 4, 4)
	for _, c := range cells {
		got = append(got, fmt.Sprintf("%s/%s", c.ServerCPUs, c.TLSMode()))
	}
	if want := []string{"1/off", "1/on", "2/off", "2/on"}; !slices.Equal(got, want) {
		t.Errorf("cells = %v, want %v", got, want)
	}
	if !strings.HasSuffix(cells[1].Name(), ", TLS") || strings.Contains(cells[0].Name(), "TLS") {
		t.Errorf("names %q, %q: only the TLS cell says TLS", cells[0].Name(), cells[1].Name())
	}
	for i, want := range []string{"off", "on"} {
		for _, s := range Footer(cfg, cells[i]) {
			if s.Name == "GRPC_TLS" && s.Value != want {
				t.Errorf("footer of cell %d: GRPC_TLS=%q, want %q", i, s.Value, want)
			}
		}
	}
	plain, err := config.Parse(nil, testTools)
	if err != nil {
		t.Fatal(err)
	}
	if cells := product(plain, 4, 4); len(cells) != 1 || cells[0].TLS {
		t.Errorf("default cells %+v, want one plaintext cell", cells)
	}
}

// TestAutoClientCPUsOnTwoHosts: with the clients on a machine of their
// own, auto is every core of that machine, less the engine's.
func TestAutoClientCPUsOnTwoHosts(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_CLIENT_DOCKER_HOST": "ssh://bench@client", "GRPC_SERVER_ADDRESS": "10.0.0.2:50051"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	if got := product(cfg, 2, 8)[0].ClientCPUs; got != 7 {
		t.Errorf("auto client CPUs on a client machine of 8 cores = %v, want 7", got)
	}
}
