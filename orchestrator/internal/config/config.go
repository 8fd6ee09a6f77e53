// Package config reads the benchmark settings from the environment (and an
// optional .env file) and checks them before anything is built or started.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/distribution/reference"
	"github.com/joho/godotenv"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// Config holds every setting of a run. The `help` tag is what a user is told
// when the value is refused, and what .env.example explains.
type Config struct {
	Duration         time.Duration `env:"GRPC_BENCHMARK_DURATION" envDefault:"16s" help:"measured load per server and load tool, split evenly over the rounds (with GRPC_BENCHMARK_ROUNDS=auto, over its first look's 3 rounds, every round measuring that long): a duration such as 20s or 1m, at least 1s a round, at most 1h"`
	Warmup           Warmup        `env:"GRPC_BENCHMARK_WARMUP" envDefault:"auto" help:"unmeasured warm-up load before each round's measurement (each round starts a fresh server): auto (until the load's series is steady, MSER-5, at least 6.25s and at most GRPC_BENCHMARK_WARMUP_MAX) or a fixed duration from 1s to 10m"`
	WarmupMax        time.Duration `env:"GRPC_BENCHMARK_WARMUP_MAX" envDefault:"60s" help:"with GRPC_BENCHMARK_WARMUP=auto, the longest warm-up: a round still not steady then is measured all the same, and its window checked; a duration from 10s to 10m"`
	Rounds           RoundCount    `env:"GRPC_BENCHMARK_ROUNDS" envDefault:"4" help:"rounds per server, interleaved (round 1 of every server, then round 2, ...), each a fresh server container: a whole number from 1 to 100, or auto (looks after rounds 3, 6, 9 and 12; only the servers of pairs still open go on: not separated, equivalent or futile)"`
	Seed             string        `env:"GRPC_BENCHMARK_SEED" help:"seed of the random order in which each round visits the servers and cells, recorded in results.json: a whole number from 1 to 18446744073709551615 replays a run's order; empty draws one"`
	Budget           time.Duration `env:"GRPC_BENCHMARK_BUDGET" envDefault:"0s" help:"with GRPC_BENCHMARK_ROUNDS=auto, the most wall time the rounds may take, builds not counted: no look starts that would end past it (estimated from the rounds so far); a duration such as 30m, 0 for none (the last look ends the run)"`
	Margin           float64       `env:"GRPC_EQUIVALENCE_MARGIN" envDefault:"0.05" help:"equivalence margin: two servers whose req/s ratio's interval lies within 1 ± this are reported equivalent (and, with GRPC_BENCHMARK_ROUNDS=auto, measured no further): a fraction from 0.01 to 0.5"`
	ServerCPUs       CPUList       `env:"GRPC_SERVER_CPUS" envDefault:"1" help:"CPU limit of the server container in cores: a positive number such as 1 or 1.5, at most the engine's CPU count; a comma-separated list runs each"`
	ServerRAM        Bytes         `env:"GRPC_SERVER_RAM" envDefault:"512m" help:"memory limit of the server container: a size such as 512m or 1g, from 64m to the engine host's memory"`
	Connections      int           `env:"GRPC_CLIENT_CONNECTIONS" envDefault:"50" help:"HTTP/2 connections the load client opens: a whole number from 1 to GRPC_CLIENT_CONCURRENCY"`
	Concurrency      int           `env:"GRPC_CLIENT_CONCURRENCY" envDefault:"1000" help:"calls in flight at once, over all connections: a whole number from 1 to 100000"`
	QPS              int           `env:"GRPC_CLIENT_QPS" envDefault:"0" help:"total request rate over all connections in requests per second, at most 1000000; 0 means as fast as the server answers"`
	Arrivals         string        `env:"GRPC_LOAD_ARRIVALS" envDefault:"constant" help:"how calls are spaced at GRPC_CLIENT_QPS: constant (evenly) or poisson (exponential gaps, as independent users); h2 then loads open-loop, calls starting on that schedule whatever the answers, latency from each call's intended start"`
	ClientCPUs       ClientCPUs    `env:"GRPC_CLIENT_CPUS" envDefault:"auto" help:"CPU limit of the load client container in cores: auto (every core of the engine not given to the server or, when at least two are left, to dockerd; at least 1) or a positive number such as 1 or 1.5, at most the engine's CPU count"`
	Scenarios        Names         `env:"GRPC_REQUEST_SCENARIO" envDefault:"complex_proto" help:"the request shape: the name of a folder in scenarios/; a comma-separated list runs each"`
	ImageName        string        `env:"GRPC_IMAGE_NAME" envDefault:"grpc_bench" help:"repository name of the images built, tagged <server>-<scenario>: lower-case letters, digits and . _ - /, at most 100 characters"`
	Benchmarks       Names         `env:"GRPC_BENCHMARKS" help:"servers to run, separated by spaces or commas: names of folders in servers/; empty means all of them"`
	ResultsDir       string        `env:"GRPC_RESULTS_DIR" envDefault:"results" help:"folder that receives one sub-folder per run: a folder this user can write to, created if missing"`
	ReadyTimeout     time.Duration `env:"GRPC_SERVER_READY_TIMEOUT" envDefault:"60s" help:"how long a started server has to answer its first SayHello: a duration from 1s to 10m"`
	LoadTool         string        `env:"GRPC_LOAD_TOOL" envDefault:"ghz" help:"the load tool: {tools}"`
	CapacityTool     string        `env:"GRPC_CAPACITY_TOOL" envDefault:"h2" help:"the load tool that also measures a server in the same round when the load client was its bottleneck, for the server capacity ranking: {capacity}"`
	ServerDockerHost string        `env:"GRPC_SERVER_DOCKER_HOST" help:"the Docker engine that runs the servers: unix:///path, tcp://host:port (TLS as the Docker CLI: DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) or ssh://user@host; or k8s://context, a Kubernetes cluster whose node is this machine (docs/scale-out.md; set GRPC_CLIENT_DOCKER_HOST to the same); empty means DOCKER_HOST, else the local socket"`
	ClientDockerHost string        `env:"GRPC_CLIENT_DOCKER_HOST" help:"the Docker engine that runs the load clients, as GRPC_SERVER_DOCKER_HOST; when the two differ, GRPC_SERVER_ADDRESS is required"`
	ServerAddress    string        `env:"GRPC_SERVER_ADDRESS" help:"the IP address of the servers' machine at which the clients' machine reaches a server, when the two engines differ (not a wildcard or loopback address): each server publishes its port on that address only, at a port the engine picks for it (10.0.0.2), or at a fixed port (10.0.0.2:50051, for a firewall that opens one port; two runs on that engine then collide)"`
	SourceMirror     string        `env:"GRPC_SOURCE_MIRROR" help:"a folder of git bundles named <repository>.bundle, from which the third-party sources that servers pin in sources.json are taken when neither the sources cache nor their URL has them; empty means none"`
	LoadProfiles     Names         `env:"GRPC_LOAD_PROFILE" help:"a load shape of the grpcxx benchmarks, setting connections x calls in flight per connection: 1a (1x1), 1b (1x10), 2a (10x1), 2b (10x10), 3a (100x1), 3b (100x10); a comma-separated list runs each; empty means GRPC_CLIENT_CONNECTIONS and GRPC_CLIENT_CONCURRENCY"`
	BuildRAM         AutoBytes     `env:"GRPC_BUILD_RAM" envDefault:"auto" help:"memory limit of each step of an image build (the container of a RUN), swap included: auto (6g, or the engine host's memory less 1g when that is less, at least 512m) or a size such as 4g, from 512m to the engine host's memory"`
	BuildCPUs        ClientCPUs    `env:"GRPC_BUILD_CPUS" envDefault:"auto" help:"CPU limit of each step of an image build in cores: auto (every core of the engine but one, at least 1) or a positive number such as 2, at most the engine's CPU count"`
	BuildStall       time.Duration `env:"GRPC_BUILD_STALL" envDefault:"30m" help:"how long an image build, pull or copy between engines may go without output, or a fetch of pinned sources over HTTP without data, before it is taken to hang and that server's build fails: a duration from 1m to 6h"`
	BuildTimeout     time.Duration `env:"GRPC_BUILD_TIMEOUT" envDefault:"2h" help:"how long one image build (the making or copying of its base images included), or one checkout of a pinned source, may take in all, output or not, before it is cut off and that server's build fails: a duration from 1m to 24h"`
	Rates            Rates         `env:"GRPC_LOAD_RATES" help:"target rates of a sweep, each a cell of its own beside the cell's saturation load, loaded open-loop by h2 whatever GRPC_LOAD_TOOL is: rates in req/s (5000,10000,20000, at most 1000000) or shares of each server's capacity measured in the same run's first round (25%,50%,90%, above 0 and at most 200%), not both; empty means none"`
	SLO              SLO           `env:"GRPC_LATENCY_SLO" help:"a latency objective, percentile<bound (p99<10ms; percentiles p50, p90, p95, p99, p99.9): each server is ranked by the highest rate it sustains with that percentile of every call of its rounds within the bound (at 95% confidence), every round sustained and stable; without GRPC_LOAD_RATES, 4 probing rates (a bisection of the share of its capacity up to all of it, measured after the other rounds) find it; empty means none"`
	TLS              Names         `env:"GRPC_TLS" envDefault:"off" help:"whether the load goes over TLS: off (plaintext HTTP/2, h2c) or on (TLS with ALPN h2, each server given a certificate of a throwaway CA made for the run, which every client verifies); a comma-separated list (off,on) runs each"`

	// given holds the variables as the user wrote them, so that reports and
	// messages repeat 2048m rather than 2g, and 60s rather than 1m0s.
	given map[string]string
	// unparsed names the variables Parse refused, which Validate then
	// leaves alone rather than refuse them twice.
	unparsed map[string]bool
	// tools are the load tools GRPC_LOAD_TOOL and GRPC_CAPACITY_TOOL take.
	tools []Tool
}

// MinServerRAM is the smallest memory limit accepted: below it the runtimes
// of the catalog do not even start, and the failure would look like a crash.
const MinServerRAM = 64 << 20

// Setting is one variable of the configuration with its value as text.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Help  string `json:"help"`
	// Default is the value used when the variable is not set.
	Default string `json:"default"`
	// Given says the user set the variable: a resumed run sets only these,
	// so that defaults do not count as given (a load profile refuses a
	// GRPC_CLIENT_CONNECTIONS given beside it).
	Given bool `json:"given,omitempty"`
}

// Error is a refused setting: the variable, the value given and what is
// allowed. Its message is meant for the user as it is.
type Error struct {
	Var     string
	Value   string
	Allowed string
	Reason  string
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s=%q: %s; allowed: %s", e.Var, e.Value, e.Reason, e.Allowed)
	}
	return fmt.Sprintf("%s=%q is not allowed; allowed: %s", e.Var, e.Value, e.Allowed)
}

// Load reads the configuration from the process environment, over the values
// of dotenvPath when that file exists (the environment wins); tools are the
// load tools on offer.
func Load(dotenvPath string, tools []Tool) (Config, error) {
	vars, fileErr := Environment(dotenvPath)
	if fileErr != nil {
		// The rest is still checked, from the environment and the defaults,
		// so that one bad line does not bring errors about values never set.
		vars, _ = Environment("")
	}
	cfg, err := Parse(vars, tools)
	return cfg, errors.Join(fileErr, err)
}

// Environment merges the .env file (if present) with the process environment.
func Environment(dotenvPath string) (map[string]string, error) {
	vars := map[string]string{}
	if dotenvPath != "" {
		fileVars, err := godotenv.Read(dotenvPath)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, dotenvError(dotenvPath, err)
		default:
			vars = fileVars
		}
	}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	return vars, nil
}

// dotenvError names the line of a .env file that does not parse: the
// parser says what is wrong but not where, so each line is tried alone.
func dotenvError(path string, err error) error {
	b, rerr := os.ReadFile(path)
	if rerr != nil {
		return fmt.Errorf("read %s: %w", path, rerr)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if _, lerr := godotenv.Unmarshal(line + "\n"); lerr != nil {
			return &Error{Var: fmt.Sprintf("%s:%d", path, i+1), Value: strings.TrimSpace(line), Reason: reason(lerr),
				Allowed: "NAME=value lines, blank lines and # comments"}
		}
	}
	return &Error{Var: path, Value: "", Reason: reason(err), Allowed: "NAME=value lines, blank lines and # comments"}
}

// Parse builds a Config from variables, with tools the load tools on
// offer; unparsable values come back as *Error values joined together.
func Parse(vars map[string]string, tools []Tool) (Config, error) {
	if vars == nil {
		vars = map[string]string{} // env reads the process environment when given nil
	}
	cfg := Config{given: vars, tools: tools}
	err := env.ParseWithOptions(&cfg, env.Options{Environment: vars})
	if err == nil {
		return cfg, nil
	}
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return cfg, err
	}
	var errs []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if !errors.As(e, &pe) {
			errs = append(errs, e)
			continue
		}
		f, _ := reflect.TypeFor[Config]().FieldByName(pe.Name) // env names the field it could not fill
		v := declared[slices.IndexFunc(declared, func(v variable) bool { return v.field == f.Index[0] })]
		errs = append(errs, &Error{Var: v.name, Value: vars[v.name], Allowed: cfg.help(v), Reason: reason(pe.Err)})
		if cfg.unparsed == nil {
			cfg.unparsed = map[string]bool{}
		}
		cfg.unparsed[v.name] = true
	}
	return cfg, errors.Join(errs...)
}

// reason keeps the useful tail of a parser's message ("invalid duration" rather
// than the whole chain env builds around it).
func reason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

// DefaultDockerHost is the engine a Docker CLI talks to when nothing says
// otherwise.
const DefaultDockerHost = "unix:///var/run/docker.sock"

// DockerHosts are the engines that run the servers and the clients: their
// settings, else DOCKER_HOST, else the local socket.
func (c Config) DockerHosts() (server, client string) {
	def := cmp.Or(c.given["DOCKER_HOST"], DefaultDockerHost)
	return cmp.Or(c.ServerDockerHost, def), cmp.Or(c.ClientDockerHost, def)
}

// TwoHosts says servers and clients run on different engines.
func (c Config) TwoHosts() bool {
	server, client := c.DockerHosts()
	return !backend.Same(server, client)
}

// DockerTLS is TLS to a tcp:// engine as the Docker CLI takes it, from
// DOCKER_TLS_VERIFY and DOCKER_CERT_PATH in .env or the environment alike
// (the environment wins): verify the engine's certificate when
// DOCKER_TLS_VERIFY is set to anything; the certificates are in
// DOCKER_CERT_PATH, else ~/.docker when verifying.
func (c Config) DockerTLS() (verify bool, certPath string) {
	verify, certPath = c.given["DOCKER_TLS_VERIFY"] != "", c.given["DOCKER_CERT_PATH"]
	if verify && certPath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			certPath = filepath.Join(home, ".docker")
		}
	}
	return verify, certPath
}

// PlainEngines are the tcp:// engine addresses of the settings that are
// reached without TLS (neither DOCKER_CERT_PATH nor DOCKER_TLS_VERIFY).
func (c Config) PlainEngines() []string {
	if _, certs := c.DockerTLS(); certs != "" {
		return nil
	}
	server, client := c.DockerHosts()
	var plain []string
	for _, addr := range slices.Compact([]string{server, client}) {
		if strings.HasPrefix(addr, "tcp://") {
			plain = append(plain, addr)
		}
	}
	return plain
}

// BuildCPULimit is GRPC_BUILD_CPUS on an engine of n cores: auto leaves
// one core to dockerd and the orchestrator when there are two or more.
func (c Config) BuildCPULimit(n int) CPUs {
	if !c.BuildCPUs.Auto {
		return c.BuildCPUs.CPUs
	}
	return CPUs(max(1, n-1))
}

// BuildRAMLimit is GRPC_BUILD_RAM in bytes on an engine host of memory
// bytes (0: not known): auto is DefaultBuildRAM, or the host's memory less
// BuildRAMMargin when that is less (a 4 GiB host, as Docker Desktop's VM
// may be, builds with 3 GiB), never below MinBuildRAM. A fixed size
// larger than the host is refused instead: it was asked for.
func (c Config) BuildRAMLimit(memory int64) int64 {
	if !c.BuildRAM.Auto {
		return int64(c.BuildRAM.Bytes)
	}
	if memory <= 0 {
		return DefaultBuildRAM
	}
	return max(MinBuildRAM, min(DefaultBuildRAM, memory-BuildRAMMargin))
}

// RoundDuration is each round's measured time: GRPC_BENCHMARK_DURATION
// split evenly over the rounds, or under auto over its first look's, to
// the millisecond: auto's first look measures what a fixed run of as many
// rounds does, and every later round as long again.
func (c Config) RoundDuration() time.Duration {
	return (c.Duration / time.Duration(max(1, c.FirstRounds()))).Truncate(time.Millisecond)
}

// FirstRounds is the rounds every server gets: all of them, or under auto
// its first look's.
func (c Config) FirstRounds() int {
	if c.Rounds.Auto {
		return stats.AutoLooks[0]
	}
	return c.Rounds.N
}

// WarmupCap is the longest a warm-up lasts: GRPC_BENCHMARK_WARMUP_MAX
// under auto, else the fixed warm-up.
func (c Config) WarmupCap() time.Duration {
	if c.Warmup.Auto {
		return c.WarmupMax
	}
	return c.Warmup.Fixed
}

// SeedValue is GRPC_BENCHMARK_SEED, false when empty.
func (c Config) SeedValue() (uint64, bool) {
	n, err := strconv.ParseUint(strings.TrimSpace(c.Seed), 10, 64)
	return n, err == nil && n > 0
}

// Servers is the list of servers this run benchmarks, in catalog order
// when GRPC_BENCHMARKS is empty.
func (c Config) Servers(catalog []string) []string {
	if len(c.Benchmarks) == 0 {
		return catalog
	}
	return c.Benchmarks
}

// variable is one setting as the Config struct declares it.
type variable struct {
	name, help, def string
	field           int // index in Config
	hasDefault      bool
}

// declared lists the variables in declaration order; variables finds them
// by name.
var declared, variables = func() ([]variable, map[string]variable) {
	t := reflect.TypeFor[Config]()
	var list []variable
	byName := map[string]variable{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := f.Tag.Lookup("env")
		if !ok {
			continue
		}
		def, hasDefault := f.Tag.Lookup("envDefault")
		v := variable{name: name, help: f.Tag.Get("help"), def: def, hasDefault: hasDefault, field: i}
		list = append(list, v)
		byName[name] = v
	}
	return list, byName
}()

// All lists every variable with its value as given, in declaration order:
// results.json and .env.example are built from it.
func (c Config) All() []Setting {
	out := make([]Setting, 0, len(declared))
	for _, v := range declared {
		_, given := c.given[v.name]
		out = append(out, Setting{Name: v.name, Value: c.value(v.name), Help: c.help(v), Default: v.def, Given: given})
	}
	return out
}

// Repository is GRPC_IMAGE_NAME as Docker shortens it, the one name of
// its images' repository in labels and locks: docker.io/library/x and x
// are one repository. A name that does not parse (refused by Validate)
// stays as it is.
func (c Config) Repository() string {
	named, err := reference.ParseNormalizedNamed(c.ImageName)
	if err != nil {
		return c.ImageName
	}
	return reference.FamiliarName(named)
}

// Given says the user set the variable, in the environment or .env.
func (c Config) Given(name string) bool {
	_, ok := c.given[name]
	return ok
}

// With lists every variable as All does, with values in place of those
// the user gave: a cell's footer, its list-valued settings one value each.
func (c Config) With(values map[string]string) []Setting {
	c.given = maps.Clone(c.given)
	if c.given == nil {
		c.given = map[string]string{}
	}
	maps.Copy(c.given, values)
	return c.All()
}

// value is the variable's value as the user wrote it, else its default,
// else the field's value as text.
func (c Config) value(name string) string {
	if v, ok := c.given[name]; ok {
		return v
	}
	v := variables[name]
	if v.hasDefault && c.given != nil {
		return v.def
	}
	fv := reflect.ValueOf(c).Field(v.field).Interface()
	if s, ok := fv.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(fv)
}
