// Package config reads the benchmark settings from the environment (and an
// optional .env file) and checks them before anything is built or started.
package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/joho/godotenv"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

// Config holds every setting of a run. The `help` tag is what a user is told
// when the value is refused, and what .env.example explains.
type Config struct {
	Duration     time.Duration `env:"GRPC_BENCHMARK_DURATION" envDefault:"20s" help:"how long the measured load runs: a positive duration such as 20s or 1m"`
	Warmup       time.Duration `env:"GRPC_BENCHMARK_WARMUP" envDefault:"5s" help:"how long the unmeasured warm-up load runs first: a positive duration such as 5s"`
	ServerCPUs   CPUs          `env:"GRPC_SERVER_CPUS" envDefault:"1" help:"CPU limit of the server container in cores: a positive number such as 1 or 1.5, at most the engine's CPU count"`
	ServerRAM    Bytes         `env:"GRPC_SERVER_RAM" envDefault:"512m" help:"memory limit of the server container: a size such as 512m or 1g, at least 64m"`
	Connections  int           `env:"GRPC_CLIENT_CONNECTIONS" envDefault:"50" help:"HTTP/2 connections the load client opens: a whole number from 1 to GRPC_CLIENT_CONCURRENCY"`
	Concurrency  int           `env:"GRPC_CLIENT_CONCURRENCY" envDefault:"1000" help:"calls in flight at once, over all connections: a whole number from 1 to 100000"`
	QPS          int           `env:"GRPC_CLIENT_QPS" envDefault:"0" help:"total request rate over all connections in requests per second; 0 means as fast as the server answers"`
	ClientCPUs   CPUs          `env:"GRPC_CLIENT_CPUS" envDefault:"1" help:"CPU limit of the load client container in cores: a positive number such as 1 or 1.5, at most the engine's CPU count"`
	Scenario     string        `env:"GRPC_REQUEST_SCENARIO" envDefault:"complex_proto" help:"the request shape: the name of a folder in scenarios/"`
	ImageName    string        `env:"GRPC_IMAGE_NAME" envDefault:"grpc_bench" help:"repository name of the images built, tagged <name>-<scenario>: lower-case letters, digits and . _ - /"`
	Benchmarks   Names         `env:"GRPC_BENCHMARKS" help:"servers to run, separated by spaces or commas: names of folders in servers/; empty means all of them"`
	ResultsDir   string        `env:"GRPC_RESULTS_DIR" envDefault:"results" help:"folder that receives one sub-folder per run"`
	ReadyTimeout time.Duration `env:"GRPC_SERVER_READY_TIMEOUT" envDefault:"60s" help:"how long a started server has to answer its first SayHello: a positive duration"`
	LoadEngine   string        `env:"GRPC_LOAD_ENGINE" envDefault:"ghz" help:"the load client: {engines}"`
	LoadProfile  string        `env:"GRPC_LOAD_PROFILE" help:"a load shape of the grpcxx benchmarks, setting connections x calls in flight per connection: 1a (1x1), 1b (1x10), 2a (10x1), 2b (10x10), 3a (100x1), 3b (100x10); empty means GRPC_CLIENT_CONNECTIONS and GRPC_CLIENT_CONCURRENCY"`
	SourceMirror string        `env:"GRPC_SOURCE_MIRROR" help:"a folder of git bundles named <repository>.bundle, from which the third-party sources that servers pin in sources.json are taken when neither the sources cache nor their URL has them; empty means none"`

	// given holds the variables as the user wrote them, so that reports and
	// messages repeat 2048m rather than 2g, and 60s rather than 1m0s.
	given map[string]string
}

// MinServerRAM is the smallest memory limit accepted: below it the runtimes
// of the catalog do not even start, and the failure would look like a crash.
const MinServerRAM = 64 << 20

// MaxConcurrency bounds the in-flight calls to a number one client can hold.
const MaxConcurrency = 100000

// Setting is one variable of the configuration with its value as text.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Help  string `json:"help"`
	// Default is the value used when the variable is not set.
	Default string `json:"default"`
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
// of dotenvPath when that file exists (the environment wins).
func Load(dotenvPath string) (Config, error) {
	vars, err := Environment(dotenvPath)
	if err != nil {
		return Config{}, err
	}
	return Parse(vars)
}

// Environment merges the .env file (if present) with the process environment.
func Environment(dotenvPath string) (map[string]string, error) {
	vars := map[string]string{}
	if dotenvPath != "" {
		fileVars, err := godotenv.Read(dotenvPath)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", dotenvPath, err)
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

// Parse builds a Config from variables; unparsable values come back as
// *Error values joined together.
func Parse(vars map[string]string) (Config, error) {
	if vars == nil {
		vars = map[string]string{} // env reads the process environment when given nil
	}
	cfg := Config{given: vars}
	err := env.ParseWithOptions(&cfg, env.Options{Environment: vars})
	if err == nil {
		return cfg, cfg.applyProfile()
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
		errs = append(errs, &Error{Var: v.name, Value: vars[v.name], Allowed: v.help, Reason: reason(pe.Err)})
	}
	return cfg, errors.Join(errs...)
}

// applyProfile puts the load profile's shape into the connection and
// concurrency settings, so that every report shows the shape in effect.
func (c *Config) applyProfile() error {
	p, ok := Profiles[c.LoadProfile]
	if !ok {
		return nil // an unknown profile is refused by Validate
	}
	for _, name := range []string{"GRPC_CLIENT_CONNECTIONS", "GRPC_CLIENT_CONCURRENCY"} {
		if v, set := c.given[name]; set && v != "" {
			return &Error{Var: "GRPC_LOAD_PROFILE", Value: c.LoadProfile, Reason: "it sets the shape, and " + name + " is set too",
				Allowed: "a profile, or GRPC_CLIENT_CONNECTIONS and GRPC_CLIENT_CONCURRENCY, not both"}
		}
	}
	c.Connections, c.Concurrency = p.Connections, p.Connections*p.Streams
	given := maps.Clone(c.given)
	given["GRPC_CLIENT_CONNECTIONS"] = strconv.Itoa(c.Connections)
	given["GRPC_CLIENT_CONCURRENCY"] = strconv.Itoa(c.Concurrency)
	c.given = given
	return nil
}

// WithProfile is the configuration under the load shape of another
// profile, for commands that compare shapes within one run.
func (c Config) WithProfile(name string) (Config, error) {
	given := maps.Clone(c.given)
	delete(given, "GRPC_CLIENT_CONNECTIONS")
	delete(given, "GRPC_CLIENT_CONCURRENCY")
	c.given, c.LoadProfile = given, name
	if _, ok := Profiles[name]; !ok {
		return c, &Error{Var: "GRPC_LOAD_PROFILE", Value: name, Reason: "no such profile", Allowed: profileNames()}
	}
	return c, c.applyProfile()
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

// Facts are what the checks need to know of the world outside the
// settings: the repository's catalog and the Docker engine's machine.
type Facts struct {
	Servers   []string // folders of servers/
	Scenarios []string // folders of scenarios/
	// EngineCPUs and EngineMemory describe the engine's host.
	EngineCPUs   int
	EngineMemory int64
}

// rule checks one setting: it returns why the value is refused, or "".
type rule struct {
	name  string
	check func(c Config, f Facts) string
}

// rules are the checks, one or more per variable, in the order the
// variables are declared.
var rules = []rule{
	{"GRPC_BENCHMARK_DURATION", func(c Config, _ Facts) string { return positive(c.Duration) }},
	{"GRPC_BENCHMARK_WARMUP", func(c Config, _ Facts) string { return positive(c.Warmup) }},
	{"GRPC_SERVER_CPUS", func(c Config, f Facts) string { return cpus(c.ServerCPUs, f) }},
	{"GRPC_SERVER_RAM", func(c Config, _ Facts) string {
		if c.ServerRAM < MinServerRAM {
			return "below 64m"
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
		if c.QPS < 0 {
			return "must not be negative"
		}
		return ""
	}},
	{"GRPC_CLIENT_CPUS", func(c Config, f Facts) string { return cpus(c.ClientCPUs, f) }},
	{"GRPC_REQUEST_SCENARIO", func(c Config, f Facts) string {
		return oneOf(c.Scenario, f.Scenarios, "no such scenario")
	}},
	{"GRPC_IMAGE_NAME", func(c Config, _ Facts) string {
		if !imageName.MatchString(c.ImageName) {
			return "not a valid image repository name"
		}
		return ""
	}},
	{"GRPC_BENCHMARKS", func(c Config, f Facts) string {
		var unknown []string
		for _, name := range c.Benchmarks {
			if !slices.Contains(f.Servers, name) {
				unknown = append(unknown, strconv.Quote(name))
			}
		}
		if len(unknown) == 0 {
			return ""
		}
		return fmt.Sprintf("no server %s; known: %s", strings.Join(unknown, ", "), strings.Join(f.Servers, ", "))
	}},
	{"GRPC_RESULTS_DIR", func(c Config, _ Facts) string {
		if strings.TrimSpace(c.ResultsDir) == "" {
			return "must not be empty"
		}
		return ""
	}},
	{"GRPC_SERVER_READY_TIMEOUT", func(c Config, _ Facts) string { return positive(c.ReadyTimeout) }},
	{"GRPC_LOAD_ENGINE", func(c Config, _ Facts) string {
		return oneOf(c.LoadEngine, load.Runners(), "no such engine")
	}},
	{"GRPC_LOAD_PROFILE", func(c Config, _ Facts) string {
		if c.LoadProfile == "" {
			return ""
		}
		return oneOf(c.LoadProfile, ProfileNames(), "no such profile")
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
}

// Validate checks every setting against its rules and the facts, and
// returns every refusal at once, as *Error values joined together.
func (c Config) Validate(f Facts) error {
	var errs []error
	for _, r := range rules {
		if reason := r.check(c, f); reason != "" {
			v := variables[r.name]
			errs = append(errs, &Error{Var: r.name, Value: c.value(r.name), Allowed: v.help, Reason: reason})
		}
	}
	return errors.Join(errs...)
}

func positive(d time.Duration) string {
	if d <= 0 {
		return "must be positive"
	}
	return ""
}

func cpus(v CPUs, f Facts) string {
	switch {
	case v <= 0:
		return "must be positive"
	case v < 0.01:
		return "below the 0.01 core Docker can enforce"
	case f.EngineCPUs > 0 && float64(v) > float64(f.EngineCPUs):
		return fmt.Sprintf("the Docker engine has %d CPUs", f.EngineCPUs)
	}
	return ""
}

func oneOf(v string, allowed []string, reason string) string {
	if slices.Contains(allowed, v) {
		return ""
	}
	return reason + "; known: " + strings.Join(allowed, ", ")
}

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

func profileNames() string { return "one of " + strings.Join(ProfileNames(), ", ") }

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
		help := strings.ReplaceAll(f.Tag.Get("help"), "{engines}", engineHelp())
		v := variable{name: name, help: help, def: def, hasDefault: hasDefault, field: i}
		list = append(list, v)
		byName[name] = v
	}
	return list, byName
}()

// engineHelp lists the engines GRPC_LOAD_ENGINE takes, from the registry.
func engineHelp() string {
	var parts []string
	for _, name := range load.Runners() {
		e, _ := load.Lookup(name)
		parts = append(parts, name+" ("+e.Help()+")")
	}
	return strings.Join(parts, " or ")
}

// Settings lists every variable with its value, in declaration order: the
// footer of bench.txt, results.json and .env.example are built from it.
func (c Config) Settings() []Setting {
	out := make([]Setting, 0, len(declared))
	for _, v := range declared {
		out = append(out, Setting{Name: v.name, Value: c.value(v.name), Help: v.help, Default: v.def})
	}
	return out
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

// ruleNames lists the variables the rules check.
func ruleNames() []string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.name
	}
	return names
}
