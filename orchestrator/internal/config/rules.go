package config

import (
	"net"
	"os"
	"regexp"

	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// Facts are what the checks need to know of the world outside the
// settings: the repository's catalog and the Docker engine's machine.
type Facts struct {
	Servers   []string // folders of servers/
	Scenarios []string // folders of scenarios/
	// HostCPUs and HostMemory describe the servers' engine's host;
	// ClientCPUs the clients' (the same when one engine runs both).
	HostCPUs   int
	HostMemory int64
	ClientCPUs int
	// Writable says why results cannot be written under a folder; nil
	// skips the check.
	Writable func(dir string) error
}

// rule checks one setting: it returns why the value is refused, or "".
type rule struct {
	name  string
	check func(c Config, f Facts) string
}

// Bounds of the numeric settings.
const (
	// MaxConcurrency bounds the in-flight calls to a number one client can
	// hold.
	MaxConcurrency = 100000
	// MaxRounds bounds GRPC_BENCHMARK_ROUNDS.
	MaxRounds = 100
	// MinMargin and MaxMargin bound GRPC_EQUIVALENCE_MARGIN: closer than
	// 1% no run here resolves, wider than 50% is no equivalence.
	MinMargin = 0.01
	MaxMargin = 0.5
	// MinRoundDuration is the stats period: a shorter measurement has no
	// CPU or memory reading of its own.
	MinRoundDuration = time.Second
	// MaxDuration bounds the measured time per server and load tool: a longer
	// run is a soak test, not a benchmark.
	MaxDuration = time.Hour
	// MinWarmup lets the client's connections open and settle.
	MinWarmup = time.Second
	// MaxWarmup and MaxReadyTimeout bound the waits before a measurement.
	MaxWarmup       = 10 * time.Minute
	MaxReadyTimeout = 10 * time.Minute
	// MaxQPS is more than one client core of any load tool here schedules
	// (h2: about 400k req/s), and keeps the per-call interval above a
	// nanosecond for every load tool.
	MaxQPS = 1_000_000
	// MinBuildRAM is less than any build of the catalog needs; MaxBuildStall
	// is longer than any of its steps runs silent, MaxBuildTimeout than any
	// build of it takes (rust_grpcio's, the longest: 39 min beside a `make
	// check-servers` run).
	MinBuildRAM = 512 << 20
	// DefaultBuildRAM is the most GRPC_BUILD_RAM=auto gives (its fixed
	// default before); BuildRAMMargin is what auto leaves of a smaller
	// host's memory to the engine, the orchestrator (400 MiB at its peak,
	// the client image's build) and the system.
	DefaultBuildRAM = 6 << 30
	BuildRAMMargin  = 1 << 30
	MaxBuildStall   = 6 * time.Hour
	MaxBuildTimeout = 24 * time.Hour
	// MaxSLOBound is longer than any call of a benchmark should take.
	MaxSLOBound = time.Minute
	// MaxImageName keeps GRPC_IMAGE_NAME:<server>-<scenario> under the 255
	// characters of a Docker reference.
	MaxImageName = 100
)

// Arrivals are the values of GRPC_LOAD_ARRIVALS, those of load.Arrivals.
var Arrivals = []string{"constant", "poisson"}

// rules are the checks, one or more per variable, in the order the
// variables are declared.
var rules = []rule{
	{"GRPC_BENCHMARK_DURATION", func(c Config, _ Facts) string {
		n := c.FirstRounds()
		switch {
		case c.Duration > MaxDuration:
			return fmt.Sprintf("longer than %s", MaxDuration)
		case n >= 1 && n <= MaxRounds && c.Duration/time.Duration(n) < MinRoundDuration:
			return fmt.Sprintf("%s over %d rounds is less than %s a round, the stats period", c.Duration, n, MinRoundDuration)
		}
		return ""
	}},
	{"GRPC_BENCHMARK_WARMUP", func(c Config, _ Facts) string { return between(c.Warmup, MinWarmup, MaxWarmup) }},
	{"GRPC_BENCHMARK_ROUNDS", func(c Config, _ Facts) string {
		if !c.Rounds.Auto && (c.Rounds.N < 1 || c.Rounds.N > MaxRounds) {
			return fmt.Sprintf("must be from 1 to %d, or auto", MaxRounds)
		}
		return ""
	}},
	{"GRPC_BENCHMARK_SEED", func(c Config, _ Facts) string {
		if _, ok := c.SeedValue(); !ok && strings.TrimSpace(c.Seed) != "" {
			return "not a whole number from 1 to 18446744073709551615"
		}
		return ""
	}},
	{"GRPC_BENCHMARK_BUDGET", func(c Config, _ Facts) string {
		if c.Budget < 0 {
			return "must not be negative"
		}
		return ""
	}},
	{"GRPC_EQUIVALENCE_MARGIN", func(c Config, _ Facts) string {
		if !(c.Margin >= MinMargin && c.Margin <= MaxMargin) {
			return fmt.Sprintf("must be from %g to %g", MinMargin, MaxMargin)
		}
		return ""
	}},
	{"GRPC_SERVER_CPUS", func(c Config, f Facts) string {
		if len(c.ServerCPUs) == 0 {
			return "must name at least one CPU limit"
		}
		for _, v := range c.ServerCPUs {
			if r := cpus(v, f); r != "" {
				return element(v.String(), len(c.ServerCPUs), r)
			}
		}
		return duplicate(c.ServerCPUs.Strings())
	}},
	{"GRPC_SERVER_RAM", func(c Config, f Facts) string {
		switch {
		case c.ServerRAM < MinServerRAM:
			return "below 64m"
		case f.HostMemory > 0 && int64(c.ServerRAM) > f.HostMemory:
			return fmt.Sprintf("more than the engine host's %s of memory", Bytes(f.HostMemory&^(1<<20-1)))
		}
		return ""
	}},
	{"GRPC_CLIENT_CONNECTIONS", func(c Config, _ Facts) string {
		switch {
		case c.Connections < 1:
			return "must be at least 1"
		case c.Concurrency >= 1 && c.Connections > c.Concurrency:
			return fmt.Sprintf("more connections than GRPC_CLIENT_CONCURRENCY=%d calls to put on them", c.Concurrency)
		}
		return ""
	}},
	{"GRPC_CLIENT_CONCURRENCY", func(c Config, _ Facts) string {
		switch {
		case c.Concurrency < 1:
			return "must be at least 1"
		case c.Concurrency > MaxConcurrency:
			return "more than 100000"
		}
		return ""
	}},
	{"GRPC_CLIENT_QPS", func(c Config, _ Facts) string {
		switch {
		case c.QPS < 0:
			return "must not be negative"
		case c.QPS > MaxQPS:
			return fmt.Sprintf("more than %d", MaxQPS)
		}
		return ""
	}},
	{"GRPC_LOAD_ARRIVALS", func(c Config, _ Facts) string {
		return oneOf(c.Arrivals, Arrivals, "no such arrival process")
	}},
	{"GRPC_CLIENT_CPUS", func(c Config, f Facts) string {
		if c.ClientCPUs.Auto {
			return ""
		}
		if c.TwoHosts() {
			f.HostCPUs = f.ClientCPUs
		}
		return cpus(c.ClientCPUs.CPUs, f)
	}},
	{"GRPC_REQUEST_SCENARIO", func(c Config, f Facts) string {
		if r := names(c.Scenarios, f.Scenarios, "scenario", false); r != "" {
			return r
		}
		return tagSafe(c.Scenarios, "scenario")
	}},
	{"GRPC_IMAGE_NAME", func(c Config, _ Facts) string {
		switch {
		case len(c.ImageName) > MaxImageName:
			return fmt.Sprintf("%d characters, more than %d", len(c.ImageName), MaxImageName)
		case !imageName.MatchString(c.ImageName):
			return "not a valid image repository name"
		}
		return ""
	}},
	{"GRPC_BENCHMARKS", func(c Config, f Facts) string {
		if r := c.blank("GRPC_BENCHMARKS", c.Benchmarks, "server", "every server"); r != "" {
			return r
		}
		if r := names(c.Benchmarks, f.Servers, "server", true); r != "" {
			return r
		}
		return tagSafe(c.Servers(f.Servers), "server folder")
	}},
	{"GRPC_RESULTS_DIR", func(c Config, f Facts) string {
		if strings.TrimSpace(c.ResultsDir) == "" {
			return "must not be empty"
		}
		if f.Writable != nil {
			if err := f.Writable(c.ResultsDir); err != nil {
				return err.Error()
			}
		}
		return ""
	}},
	{"GRPC_SERVER_READY_TIMEOUT", func(c Config, _ Facts) string { return between(c.ReadyTimeout, time.Second, MaxReadyTimeout) }},
	{"GRPC_LOAD_TOOL", func(c Config, _ Facts) string {
		return oneOf(c.LoadTool, c.toolNames(), "no such load tool")
	}},
	{"GRPC_CAPACITY_TOOL", func(c Config, _ Facts) string {
		return oneOf(c.CapacityTool, append(c.toolNames(), CapacityOff), "no such load tool")
	}},
	{"GRPC_SERVER_DOCKER_HOST", func(c Config, _ Facts) string { return dockerHost(c.ServerDockerHost) }},
	{"GRPC_CLIENT_DOCKER_HOST", func(c Config, _ Facts) string { return dockerHost(c.ClientDockerHost) }},
	{"GRPC_SERVER_ADDRESS", func(c Config, _ Facts) string {
		if c.ServerAddress == "" {
			if c.TwoHosts() {
				return "required when GRPC_SERVER_DOCKER_HOST and GRPC_CLIENT_DOCKER_HOST name different engines"
			}
			return ""
		}
		ip, _, err := c.ServerPublish()
		if err != nil {
			return err.Error()
		}
		if a := net.ParseIP(ip); c.TwoHosts() && (a.IsUnspecified() || a.IsLoopback()) {
			// Published on every interface, or where the clients' machine
			// cannot reach it: every server would then fail readiness.
			return "a wildcard or loopback address: the servers' machine publishes each server on this address only, and the clients' machine must reach it there"
		}
		return ""
	}},
	{"GRPC_SOURCE_MIRROR", func(c Config, _ Facts) string {
		if c.SourceMirror == "" {
			return ""
		}
		if info, err := os.Stat(c.SourceMirror); err != nil || !info.IsDir() {
			return "no such folder"
		}
		return ""
	}},
	{"GRPC_BUILD_RAM", func(c Config, f Facts) string {
		switch {
		case c.BuildRAM.Auto:
			return ""
		case c.BuildRAM.Bytes < MinBuildRAM:
			return "below 512m"
		case f.HostMemory > 0 && int64(c.BuildRAM.Bytes) > f.HostMemory:
			return fmt.Sprintf("more than the engine host's %s of memory", Bytes(f.HostMemory&^(1<<20-1)))
		}
		return ""
	}},
	{"GRPC_BUILD_CPUS", func(c Config, f Facts) string {
		if c.BuildCPUs.Auto {
			return ""
		}
		return cpus(c.BuildCPUs.CPUs, f)
	}},
	{"GRPC_TLS", func(c Config, _ Facts) string {
		if r := c.blank("GRPC_TLS", c.TLS, "TLS mode", TLSOff); r != "" {
			return r
		}
		return names(c.TLS, TLSModes, "TLS mode", false)
	}},
	{"GRPC_BUILD_STALL", func(c Config, _ Facts) string { return between(c.BuildStall, time.Minute, MaxBuildStall) }},
	{"GRPC_BUILD_TIMEOUT", func(c Config, _ Facts) string { return between(c.BuildTimeout, time.Minute, MaxBuildTimeout) }},
	{"GRPC_LOAD_PROFILE", func(c Config, _ Facts) string {
		if r := c.blank("GRPC_LOAD_PROFILE", c.LoadProfiles, "profile", "GRPC_CLIENT_CONNECTIONS and GRPC_CLIENT_CONCURRENCY"); r != "" {
			return r
		}
		if r := names(c.LoadProfiles, ProfileNames(), "profile", true); r != "" {
			return r
		}
		for _, name := range []string{"GRPC_CLIENT_CONNECTIONS", "GRPC_CLIENT_CONCURRENCY"} {
			if v := c.given[name]; len(c.LoadProfiles) > 0 && v != "" {
				return "it sets the shape, and " + name + " is set too; set one or the other"
			}
		}
		return ""
	}},
	{"GRPC_LOAD_RATES", func(c Config, _ Facts) string {
		if r := c.blank("GRPC_LOAD_RATES", c.Rates.Strings(), "rate", "no sweep"); r != "" {
			return r
		}
		for _, r := range c.Rates {
			switch {
			case r.Share == 0 && (r.PerSecond < 1 || r.PerSecond > MaxQPS):
				return element(r.String(), len(c.Rates), fmt.Sprintf("a rate in req/s must be from 1 to %d", MaxQPS))
			case r.PerSecond == 0 && (r.Share <= 0 || r.Share > MaxRateShare):
				return element(r.String(), len(c.Rates), fmt.Sprintf("a share of capacity must be above 0%% and at most %s", percent(MaxRateShare)))
			}
		}
		if len(c.Rates) > 0 && c.QPS != 0 {
			return fmt.Sprintf("each rate is a cell's GRPC_CLIENT_QPS, and GRPC_CLIENT_QPS=%d is set too; set one or the other", c.QPS)
		}
		if len(c.Rates) > 0 && c.openLoopTool() == "" {
			return "rate cells are loaded open-loop, and this binary offers no load tool that loads open-loop"
		}
		return duplicate(c.Rates.Strings())
	}},
	{"GRPC_LATENCY_SLO", func(c Config, _ Facts) string {
		switch {
		case !c.SLO.Set():
			return ""
		case !slices.Contains(SLOPercentiles, c.SLO.Percentile):
			return fmt.Sprintf("no percentile %q; known: %s", c.SLO.Percentile, strings.Join(SLOPercentiles, ", "))
		case c.SLO.Bound <= 0 || c.SLO.Bound > MaxSLOBound:
			return fmt.Sprintf("the bound must be above 0 and at most %s", MaxSLOBound)
		case len(c.Rates) == 0 && c.QPS != 0:
			return fmt.Sprintf("its search probes rates as GRPC_CLIENT_QPS does, and GRPC_CLIENT_QPS=%d is set too; set one or the other", c.QPS)
		}
		return ""
	}},
}

// ServerPublish is where a server publishes its port on the servers'
// machine (GRPC_SERVER_ADDRESS): an IP address, and a port, 0 when the
// engine is to pick a free one.
func (c Config) ServerPublish() (ip string, port int, err error) {
	if net.ParseIP(c.ServerAddress) != nil {
		return c.ServerAddress, 0, nil
	}
	host, p, err := net.SplitHostPort(c.ServerAddress)
	if err != nil {
		return "", 0, fmt.Errorf("not an IP address or IP:port: %s", reason(err))
	}
	if net.ParseIP(host) == nil {
		return "", 0, errors.New("not an IP address: the server publishes its port on that address of its machine only, and a name may resolve elsewhere")
	}
	if port, err = strconv.Atoi(p); err != nil || port < 0 || port > 65535 {
		return "", 0, errors.New("the port is not from 1 to 65535 (or 0: the engine picks one)")
	}
	return host, port, nil
}

// dockerHost checks an engine address with the backend of its scheme.
func dockerHost(v string) string {
	if v == "" {
		return ""
	}
	if err := backend.Check(v); err != nil {
		return err.Error()
	}
	return ""
}

// CapacityOff turns the capacity measurement off.
const CapacityOff = "off"

// CapacityOn says a client-bound server is measured again, by another
// load tool than GRPC_LOAD_TOOL.
func (c Config) CapacityOn() bool {
	return c.CapacityTool != CapacityOff && c.CapacityTool != c.LoadTool
}

// Validate checks every setting against its rules and the facts, and
// variables that look like misspelled settings, and returns every refusal
// at once, as *Error values joined together.
func (c Config) Validate(f Facts) error {
	var errs []error
	for _, r := range rules {
		if c.unparsed[r.name] {
			continue
		}
		if reason := r.check(c, f); reason != "" {
			v := variables[r.name]
			errs = append(errs, &Error{Var: r.name, Value: c.value(r.name), Allowed: c.help(v), Reason: reason})
		}
	}
	return errors.Join(append(errs, c.misspelled()...)...)
}

// librarySettings are variables the gRPC libraries of the catalog read
// themselves: never taken for a misspelled setting of ours.
var librarySettings = map[string]bool{
	"GRPC_TRACE": true, "GRPC_VERBOSITY": true, "GRPC_GO_LOG_SEVERITY_LEVEL": true, "GRPC_GO_LOG_VERBOSITY_LEVEL": true,
	"GRPC_GO_LOG_FORMATTER": true, "GRPC_GO_RETRY": true, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": true, "GRPC_ENABLE_FORK_SUPPORT": true,
	"GRPC_POLL_STRATEGY": true, "GRPC_DNS_RESOLVER": true, "GRPC_XDS_BOOTSTRAP": true, "GRPC_XDS_BOOTSTRAP_CONFIG": true,
	"GRPC_EXPERIMENTAL_ENABLE_OUTLIER_DETECTION": true, "GRPC_SSL_CIPHER_SUITES": true, "GRPC_STACKTRACE_MINLOGLEVEL": true,
}

// misspellMaxDistance is how many edits away from a setting's name a
// GRPC_ variable is taken for a misspelling of it.
const misspellMaxDistance = 3

// misspelled refuses GRPC_ variables that are not settings but are a few
// edits away from one: GRPC_BENCHMARK_DURATON=3s must not run the 20 s
// default in silence.
func (c Config) misspelled() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.given)) {
		if to, ok := Renamed[name]; ok {
			errs = append(errs, &Error{Var: name, Value: c.given[name], Reason: "renamed to " + to,
				Allowed: to + ": " + c.help(variables[to])})
			continue
		}
		if _, known := variables[name]; known || librarySettings[name] || !strings.HasPrefix(name, "GRPC_") {
			continue
		}
		closest, best := "", misspellMaxDistance+1
		for _, v := range declared {
			if d := levenshtein.ComputeDistance(name, v.name); d < best {
				closest, best = v.name, d
			}
		}
		if closest != "" {
			errs = append(errs, &Error{Var: name, Value: c.given[name], Reason: "not a setting; did you mean " + closest + "?",
				Allowed: "the settings `grpcbench env` lists"})
		}
	}
	return errs
}

// ruleNames lists the variables the rules check.
func ruleNames() []string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.name
	}
	return names
}

func between(d, lo, hi time.Duration) string {
	switch {
	case d < lo:
		return fmt.Sprintf("shorter than %s", lo)
	case d > hi:
		return fmt.Sprintf("longer than %s", hi)
	}
	return ""
}

// tagPart is what a server or scenario name must be to go into an image
// tag (<server>-<scenario>) and a folder name.
var tagPart = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

func tagSafe(list []string, what string) string {
	for _, name := range list {
		if !tagPart.MatchString(name) {
			return fmt.Sprintf("the %s %q cannot name an image tag: letters, digits, _ . - only, at most 63", what, name)
		}
	}
	return ""
}

func cpus(v CPUs, f Facts) string {
	switch {
	case v <= 0:
		return "must be positive"
	case v < 0.01:
		return "below the 0.01 core Docker can enforce"
	case f.HostCPUs > 0 && float64(v) > float64(f.HostCPUs):
		return fmt.Sprintf("the Docker engine has %d CPUs", f.HostCPUs)
	}
	return ""
}

func oneOf(v string, allowed []string, reason string) string {
	if slices.Contains(allowed, v) {
		return ""
	}
	return reason + "; known: " + strings.Join(allowed, ", ")
}

// blank refuses a list that was given but names nothing (" " or ","):
// it would silently mean what leaving the setting out means.
func (c Config) blank(name string, list []string, what, unset string) string {
	if len(list) == 0 && c.given[name] != "" {
		return fmt.Sprintf("names no %s, only separators; leave it unset or empty for %s", what, unset)
	}
	return ""
}

// names checks a list against the names allowed: every one known, none
// twice, and at least one unless empty is allowed.
func names(list, allowed []string, what string, emptyOK bool) string {
	if len(list) == 0 {
		if emptyOK {
			return ""
		}
		return "must name at least one " + what
	}
	var unknown []string
	for _, name := range list {
		if !slices.Contains(allowed, name) {
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	if len(unknown) > 0 {
		return fmt.Sprintf("no %s %s; known: %s", what, strings.Join(unknown, ", "), strings.Join(allowed, ", "))
	}
	return duplicate(list)
}

// duplicate names the first value a list holds twice.
func duplicate(list []string) string {
	seen := map[string]bool{}
	for _, v := range list {
		if seen[v] {
			return fmt.Sprintf("%q is listed twice", v)
		}
		seen[v] = true
	}
	return ""
}

// element says which element of a list was refused, when it is a list.
func element(v string, n int, reason string) string {
	if n == 1 {
		return reason
	}
	return fmt.Sprintf("%s: %s", v, reason)
}

// The values of GRPC_TLS.
const (
	TLSOff = "off"
	TLSOn  = "on"
)

// TLSModes are what GRPC_TLS takes, in the order a matrix runs them.
var TLSModes = []string{TLSOff, TLSOn}

// Profile is a load shape: connections, and calls in flight on each.
type Profile struct{ Connections, Streams int }

// Profiles are the six shapes of the grpcxx benchmark matrix (seed 002).
var Profiles = map[string]Profile{
	"1a": {1, 1}, "1b": {1, 10},
	"2a": {10, 1}, "2b": {10, 10},
	"3a": {100, 1}, "3b": {100, 10},
}

// ProfileNames lists the profiles in order: 1a, 1b, 2a, 2b, 3a, 3b.
func ProfileNames() []string { return slices.Sorted(maps.Keys(Profiles)) }
