package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"

	// The Docker backend checks and compares the engine addresses.
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/docker"
)

// oneServer is the catalog the defaults are checked against.
var oneServer = config.Facts{
	Servers:   []string{"go_grpc"},
	Scenarios: []string{"complex_proto", "string_10B"},
}

// twoServers also knows "other", for the GRPC_BENCHMARKS lists.
var twoServers = config.Facts{
	Servers:   []string{"go_grpc", "other"},
	Scenarios: []string{"complex_proto", "string_10B"},
}

// on is the facts with an engine of n CPUs and 24 GiB (0 CPUs: no engine
// figures).
func on(f config.Facts, n int) config.Facts {
	f.HostCPUs = n
	if n > 0 {
		f.HostMemory = 24 << 30
	}
	return f
}

// configErrors flattens an error returned by Parse or Validate into the
// *config.Error values it carries, failing the test on anything else.
func configErrors(t *testing.T, err error) []*config.Error {
	t.Helper()
	var leaves []error
	var walk func(error)
	walk = func(e error) {
		if joined, ok := e.(interface{ Unwrap() []error }); ok {
			for _, inner := range joined.Unwrap() {
				walk(inner)
			}
			return
		}
		leaves = append(leaves, e)
	}
	walk(err)
	var out []*config.Error
	for _, leaf := range leaves {
		var ce *config.Error
		if !errors.As(leaf, &ce) {
			t.Errorf("error %q (%T) is not a *config.Error", leaf, leaf)
			continue
		}
		out = append(out, ce)
	}
	return out
}

// checkRefused asserts that err holds exactly one *config.Error, for variable
// name and value, and that the message a user reads names the variable.
func checkRefused(t *testing.T, err error, name, value string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error for %s=%q, got nil", name, value)
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("errors.As(%q, *config.Error) = false", err)
	}
	if ce.Var != name {
		t.Errorf("Error.Var = %q, want %q", ce.Var, name)
	}
	if ce.Value != value {
		t.Errorf("Error.Value = %q, want %q", ce.Value, value)
	}
	if ce.Allowed == "" {
		t.Errorf("Error.Allowed is empty for %s", name)
	}
	if ce.Reason == "" {
		t.Errorf("Error.Reason is empty for %s", name)
	}
	msg := err.Error()
	if !strings.Contains(msg, name) {
		t.Errorf("err.Error() = %q does not name %s", msg, name)
	}
	if !strings.Contains(msg, value) {
		t.Errorf("err.Error() = %q does not show the value %q", msg, value)
	}
	if all := configErrors(t, err); len(all) != 1 {
		var vars []string
		for _, e := range all {
			vars = append(vars, e.Var)
		}
		t.Errorf("got %d errors (%v), want exactly one for %s", len(all), vars, name)
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := config.Parse(map[string]string{}, testTools)
	if err != nil {
		t.Fatalf("Parse(empty) error: %v", err)
	}
	want := config.Config{
		Duration:     16 * time.Second,
		Warmup:       5 * time.Second,
		Rounds:       config.RoundCount{N: 4},
		Margin:       0.05,
		ServerCPUs:   config.CPUList{1},
		ServerRAM:    512 * 1024 * 1024,
		Connections:  50,
		Concurrency:  1000,
		QPS:          0,
		Arrivals:     "constant",
		ClientCPUs:   config.ClientCPUs{Auto: true},
		Scenarios:    config.Names{"complex_proto"},
		ImageName:    "grpc_bench",
		ResultsDir:   "results",
		ReadyTimeout: 60 * time.Second,
		LoadTool:     "ghz",
		CapacityTool: "h2",
		BuildRAM:     config.AutoBytes{Auto: true},
		BuildCPUs:    config.ClientCPUs{Auto: true},
		BuildStall:   30 * time.Minute,
		BuildTimeout: 2 * time.Hour,
		TLS:          config.Names{"off"},
	}
	if len(cfg.Benchmarks) != 0 {
		t.Errorf("Benchmarks = %q, want none (all servers)", cfg.Benchmarks)
	}
	cfg.Benchmarks = nil
	got, exp := reflect.ValueOf(cfg), reflect.ValueOf(want)
	for i := 0; i < got.NumField(); i++ {
		if f := got.Type().Field(i); f.IsExported() && !reflect.DeepEqual(got.Field(i).Interface(), exp.Field(i).Interface()) {
			t.Errorf("Parse(empty).%s = %v, want %v", f.Name, got.Field(i), exp.Field(i))
		}
	}
	if int64(cfg.ServerRAM) != 536870912 {
		t.Errorf("ServerRAM = %d bytes, want 536870912 (512 MiB)", int64(cfg.ServerRAM))
	}
	if err := cfg.Validate(on(oneServer, 2)); err != nil {
		t.Errorf("Validate(defaults, 2 CPUs) = %v, want nil", err)
	}
	if err := cfg.Validate(on(oneServer, 0)); err != nil {
		t.Errorf("Validate(defaults, engine not asked) = %v, want nil", err)
	}
	if got := cfg.Servers(oneServer.Servers); !slices.Equal(got, oneServer.Servers) {
		t.Errorf("Servers() with no GRPC_BENCHMARKS = %q, want the catalog %q", got, oneServer.Servers)
	}
}

func TestParseEmptyValueMeansDefault(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_BENCHMARK_DURATION": "", "GRPC_RESULTS_DIR": ""}, testTools)
	if err != nil {
		t.Fatalf("Parse error: %v", err)
	}
	if cfg.Duration != 16*time.Second || cfg.ResultsDir != "results" {
		t.Errorf("empty values gave Duration=%v ResultsDir=%q, want the defaults 16s and results", cfg.Duration, cfg.ResultsDir)
	}
}

func TestParseAccepted(t *testing.T) {
	tests := []struct {
		name  string
		vars  map[string]string
		check func(config.Config) bool
		want  string
	}{
		{"server cpus 0.5", map[string]string{"GRPC_SERVER_CPUS": "0.5"},
			func(c config.Config) bool { return slices.Equal(c.ServerCPUs, config.CPUList{0.5}) }, "ServerCPUs=0.5"},
		{"server cpus 1.5", map[string]string{"GRPC_SERVER_CPUS": "1.5"},
			func(c config.Config) bool { return slices.Equal(c.ServerCPUs, config.CPUList{1.5}) }, "ServerCPUs=1.5"},
		{"client cpus 0.5", map[string]string{"GRPC_CLIENT_CPUS": "0.5"},
			func(c config.Config) bool { return c.ClientCPUs == config.ClientCPUs{CPUs: 0.5} }, "ClientCPUs=0.5"},
		{"client cpus 1.5", map[string]string{"GRPC_CLIENT_CPUS": " 1.5 "},
			func(c config.Config) bool { return c.ClientCPUs == config.ClientCPUs{CPUs: 1.5} }, "ClientCPUs=1.5"},
		{"server cpus at the engine's count", map[string]string{"GRPC_SERVER_CPUS": "2"},
			func(c config.Config) bool { return slices.Equal(c.ServerCPUs, config.CPUList{2}) }, "ServerCPUs=2"},
		{"ram 1g", map[string]string{"GRPC_SERVER_RAM": "1g"},
			func(c config.Config) bool { return c.ServerRAM == 1<<30 }, "ServerRAM=1073741824"},
		{"ram 2048m", map[string]string{"GRPC_SERVER_RAM": "2048m"},
			func(c config.Config) bool { return c.ServerRAM == 2048<<20 }, "ServerRAM=2147483648"},
		{"ram 1536m", map[string]string{"GRPC_SERVER_RAM": "1536m"},
			func(c config.Config) bool { return c.ServerRAM == 1536<<20 }, "ServerRAM=1610612736"},
		{"ram 64m is the minimum", map[string]string{"GRPC_SERVER_RAM": "64m"},
			func(c config.Config) bool { return c.ServerRAM == config.MinServerRAM }, "ServerRAM=67108864"},
		{"one benchmark", map[string]string{"GRPC_BENCHMARKS": "go_grpc"},
			func(c config.Config) bool { return slices.Equal(c.Benchmarks, config.Names{"go_grpc"}) }, "Benchmarks=[go_grpc]"},
		{"comma and space list", map[string]string{"GRPC_BENCHMARKS": "go_grpc, other"},
			func(c config.Config) bool { return slices.Equal(c.Benchmarks, config.Names{"go_grpc", "other"}) }, "Benchmarks=[go_grpc other]"},
		{"comma list", map[string]string{"GRPC_BENCHMARKS": "other,go_grpc"},
			func(c config.Config) bool { return slices.Equal(c.Benchmarks, config.Names{"other", "go_grpc"}) }, "Benchmarks=[other go_grpc]"},
		{"space list", map[string]string{"GRPC_BENCHMARKS": "go_grpc other"},
			func(c config.Config) bool { return slices.Equal(c.Benchmarks, config.Names{"go_grpc", "other"}) }, "Benchmarks=[go_grpc other]"},
		{"connections equal to concurrency", map[string]string{"GRPC_CLIENT_CONNECTIONS": "8", "GRPC_CLIENT_CONCURRENCY": "8"},
			func(c config.Config) bool { return c.Connections == 8 && c.Concurrency == 8 }, "Connections=8 Concurrency=8"},
		{"largest concurrency", map[string]string{"GRPC_CLIENT_CONCURRENCY": "100000"},
			func(c config.Config) bool { return c.Concurrency == config.MaxConcurrency }, "Concurrency=100000"},
		{"qps", map[string]string{"GRPC_CLIENT_QPS": "5000"},
			func(c config.Config) bool { return c.QPS == 5000 }, "QPS=5000"},
		{"durations", map[string]string{"GRPC_BENCHMARK_DURATION": "1m", "GRPC_BENCHMARK_WARMUP": "1500ms", "GRPC_SERVER_READY_TIMEOUT": "2m30s"},
			func(c config.Config) bool {
				return c.Duration == time.Minute && c.Warmup == 1500*time.Millisecond && c.ReadyTimeout == 150*time.Second
			}, "Duration=1m Warmup=1500ms ReadyTimeout=2m30s"},
		{"other scenario", map[string]string{"GRPC_REQUEST_SCENARIO": "string_10B"},
			func(c config.Config) bool { return slices.Equal(c.Scenarios, config.Names{"string_10B"}) }, "Scenarios=[string_10B]"},
		{"lists", map[string]string{"GRPC_REQUEST_SCENARIO": "complex_proto,string_10B", "GRPC_SERVER_CPUS": "1, 2", "GRPC_LOAD_PROFILE": "1a,3b"},
			func(c config.Config) bool {
				return slices.Equal(c.Scenarios, config.Names{"complex_proto", "string_10B"}) && slices.Equal(c.ServerCPUs, config.CPUList{1, 2}) &&
					slices.Equal(c.LoadProfiles, config.Names{"1a", "3b"})
			}, "two of each"},
		{"rounds", map[string]string{"GRPC_BENCHMARK_ROUNDS": "10"},
			func(c config.Config) bool { return c.Rounds == config.RoundCount{N: 10} }, "Rounds=10"},
		{"auto rounds and a seed", map[string]string{"GRPC_BENCHMARK_ROUNDS": "auto", "GRPC_BENCHMARK_SEED": "42", "GRPC_BENCHMARK_BUDGET": "30m"},
			func(c config.Config) bool {
				seed, ok := c.SeedValue()
				return c.Rounds.Auto && seed == 42 && ok && c.Budget == 30*time.Minute && c.RoundDuration() == 5333*time.Millisecond
			}, "auto, seed 42, budget 30m"},
		{"capacity off", map[string]string{"GRPC_CAPACITY_TOOL": "off"},
			func(c config.Config) bool { return c.CapacityTool == config.CapacityOff }, "CapacityTool=off"},
		{"image name with registry path", map[string]string{"GRPC_IMAGE_NAME": "registry.local/team/grpc-bench_x"},
			func(c config.Config) bool { return c.ImageName == "registry.local/team/grpc-bench_x" }, "ImageName=registry.local/team/grpc-bench_x"},
		{"mirror folder", map[string]string{"GRPC_SOURCE_MIRROR": "."},
			func(c config.Config) bool { return c.SourceMirror == "." }, "SourceMirror=."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse(tt.vars, testTools)
			if err != nil {
				t.Fatalf("Parse(%v) error: %v", tt.vars, err)
			}
			if !tt.check(cfg) {
				t.Errorf("Parse(%v) = %+v, want %s", tt.vars, cfg, tt.want)
			}
			if err := cfg.Validate(on(twoServers, 2)); err != nil {
				t.Errorf("Validate = %v, want nil", err)
			}
		})
	}
}

func TestServersFollowsBenchmarks(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_BENCHMARKS": "other, go_grpc"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Servers(twoServers.Servers), []string{"other", "go_grpc"}; !slices.Equal(got, want) {
		t.Errorf("Servers() = %q, want %q", got, want)
	}
}

func TestParseRefusesUnparsable(t *testing.T) {
	tests := []struct{ name, value string }{
		{"GRPC_BENCHMARK_DURATION", "abc"},
		{"GRPC_BENCHMARK_DURATION", "20"},
		{"GRPC_BENCHMARK_WARMUP", "5 seconds"},
		{"GRPC_SERVER_READY_TIMEOUT", "soon"},
		{"GRPC_SERVER_CPUS", "one"},
		{"GRPC_SERVER_CPUS", "NaN"},
		{"GRPC_CLIENT_CPUS", "x"},
		{"GRPC_CLIENT_CPUS", "Inf"},
		{"GRPC_SERVER_RAM", "lots"},
		{"GRPC_SERVER_RAM", "512x"},
		{"GRPC_SERVER_RAM", "-1m"},
		{"GRPC_CLIENT_CONNECTIONS", "fifty"},
		{"GRPC_CLIENT_CONNECTIONS", "2.5"},
		{"GRPC_CLIENT_CONCURRENCY", "1e3"},
		{"GRPC_CLIENT_CONCURRENCY", "many"},
		{"GRPC_CLIENT_QPS", "1.5"},
		{"GRPC_CLIENT_QPS", "max"},
		{"GRPC_BENCHMARK_ROUNDS", "many"},
		{"GRPC_BENCHMARK_ROUNDS", "2.5"},
		{"GRPC_BENCHMARK_BUDGET", "an hour"},
		{"GRPC_EQUIVALENCE_MARGIN", "5%"},
		{"GRPC_LOAD_RATES", "fast"},
		{"GRPC_LOAD_RATES", "25%,5000"},
		{"GRPC_LOAD_RATES", "x%"},
		{"GRPC_LATENCY_SLO", "10ms"},
		{"GRPC_LATENCY_SLO", "p99<soon"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			_, err := config.Parse(map[string]string{tt.name: tt.value}, testTools)
			checkRefused(t, err, tt.name, tt.value)
		})
	}
}

func TestParseReportsEveryUnparsableVariable(t *testing.T) {
	vars := map[string]string{
		"GRPC_BENCHMARK_DURATION": "forever",
		"GRPC_SERVER_CPUS":        "all",
		"GRPC_SERVER_RAM":         "plenty",
		"GRPC_CLIENT_QPS":         "fast",
	}
	_, err := config.Parse(vars, testTools)
	if err == nil {
		t.Fatal("Parse with four bad variables returned nil")
	}
	got := map[string]string{}
	for _, ce := range configErrors(t, err) {
		got[ce.Var] = ce.Value
	}
	if !reflect.DeepEqual(got, vars) {
		t.Errorf("errors name %v, want %v", got, vars)
	}
	for name := range vars {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("err.Error() does not mention %s:\n%s", name, err)
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	tests := []struct {
		name      string
		vars      map[string]string
		hostCPUs  int
		wantVar   string
		wantValue string
	}{
		{"zero duration", map[string]string{"GRPC_BENCHMARK_DURATION": "0s"}, 2, "GRPC_BENCHMARK_DURATION", "0s"},
		{"negative duration", map[string]string{"GRPC_BENCHMARK_DURATION": "-20s"}, 2, "GRPC_BENCHMARK_DURATION", "-20s"},
		{"zero warmup", map[string]string{"GRPC_BENCHMARK_WARMUP": "0"}, 2, "GRPC_BENCHMARK_WARMUP", "0"},
		{"negative warmup", map[string]string{"GRPC_BENCHMARK_WARMUP": "-5s"}, 2, "GRPC_BENCHMARK_WARMUP", "-5s"},
		{"zero ready timeout", map[string]string{"GRPC_SERVER_READY_TIMEOUT": "0s"}, 2, "GRPC_SERVER_READY_TIMEOUT", "0s"},
		{"negative ready timeout", map[string]string{"GRPC_SERVER_READY_TIMEOUT": "-30s"}, 2, "GRPC_SERVER_READY_TIMEOUT", "-30s"},
		{"zero server cpus", map[string]string{"GRPC_SERVER_CPUS": "0"}, 2, "GRPC_SERVER_CPUS", "0"},
		{"negative server cpus", map[string]string{"GRPC_SERVER_CPUS": "-1"}, 2, "GRPC_SERVER_CPUS", "-1"},
		{"server cpus below what docker enforces", map[string]string{"GRPC_SERVER_CPUS": "0.001"}, 2, "GRPC_SERVER_CPUS", "0.001"},
		{"zero client cpus", map[string]string{"GRPC_CLIENT_CPUS": "0"}, 2, "GRPC_CLIENT_CPUS", "0"},
		{"negative client cpus", map[string]string{"GRPC_CLIENT_CPUS": "-0.5"}, 2, "GRPC_CLIENT_CPUS", "-0.5"},
		{"server cpus above the engine", map[string]string{"GRPC_SERVER_CPUS": "3"}, 2, "GRPC_SERVER_CPUS", "3"},
		{"server cpus just above the engine", map[string]string{"GRPC_SERVER_CPUS": "2.5"}, 2, "GRPC_SERVER_CPUS", "2.5"},
		{"client cpus above the engine", map[string]string{"GRPC_CLIENT_CPUS": "16"}, 8, "GRPC_CLIENT_CPUS", "16"},
		{"ram below 64m", map[string]string{"GRPC_SERVER_RAM": "63m"}, 2, "GRPC_SERVER_RAM", "63m"},
		{"ram in bytes below 64m", map[string]string{"GRPC_SERVER_RAM": "1000000"}, 2, "GRPC_SERVER_RAM", "1000000"},
		{"ram zero", map[string]string{"GRPC_SERVER_RAM": "0"}, 2, "GRPC_SERVER_RAM", "0"},
		{"zero connections", map[string]string{"GRPC_CLIENT_CONNECTIONS": "0"}, 2, "GRPC_CLIENT_CONNECTIONS", "0"},
		{"negative connections", map[string]string{"GRPC_CLIENT_CONNECTIONS": "-1"}, 2, "GRPC_CLIENT_CONNECTIONS", "-1"},
		{"zero concurrency", map[string]string{"GRPC_CLIENT_CONCURRENCY": "0"}, 2, "GRPC_CLIENT_CONCURRENCY", "0"},
		{"concurrency above the maximum", map[string]string{"GRPC_CLIENT_CONCURRENCY": "100001"}, 2, "GRPC_CLIENT_CONCURRENCY", "100001"},
		{"more connections than concurrency", map[string]string{"GRPC_CLIENT_CONNECTIONS": "51", "GRPC_CLIENT_CONCURRENCY": "50"}, 2, "GRPC_CLIENT_CONNECTIONS", "51"},
		{"negative qps", map[string]string{"GRPC_CLIENT_QPS": "-1"}, 2, "GRPC_CLIENT_QPS", "-1"},
		{"unknown arrivals", map[string]string{"GRPC_LOAD_ARRIVALS": "bursty"}, 2, "GRPC_LOAD_ARRIVALS", "bursty"},
		{"unknown scenario", map[string]string{"GRPC_REQUEST_SCENARIO": "huge_proto"}, 2, "GRPC_REQUEST_SCENARIO", "huge_proto"},
		{"unknown server", map[string]string{"GRPC_BENCHMARKS": "go_grpc, nope"}, 2, "GRPC_BENCHMARKS", "go_grpc, nope"},
		{"image name with upper case and a space", map[string]string{"GRPC_IMAGE_NAME": "Grpc Bench"}, 2, "GRPC_IMAGE_NAME", "Grpc Bench"},
		{"image name with a tag", map[string]string{"GRPC_IMAGE_NAME": "grpc_bench:latest"}, 2, "GRPC_IMAGE_NAME", "grpc_bench:latest"},
		{"image name starting with a dash", map[string]string{"GRPC_IMAGE_NAME": "-grpc"}, 2, "GRPC_IMAGE_NAME", "-grpc"},
		{"blank results dir", map[string]string{"GRPC_RESULTS_DIR": "   "}, 2, "GRPC_RESULTS_DIR", "   "},
		{"a decimal comma is a list, here with 5 CPUs", map[string]string{"GRPC_SERVER_CPUS": "1,5"}, 2, "GRPC_SERVER_CPUS", "1,5"},
		{"server cpus twice", map[string]string{"GRPC_SERVER_CPUS": "1,1"}, 2, "GRPC_SERVER_CPUS", "1,1"},
		{"scenario twice", map[string]string{"GRPC_REQUEST_SCENARIO": "string_10B,string_10B"}, 2, "GRPC_REQUEST_SCENARIO", "string_10B,string_10B"},
		{"no scenario", map[string]string{"GRPC_REQUEST_SCENARIO": " , "}, 2, "GRPC_REQUEST_SCENARIO", " , "},
		{"server twice", map[string]string{"GRPC_BENCHMARKS": "go_grpc go_grpc"}, 2, "GRPC_BENCHMARKS", "go_grpc go_grpc"},
		{"build memory below 512m", map[string]string{"GRPC_BUILD_RAM": "256m"}, 2, "GRPC_BUILD_RAM", "256m"},
		{"build memory above the host's", map[string]string{"GRPC_BUILD_RAM": "64g"}, 2, "GRPC_BUILD_RAM", "64g"},
		{"build cpus above the engine", map[string]string{"GRPC_BUILD_CPUS": "3"}, 2, "GRPC_BUILD_CPUS", "3"},
		{"zero build cpus", map[string]string{"GRPC_BUILD_CPUS": "0"}, 2, "GRPC_BUILD_CPUS", "0"},
		{"a wildcard server address", map[string]string{"GRPC_CLIENT_DOCKER_HOST": "ssh://bench@client", "GRPC_SERVER_ADDRESS": "0.0.0.0"}, 2, "GRPC_SERVER_ADDRESS", "0.0.0.0"},
		{"an IPv6 wildcard server address", map[string]string{"GRPC_CLIENT_DOCKER_HOST": "ssh://bench@client", "GRPC_SERVER_ADDRESS": "[::]:50051"}, 2, "GRPC_SERVER_ADDRESS", "[::]:50051"},
		{"a loopback server address", map[string]string{"GRPC_CLIENT_DOCKER_HOST": "ssh://bench@client", "GRPC_SERVER_ADDRESS": "127.0.0.1:50051"}, 2, "GRPC_SERVER_ADDRESS", "127.0.0.1:50051"},
		{"an IPv6 loopback server address", map[string]string{"GRPC_CLIENT_DOCKER_HOST": "ssh://bench@client", "GRPC_SERVER_ADDRESS": "::1"}, 2, "GRPC_SERVER_ADDRESS", "::1"},
		{"a stall limit of seconds", map[string]string{"GRPC_BUILD_STALL": "30s"}, 2, "GRPC_BUILD_STALL", "30s"},
		{"a stall limit of a day", map[string]string{"GRPC_BUILD_STALL": "24h"}, 2, "GRPC_BUILD_STALL", "24h"},
		{"a build time limit of seconds", map[string]string{"GRPC_BUILD_TIMEOUT": "30s"}, 2, "GRPC_BUILD_TIMEOUT", "30s"},
		{"a build time limit of two days", map[string]string{"GRPC_BUILD_TIMEOUT": "48h"}, 2, "GRPC_BUILD_TIMEOUT", "48h"},
		{"a blank server list", map[string]string{"GRPC_BENCHMARKS": " "}, 2, "GRPC_BENCHMARKS", " "},
		{"a server list of commas", map[string]string{"GRPC_BENCHMARKS": ","}, 2, "GRPC_BENCHMARKS", ","},
		{"a blank profile list", map[string]string{"GRPC_LOAD_PROFILE": " , "}, 2, "GRPC_LOAD_PROFILE", " , "},
		{"a scenario list of commas", map[string]string{"GRPC_REQUEST_SCENARIO": ","}, 2, "GRPC_REQUEST_SCENARIO", ","},
		{"an unknown profile in a list", map[string]string{"GRPC_LOAD_PROFILE": "1a,4c"}, 2, "GRPC_LOAD_PROFILE", "1a,4c"},
		{"zero rounds", map[string]string{"GRPC_BENCHMARK_ROUNDS": "0"}, 2, "GRPC_BENCHMARK_ROUNDS", "0"},
		{"too many rounds", map[string]string{"GRPC_BENCHMARK_ROUNDS": "101"}, 2, "GRPC_BENCHMARK_ROUNDS", "101"},
		{"auto's first look shorter than the stats period", map[string]string{"GRPC_BENCHMARK_DURATION": "2s", "GRPC_BENCHMARK_ROUNDS": "auto"}, 2, "GRPC_BENCHMARK_DURATION", "2s"},
		{"a seed that is not a number", map[string]string{"GRPC_BENCHMARK_SEED": "abc"}, 2, "GRPC_BENCHMARK_SEED", "abc"},
		{"seed zero", map[string]string{"GRPC_BENCHMARK_SEED": "0"}, 2, "GRPC_BENCHMARK_SEED", "0"},
		{"a negative budget", map[string]string{"GRPC_BENCHMARK_BUDGET": "-1m"}, 2, "GRPC_BENCHMARK_BUDGET", "-1m"},
		{"margin of 0.1%", map[string]string{"GRPC_EQUIVALENCE_MARGIN": "0.001"}, 2, "GRPC_EQUIVALENCE_MARGIN", "0.001"},
		{"margin NaN", map[string]string{"GRPC_EQUIVALENCE_MARGIN": "NaN"}, 2, "GRPC_EQUIVALENCE_MARGIN", "NaN"},
		{"unknown capacity tool", map[string]string{"GRPC_CAPACITY_TOOL": "h2load"}, 2, "GRPC_CAPACITY_TOOL", "h2load"},
		{"a nanosecond", map[string]string{"GRPC_BENCHMARK_DURATION": "1ns"}, 2, "GRPC_BENCHMARK_DURATION", "1ns"},
		{"a thousand hours", map[string]string{"GRPC_BENCHMARK_DURATION": "1000h"}, 2, "GRPC_BENCHMARK_DURATION", "1000h"},
		{"rounds shorter than the stats period", map[string]string{"GRPC_BENCHMARK_DURATION": "5s", "GRPC_BENCHMARK_ROUNDS": "6"}, 2, "GRPC_BENCHMARK_DURATION", "5s"},
		{"warm-up of a day", map[string]string{"GRPC_BENCHMARK_WARMUP": "24h"}, 2, "GRPC_BENCHMARK_WARMUP", "24h"},
		{"a rate no engine schedules", map[string]string{"GRPC_CLIENT_QPS": "2000000000"}, 2, "GRPC_CLIENT_QPS", "2000000000"},
		{"300 characters of image name", map[string]string{"GRPC_IMAGE_NAME": strings.Repeat("a", 300)}, 2, "GRPC_IMAGE_NAME", strings.Repeat("a", 300)},
		{"ram above the host's", map[string]string{"GRPC_SERVER_RAM": "64g"}, 2, "GRPC_SERVER_RAM", "64g"},
		{"mirror that does not exist", map[string]string{"GRPC_SOURCE_MIRROR": "/nonexistent/sources"}, 2, "GRPC_SOURCE_MIRROR", "/nonexistent/sources"},
		{"a rate of zero", map[string]string{"GRPC_LOAD_RATES": "0,100"}, 2, "GRPC_LOAD_RATES", "0,100"},
		{"a share above 200%", map[string]string{"GRPC_LOAD_RATES": "50%,250%"}, 2, "GRPC_LOAD_RATES", "50%,250%"},
		{"a share of 0%", map[string]string{"GRPC_LOAD_RATES": "0%"}, 2, "GRPC_LOAD_RATES", "0%"},
		{"a rate twice", map[string]string{"GRPC_LOAD_RATES": "25%,25%"}, 2, "GRPC_LOAD_RATES", "25%,25%"},
		{"a blank rate list", map[string]string{"GRPC_LOAD_RATES": " , "}, 2, "GRPC_LOAD_RATES", " , "},
		{"rates beside a QPS", map[string]string{"GRPC_LOAD_RATES": "1000", "GRPC_CLIENT_QPS": "500"}, 2, "GRPC_LOAD_RATES", "1000"},
		{"an objective on an unkept percentile", map[string]string{"GRPC_LATENCY_SLO": "p42<10ms"}, 2, "GRPC_LATENCY_SLO", "p42<10ms"},
		{"an objective of no time", map[string]string{"GRPC_LATENCY_SLO": "p99<0s"}, 2, "GRPC_LATENCY_SLO", "p99<0s"},
		{"an objective's search beside a QPS", map[string]string{"GRPC_LATENCY_SLO": "p99<5ms", "GRPC_CLIENT_QPS": "500"}, 2, "GRPC_LATENCY_SLO", "p99<5ms"},
		{"mirror that is a file", map[string]string{"GRPC_SOURCE_MIRROR": "config_test.go"}, 2, "GRPC_SOURCE_MIRROR", "config_test.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse(tt.vars, testTools)
			if err != nil {
				t.Fatalf("Parse(%v) error: %v", tt.vars, err)
			}
			checkRefused(t, cfg.Validate(on(twoServers, tt.hostCPUs)), tt.wantVar, tt.wantValue)
		})
	}
}

// TestDefaultsOnA4GiBHost: the defaults pass on a host of 2 cores and 4
// GiB (Docker Desktop's VM may be no larger), whose builds then get 3
// GiB a step; a larger host's get 6 GiB, and a size asked for beyond the
// host is refused.
func TestDefaultsOnA4GiBHost(t *testing.T) {
	cfg, err := config.Parse(map[string]string{}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	small := oneServer
	small.HostCPUs, small.ClientCPUs, small.HostMemory = 2, 2, 4<<30
	if err := cfg.Validate(small); err != nil {
		t.Errorf("the defaults on a 4 GiB host: %v", err)
	}
	for memory, want := range map[int64]int64{4 << 30: 3 << 30, 24 << 30: 6 << 30, 1 << 30: 512 << 20, 0: 6 << 30} {
		if got := cfg.BuildRAMLimit(memory); got != want {
			t.Errorf("GRPC_BUILD_RAM=auto on a host of %d MiB: %d MiB, want %d MiB", memory>>20, got>>20, want>>20)
		}
	}
	fixed, err := config.Parse(map[string]string{"GRPC_BUILD_RAM": "6g"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	if got := fixed.BuildRAMLimit(4 << 30); got != 6<<30 {
		t.Errorf("GRPC_BUILD_RAM=6g: %d MiB, want 6144", got>>20)
	}
	if errs := configErrors(t, fixed.Validate(small)); len(errs) != 1 || errs[0].Var != "GRPC_BUILD_RAM" {
		t.Errorf("GRPC_BUILD_RAM=6g on a 4 GiB host: %v, want it refused", errs)
	}
}

func TestValidateUnknownServerNamesIt(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_BENCHMARKS": "go_grpc nope"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate(on(twoServers, 2))
	if err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Validate = %v, want a message naming the server \"nope\"", err)
	}
	if err != nil && strings.Contains(err.Error(), `no server "go_grpc"`) {
		t.Errorf("Validate refused the known server go_grpc: %v", err)
	}
}

func TestValidateCPUsWithoutEngineCount(t *testing.T) {
	for _, vars := range []map[string]string{
		{"GRPC_SERVER_CPUS": "3"},
		{"GRPC_SERVER_CPUS": "64", "GRPC_CLIENT_CPUS": "32.5"},
	} {
		cfg, err := config.Parse(vars, testTools)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(on(twoServers, 0)); err != nil {
			t.Errorf("Validate(%v, hostCPUs 0) = %v, want nil: the engine has not been asked", vars, err)
		}
		if err := cfg.Validate(on(twoServers, 2)); err == nil {
			t.Errorf("Validate(%v, hostCPUs 2) = nil, want an error", vars)
		}
	}
	// The engine-independent checks still apply.
	cfg, err := config.Parse(map[string]string{"GRPC_SERVER_CPUS": "0"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	checkRefused(t, cfg.Validate(on(twoServers, 0)), "GRPC_SERVER_CPUS", "0")
}

func TestValidateReportsEveryBadVariable(t *testing.T) {
	cfg, err := config.Parse(map[string]string{
		"GRPC_BENCHMARK_DURATION": "0s",
		"GRPC_SERVER_CPUS":        "4",
		"GRPC_SERVER_RAM":         "32m",
		"GRPC_CLIENT_QPS":         "-10",
		"GRPC_REQUEST_SCENARIO":   "nope",
		"GRPC_IMAGE_NAME":         "Grpc Bench",
		"GRPC_BENCHMARKS":         "missing",
	}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate(on(twoServers, 2))
	if err == nil {
		t.Fatal("Validate with seven bad variables returned nil")
	}
	got := map[string]string{}
	for _, ce := range configErrors(t, err) {
		got[ce.Var] = ce.Value
	}
	want := map[string]string{
		"GRPC_BENCHMARK_DURATION": "0s",
		"GRPC_SERVER_CPUS":        "4",
		"GRPC_SERVER_RAM":         "32m",
		"GRPC_CLIENT_QPS":         "-10",
		"GRPC_REQUEST_SCENARIO":   "nope",
		"GRPC_IMAGE_NAME":         "Grpc Bench",
		"GRPC_BENCHMARKS":         "missing",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors name\n%v\nwant\n%v", got, want)
	}
	for name := range want {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("err.Error() does not mention %s:\n%s", name, err)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	withReason := &config.Error{Var: "GRPC_SERVER_RAM", Value: "32m", Allowed: "at least 64m", Reason: "below 64m"}
	if got, want := withReason.Error(), `GRPC_SERVER_RAM="32m": below 64m; allowed: at least 64m`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	without := &config.Error{Var: "GRPC_CLIENT_QPS", Value: "x", Allowed: "a whole number"}
	if got, want := without.Error(), `GRPC_CLIENT_QPS="x" is not allowed; allowed: a whole number`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestLoadProfileWithAnExplicitShapeIsRefused(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_LOAD_PROFILE": "2b", "GRPC_CLIENT_CONNECTIONS": "5"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	checkRefused(t, cfg.Validate(on(oneServer, 2)), "GRPC_LOAD_PROFILE", "2b")
}

func TestUnknownToolAndProfileAreRefused(t *testing.T) {
	for name, value := range map[string]string{"GRPC_LOAD_TOOL": "wrk", "GRPC_LOAD_PROFILE": "4c"} {
		cfg, err := config.Parse(map[string]string{name: value}, testTools)
		if err != nil {
			t.Fatal(err)
		}
		checkRefused(t, cfg.Validate(on(oneServer, 2)), name, value)
	}
}

func TestSettings(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_SERVER_CPUS": "1.5", "GRPC_BENCHMARKS": "go_grpc,other"}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{
		{"GRPC_BENCHMARK_DURATION", "16s"},
		{"GRPC_BENCHMARK_WARMUP", "5s"},
		{"GRPC_BENCHMARK_ROUNDS", "4"},
		{"GRPC_BENCHMARK_SEED", ""},
		{"GRPC_BENCHMARK_BUDGET", "0s"},
		{"GRPC_EQUIVALENCE_MARGIN", "0.05"},
		{"GRPC_SERVER_CPUS", "1.5"},
		{"GRPC_SERVER_RAM", "512m"},
		{"GRPC_CLIENT_CONNECTIONS", "50"},
		{"GRPC_CLIENT_CONCURRENCY", "1000"},
		{"GRPC_CLIENT_QPS", "0"},
		{"GRPC_LOAD_ARRIVALS", "constant"},
		{"GRPC_CLIENT_CPUS", "auto"},
		{"GRPC_REQUEST_SCENARIO", "complex_proto"},
		{"GRPC_IMAGE_NAME", "grpc_bench"},
		{"GRPC_BENCHMARKS", "go_grpc,other"},
		{"GRPC_RESULTS_DIR", "results"},
		{"GRPC_SERVER_READY_TIMEOUT", "60s"},
		{"GRPC_LOAD_TOOL", "ghz"},
		{"GRPC_CAPACITY_TOOL", "h2"},
		{"GRPC_SERVER_DOCKER_HOST", ""},
		{"GRPC_CLIENT_DOCKER_HOST", ""},
		{"GRPC_SERVER_ADDRESS", ""},
		{"GRPC_SOURCE_MIRROR", ""},
		{"GRPC_LOAD_PROFILE", ""},
		{"GRPC_BUILD_RAM", "auto"},
		{"GRPC_BUILD_CPUS", "auto"},
		{"GRPC_BUILD_STALL", "30m"},
		{"GRPC_BUILD_TIMEOUT", "2h"},
		{"GRPC_LOAD_RATES", ""},
		{"GRPC_LATENCY_SLO", ""},
		{"GRPC_TLS", "off"},
	}
	got := cfg.All()
	if len(got) != len(want) {
		t.Fatalf("All() has %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, s := range got {
		if s.Name != want[i][0] || s.Value != want[i][1] {
			t.Errorf("All()[%d] = %s=%s, want %s=%s", i, s.Name, s.Value, want[i][0], want[i][1])
		}
		if s.Help == "" {
			t.Errorf("All()[%d] (%s) has no help text", i, s.Name)
		}
	}
	defaults := map[string]string{
		"GRPC_BENCHMARK_DURATION": "16s",
		"GRPC_SERVER_RAM":         "512m",
		"GRPC_SERVER_CPUS":        "1",
		"GRPC_BENCHMARKS":         "",
	}
	for _, s := range got {
		if d, ok := defaults[s.Name]; ok && s.Default != d {
			t.Errorf("%s Default = %q, want %q", s.Name, s.Default, d)
		}
	}
}

// unsetenv removes name from the process environment for the test and puts
// back whatever was there afterwards.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "")
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}

func TestEnvironment(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".env")
	file := "# comment\nGRPC_SERVER_CPUS=1.5\nGRPC_CLIENT_QPS=100\nGRPCBENCH_TEST_FILE_ONLY=from-file\n"
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	unsetenv(t, "GRPC_SERVER_CPUS")
	unsetenv(t, "GRPCBENCH_TEST_FILE_ONLY")
	t.Setenv("GRPC_CLIENT_QPS", "200")
	t.Setenv("GRPCBENCH_TEST_PROCESS_ONLY", "from-process")

	vars, err := config.Environment(path)
	if err != nil {
		t.Fatalf("Environment(%s) error: %v", path, err)
	}
	for name, want := range map[string]string{
		"GRPC_SERVER_CPUS":            "1.5",
		"GRPC_CLIENT_QPS":             "200",
		"GRPCBENCH_TEST_FILE_ONLY":    "from-file",
		"GRPCBENCH_TEST_PROCESS_ONLY": "from-process",
	} {
		if got, ok := vars[name]; !ok || got != want {
			t.Errorf("vars[%s] = %q (present %v), want %q", name, got, ok, want)
		}
	}

	cfg, err := config.Load(path, testTools)
	if err != nil {
		t.Fatalf("Load(%s) error: %v", path, err)
	}
	if !slices.Equal(cfg.ServerCPUs, config.CPUList{1.5}) || cfg.QPS != 200 {
		t.Errorf("Load gave ServerCPUs=%v QPS=%d, want 1.5 from the file and 200 from the process", cfg.ServerCPUs, cfg.QPS)
	}
}

func TestEnvironmentMissingFile(t *testing.T) {
	t.Setenv("GRPCBENCH_TEST_PROCESS_ONLY", "still-read")
	for _, path := range []string{filepath.Join(t.TempDir(), "absent.env"), ""} {
		vars, err := config.Environment(path)
		if err != nil {
			t.Errorf("Environment(%q) error: %v, want nil", path, err)
			continue
		}
		if vars["GRPCBENCH_TEST_PROCESS_ONLY"] != "still-read" {
			t.Errorf("Environment(%q) lost the process environment", path)
		}
	}
}

func TestEnvironmentUnreadableFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := config.Environment(dir); err == nil {
		t.Errorf("Environment(directory %s) = nil error, want a read error", dir)
	}
}

func TestLoadRefusesBadFileValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(path, []byte("GRPC_BENCHMARK_WARMUP=later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unsetenv(t, "GRPC_BENCHMARK_WARMUP")
	_, err := config.Load(path, testTools)
	checkRefused(t, err, "GRPC_BENCHMARK_WARMUP", "later")
}

func TestBytesString(t *testing.T) {
	tests := []struct {
		in   config.Bytes
		want string
	}{
		{512 << 20, "512m"},
		{1 << 30, "1g"},
		{2048 << 20, "2g"},
		{1536 << 20, "1536m"},
		{64 << 20, "64m"},
		{3 << 40, "3072g"},
		{1024, "1k"},
		{1536, "1536"},
		{1000, "1000"},
		{1, "1"},
		{0, "0"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Bytes(%d).String() = %q, want %q", int64(tt.in), got, tt.want)
		}
	}
}

func TestBytesRoundTrip(t *testing.T) {
	for _, text := range []string{"512m", "1g", "1536m", "64m", "3k"} {
		var b config.Bytes
		if err := b.UnmarshalText([]byte(text)); err != nil {
			t.Errorf("UnmarshalText(%q) error: %v", text, err)
			continue
		}
		if got := b.String(); got != text {
			t.Errorf("UnmarshalText(%q).String() = %q", text, got)
		}
	}
}

func TestCPUsNanoCPUs(t *testing.T) {
	tests := []struct {
		in   config.CPUs
		want int64
	}{
		{0.5, 500_000_000},
		{1, 1_000_000_000},
		{1.5, 1_500_000_000},
		{0.01, 10_000_000},
		{0.1, 100_000_000},
		{16, 16_000_000_000},
	}
	for _, tt := range tests {
		if got := tt.in.NanoCPUs(); got != tt.want {
			t.Errorf("CPUs(%v).NanoCPUs() = %d, want %d", float64(tt.in), got, tt.want)
		}
	}
}

func TestCPUsCores(t *testing.T) {
	tests := []struct {
		in   config.CPUs
		want int
	}{
		{0.5, 1},
		{1, 1},
		{1.5, 2},
		{0.01, 1},
		{2, 2},
		{2.01, 3},
		{16, 16},
	}
	for _, tt := range tests {
		if got := tt.in.Cores(); got != tt.want {
			t.Errorf("CPUs(%v).Cores() = %d, want %d", float64(tt.in), got, tt.want)
		}
	}
}

func TestCPUsString(t *testing.T) {
	for in, want := range map[config.CPUs]string{0.5: "0.5", 1: "1", 1.5: "1.5", 16: "16"} {
		if got := in.String(); got != want {
			t.Errorf("CPUs(%v).String() = %q, want %q", float64(in), got, want)
		}
	}
}

// TestRulesNameDeclaredVariables keeps the checks and the struct in step:
// a renamed variable must not leave a rule that nothing reaches.
func TestRulesNameDeclaredVariables(t *testing.T) {
	declared := map[string]bool{}
	cfg, err := config.Parse(nil, testTools)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cfg.All() {
		declared[s.Name] = true
	}
	for _, name := range config.RuleNames() {
		if !declared[name] {
			t.Errorf("a rule checks %s, which Config does not declare", name)
		}
	}
}

// testTools stand for the load registry, which config does not import.
var testTools = []config.Tool{{Name: "ghz", Help: "the reference"}, {Name: "h2", Help: "the cheap one", OpenLoop: true}}

// TestToolsComeFromTheCaller: the help lists the tools handed to Parse, and
// a tool not among them is refused naming the setting, the value and the
// tools that are.
func TestToolsComeFromTheCaller(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_LOAD_TOOL": "ghz", "GRPC_CAPACITY_TOOL": "wrk"}, []config.Tool{{Name: "ghz", Help: "one"}, {Name: "x", Help: "two"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cfg.All() {
		if s.Name == "GRPC_LOAD_TOOL" && !strings.HasSuffix(s.Help, "ghz (one) or x (two)") {
			t.Errorf("GRPC_LOAD_TOOL's help %q does not list the tools given", s.Help)
		}
	}
	err = cfg.Validate(on(oneServer, 2))
	var e *config.Error
	if !errors.As(err, &e) || e.Var != "GRPC_CAPACITY_TOOL" || e.Value != "wrk" || !strings.Contains(e.Reason, "known: ghz, x, off") {
		t.Errorf("Validate = %v, want GRPC_CAPACITY_TOOL=wrk refused, naming ghz, x and off", err)
	}
}

// TestOldToolSettingsAreRefused: the settings' names before the load
// tools had their word say what they were renamed to.
func TestOldToolSettingsAreRefused(t *testing.T) {
	for old, current := range map[string]string{"GRPC_LOAD_ENGINE": "GRPC_LOAD_TOOL", "GRPC_CAPACITY_ENGINE": "GRPC_CAPACITY_TOOL"} {
		cfg, err := config.Parse(map[string]string{old: "h2"}, testTools)
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate(on(oneServer, 2))
		checkRefused(t, err, old, "h2")
		if err == nil || !strings.Contains(err.Error(), "renamed to "+current) {
			t.Errorf("%s: %v, want it to say it was renamed to %s", old, err, current)
		}
		if config.Current(old) != current || config.Current(current) != current {
			t.Errorf("Current(%s) = %s, Current(%s) = %s", old, config.Current(old), current, config.Current(current))
		}
	}
}

func TestMisspelledSettingsAreRefused(t *testing.T) {
	cfg, err := config.Parse(map[string]string{
		"GRPC_BENCHMARK_DURATON":       "3s",  // a typo: refused, naming the setting
		"GRPC_TRACE":                   "all", // read by gRPC itself: left alone
		"GRPC_GO_LOG_SEVERITY_LEVEL":   "info",
		"GRPC_SOMETHING_ELSE_ENTIRELY": "x", // nothing like any setting: not ours to judge
		"PATH":                         "/bin",
	}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate(on(oneServer, 2))
	checkRefused(t, err, "GRPC_BENCHMARK_DURATON", "3s")
	if !strings.Contains(err.Error(), "did you mean GRPC_BENCHMARK_DURATION?") {
		t.Errorf("the closest setting is not named: %v", err)
	}
}

func TestDotenvErrorNamesTheLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(path, []byte("# settings\nGRPC_BENCHMARKS=go_grpc\nthis line is no setting\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(path, testTools)
	checkRefused(t, err, path+":3", "this line is no setting")
}

func TestHugeSizesDoNotWrapAround(t *testing.T) {
	_, err := config.Parse(map[string]string{"GRPC_SERVER_RAM": "99999999999g"}, testTools)
	checkRefused(t, err, "GRPC_SERVER_RAM", "99999999999g")
	if !strings.Contains(err.Error(), "too large") {
		t.Errorf("message %q does not say the size is too large", err)
	}
}

func TestResultsDirMustBeWritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(map[string]string{"GRPC_RESULTS_DIR": file}, testTools)
	if err != nil {
		t.Fatal(err)
	}
	f := on(oneServer, 2)
	f.Writable = func(dir string) error {
		if dir != file {
			t.Errorf("checked %s", dir)
		}
		return errors.New("is a file, not a folder")
	}
	checkRefused(t, cfg.Validate(f), "GRPC_RESULTS_DIR", file)
}

func TestServerFoldersMustNameTags(t *testing.T) {
	cfg, err := config.Parse(nil, testTools)
	if err != nil {
		t.Fatal(err)
	}
	f := on(config.Facts{Servers: []string{"go_grpc", "my server"}, Scenarios: []string{"complex_proto"}}, 2)
	checkRefused(t, cfg.Validate(f), "GRPC_BENCHMARKS", "")
}

func TestTwoEngines(t *testing.T) {
	for _, tc := range []struct {
		name       string
		vars       map[string]string
		wantVar    string
		wantValue  string
		twoEngines bool
	}{
		{"one engine, as today", map[string]string{}, "", "", false},
		{"both name the same engine", map[string]string{"GRPC_SERVER_DOCKER_HOST": "unix:///var/run/docker.sock"}, "", "", false},
		{"two engines and the address", map[string]string{"GRPC_CLIENT_DOCKER_HOST": "ssh://bench@client", "GRPC_SERVER_ADDRESS": "10.0.0.2:50051"}, "", "", true},
		{"two engines without the address", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2:2376"}, "GRPC_SERVER_ADDRESS", "", true},
		{"an address without a port: the engine picks one", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2:2376", "GRPC_SERVER_ADDRESS": "10.0.0.2"}, "", "", true},
		{"an address with port 0: the engine picks one", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2:2376", "GRPC_SERVER_ADDRESS": "10.0.0.2:0"}, "", "", true},
		{"an IPv6 address", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2:2376", "GRPC_SERVER_ADDRESS": "fd00::2"}, "", "", true},
		{"an IPv6 address and port", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2:2376", "GRPC_SERVER_ADDRESS": "[fd00::2]:50051"}, "", "", true},
		{"a host name", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2:2376", "GRPC_SERVER_ADDRESS": "server-box:50051"}, "GRPC_SERVER_ADDRESS", "server-box:50051", true},
		{"a host name without a port", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2:2376", "GRPC_SERVER_ADDRESS": "server-box"}, "GRPC_SERVER_ADDRESS", "server-box", true},
		{"a port past 65535", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2:2376", "GRPC_SERVER_ADDRESS": "10.0.0.2:70000"}, "GRPC_SERVER_ADDRESS", "10.0.0.2:70000", true},
		{"a port that is no number", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2:2376", "GRPC_SERVER_ADDRESS": "10.0.0.2:grpc"}, "GRPC_SERVER_ADDRESS", "10.0.0.2:grpc", true},
		{"an engine that is no URL", map[string]string{"GRPC_CLIENT_DOCKER_HOST": "client-box:2375", "GRPC_SERVER_ADDRESS": "10.0.0.2:50051"}, "GRPC_CLIENT_DOCKER_HOST", "client-box:2375", true},
		{"a tcp engine without a port", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2", "GRPC_SERVER_ADDRESS": "10.0.0.2:50051"}, "GRPC_SERVER_DOCKER_HOST", "tcp://10.0.0.2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse(tc.vars, testTools)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.TwoHosts() != tc.twoEngines {
				t.Errorf("TwoHosts = %v", cfg.TwoHosts())
			}
			err = cfg.Validate(on(oneServer, 2))
			if tc.wantVar == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				checkRefused(t, err, tc.wantVar, tc.wantValue)
			}
		})
	}
}

// TestEngineHostsResolveSockets: two addresses of one socket are one
// engine; two sockets are two.
func TestEngineHostsResolveSockets(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "docker.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, a, b string
		same       bool
	}{
		{"the same words", "unix://" + sock, "unix://" + sock, true},
		{"through a linked folder, as /var/run and /run", "unix://" + sock, "unix://" + filepath.Join(dir, "link", "docker.sock"), true},
		{"with a dot and a double slash", "unix://" + sock, "unix://" + dir + "/./" + "/docker.sock", true},
		{"another socket", "unix://" + sock, "unix://" + filepath.Join(dir, "other.sock"), false},
		{"a socket and a tcp engine", "unix://" + sock, "tcp://10.0.0.2:2376", false},
		{"two tcp engines", "tcp://10.0.0.2:2376", "tcp://10.0.0.3:2376", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := backend.Same(tc.a, tc.b); got != tc.same {
				t.Errorf("Same(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
			}
			cfg, err := config.Parse(map[string]string{"GRPC_SERVER_DOCKER_HOST": tc.a, "GRPC_CLIENT_DOCKER_HOST": tc.b}, testTools)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.TwoHosts() == tc.same {
				t.Errorf("TwoHosts = %v for %q and %q", cfg.TwoHosts(), tc.a, tc.b)
			}
		})
	}
}

// TestDockerVariablesFromFileOrEnvironment: DOCKER_HOST, DOCKER_TLS_VERIFY
// and DOCKER_CERT_PATH are read alike from .env and from the process.
func TestDockerVariablesFromFileOrEnvironment(t *testing.T) {
	const host, certs = "tcp://10.0.0.2:2376", "/etc/grpcbench/certs"
	for _, name := range []string{"DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"} {
		unsetenv(t, name)
	}
	t.Setenv("HOME", "/home/bench")
	lines := "DOCKER_HOST=" + host + "\nDOCKER_TLS_VERIFY=1\nDOCKER_CERT_PATH=" + certs + "\n"
	for _, tc := range []struct {
		name       string
		file       string
		env        map[string]string
		wantHost   string
		wantVerify bool
		wantCerts  string
	}{
		{"all in .env", lines, nil, host, true, certs},
		{"all in the environment", "", map[string]string{"DOCKER_HOST": host, "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": certs}, host, true, certs},
		{"host in .env, TLS in the environment", "DOCKER_HOST=" + host + "\n", map[string]string{"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": certs}, host, true, certs},
		{"TLS in .env, host in the environment", "DOCKER_TLS_VERIFY=1\nDOCKER_CERT_PATH=" + certs + "\n", map[string]string{"DOCKER_HOST": host}, host, true, certs},
		{"verify without a folder takes ~/.docker, as the CLI", "DOCKER_HOST=" + host + "\nDOCKER_TLS_VERIFY=1\n", nil, host, true, "/home/bench/.docker"},
		{"certificates without verification", "DOCKER_CERT_PATH=" + certs + "\n", nil, config.DefaultDockerHost, false, certs},
		{"the environment wins", lines, map[string]string{"DOCKER_HOST": "tcp://10.0.0.3:2376"}, "tcp://10.0.0.3:2376", true, certs},
		{"nothing", "", nil, config.DefaultDockerHost, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".env")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg, err := config.Load(path, testTools)
			if err != nil {
				t.Fatal(err)
			}
			server, client := cfg.DockerHosts()
			verify, certPath := cfg.DockerTLS()
			if server != tc.wantHost || client != tc.wantHost || verify != tc.wantVerify || certPath != tc.wantCerts {
				t.Errorf("hosts %q %q, TLS verify %v certs %q; want %q, %v, %q", server, client, verify, certPath, tc.wantHost, tc.wantVerify, tc.wantCerts)
			}
		})
	}
}

func TestServerPublish(t *testing.T) {
	for _, tc := range []struct {
		address, ip string
		port        int
	}{
		{"10.0.0.2", "10.0.0.2", 0},
		{"10.0.0.2:0", "10.0.0.2", 0},
		{"10.0.0.2:50051", "10.0.0.2", 50051},
		{"fd00::2", "fd00::2", 0},
		{"[fd00::2]:50051", "fd00::2", 50051},
	} {
		cfg, err := config.Parse(map[string]string{"GRPC_SERVER_ADDRESS": tc.address}, testTools)
		if err != nil {
			t.Fatal(err)
		}
		if ip, port, err := cfg.ServerPublish(); ip != tc.ip || port != tc.port || err != nil {
			t.Errorf("ServerPublish of %q = %q, %d, %v; want %q, %d", tc.address, ip, port, err, tc.ip, tc.port)
		}
	}
}

// TestRepositoryIsDockersShortName: docker.io/library/x and x are one
// repository, for the labels and the lock; a registry path stays.
func TestRepositoryIsDockersShortName(t *testing.T) {
	for name, want := range map[string]string{"grpc_bench": "grpc_bench", "docker.io/library/grpc_bench": "grpc_bench",
		"registry.local/team/grpc-bench_x": "registry.local/team/grpc-bench_x"} {
		cfg, err := config.Parse(map[string]string{"GRPC_IMAGE_NAME": name}, testTools)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Repository(); got != want {
			t.Errorf("GRPC_IMAGE_NAME=%s: repository %q, want %q", name, got, want)
		}
	}
}

// TestPlainEngines: a tcp:// engine reached without TLS is listed, once
// when both roles name it; with certificates, or over a socket or ssh,
// none is.
func TestPlainEngines(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		want []string
	}{
		{map[string]string{"DOCKER_HOST": "tcp://box:2375"}, []string{"tcp://box:2375"}},
		{map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://servers:2375", "GRPC_CLIENT_DOCKER_HOST": "ssh://bench@clients"}, []string{"tcp://servers:2375"}},
		{map[string]string{"DOCKER_HOST": "tcp://box:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/certs"}, nil},
		{map[string]string{"DOCKER_HOST": "tcp://box:2376", "DOCKER_CERT_PATH": "/certs"}, nil},
		{map[string]string{}, nil},
	} {
		cfg, err := config.Parse(tc.vars, testTools)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.PlainEngines(); !slices.Equal(got, tc.want) {
			t.Errorf("PlainEngines of %v = %v, want %v", tc.vars, got, tc.want)
		}
	}
}
