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
	LoadEngine   string        `env:"GRPC_LOAD_ENGINE" envDefault:"ghz" help:"the load client: ghz (as grpc_bench, comparable with its published numbers) or h2 (this project's HTTP/2 engine, several times cheaper per call)"`
	LoadProfile  string        `env:"GRPC_LOAD_PROFILE" help:"a load shape of the grpcxx benchmarks, setting connections x calls in flight per connection: 1a (1x1), 1b (1x10), 2a (10x1), 2b (10x10), 3a (100x1), 3b (100x10); empty means GRPC_CLIENT_CONNECTIONS and GRPC_CLIENT_CONCURRENCY"`

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
		f, _ := reflect.TypeOf(cfg).FieldByName(pe.Name)
		name := f.Tag.Get("env")
		errs = append(errs, &Error{Var: name, Value: vars[name], Allowed: f.Tag.Get("help"), Reason: reason(pe.Err)})
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

// Catalog is what the checks need to know of the world outside the settings.
type Catalog struct {
	Servers   []string // folders of servers/
	Scenarios []string // folders of scenarios/
}

// Validate checks the values that parsed against the allowed ranges and the
// catalog. engineCPUs is the CPU count of the Docker engine; 0 skips the
// checks that need it (used before the engine has been asked).
func (c Config) Validate(cat Catalog, engineCPUs int) error {
	var errs []error
	refuse := func(field, reasonText string) {
		f, _ := reflect.TypeOf(c).FieldByName(field)
		name := f.Tag.Get("env")
		errs = append(errs, &Error{Var: name, Value: c.value(field), Allowed: f.Tag.Get("help"), Reason: reasonText})
	}
	if c.Duration <= 0 {
		refuse("Duration", "must be positive")
	}
	if c.Warmup <= 0 {
		refuse("Warmup", "must be positive")
	}
	if c.ReadyTimeout <= 0 {
		refuse("ReadyTimeout", "must be positive")
	}
	for _, cpu := range []struct {
		field string
		v     CPUs
	}{{"ServerCPUs", c.ServerCPUs}, {"ClientCPUs", c.ClientCPUs}} {
		switch {
		case cpu.v <= 0:
			refuse(cpu.field, "must be positive")
		case cpu.v < 0.01:
			refuse(cpu.field, "below the 0.01 core Docker can enforce")
		case engineCPUs > 0 && float64(cpu.v) > float64(engineCPUs):
			refuse(cpu.field, fmt.Sprintf("the Docker engine has %d CPUs", engineCPUs))
		}
	}
	if c.ServerRAM < MinServerRAM {
		refuse("ServerRAM", "below 64m")
	}
	switch {
	case c.Concurrency < 1:
		refuse("Concurrency", "must be at least 1")
	case c.Concurrency > MaxConcurrency:
		refuse("Concurrency", "more than 100000")
	}
	switch {
	case c.Connections < 1:
		refuse("Connections", "must be at least 1")
	case c.Concurrency >= 1 && c.Connections > c.Concurrency:
		refuse("Connections", fmt.Sprintf("more connections than GRPC_CLIENT_CONCURRENCY=%d calls to put on them", c.Concurrency))
	}
	if c.QPS < 0 {
		refuse("QPS", "must not be negative")
	}
	if !slices.Contains(cat.Scenarios, c.Scenario) {
		refuse("Scenario", "no such scenario; known: "+strings.Join(cat.Scenarios, ", "))
	}
	if !imageName.MatchString(c.ImageName) {
		refuse("ImageName", "not a valid image repository name")
	}
	for _, name := range c.Benchmarks {
		if !slices.Contains(cat.Servers, name) {
			refuse("Benchmarks", fmt.Sprintf("no server %q; known: %s", name, strings.Join(cat.Servers, ", ")))
		}
	}
	if !slices.Contains(LoadEngines, c.LoadEngine) {
		refuse("LoadEngine", "no such engine")
	}
	if _, ok := Profiles[c.LoadProfile]; !ok && c.LoadProfile != "" {
		refuse("LoadProfile", "no such profile")
	}
	if strings.TrimSpace(c.ResultsDir) == "" {
		refuse("ResultsDir", "must not be empty")
	}
	return errors.Join(errs...)
}

// LoadEngines are the values GRPC_LOAD_ENGINE takes.
var LoadEngines = []string{"ghz", "h2"}

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

// Servers is the list of servers this run benchmarks, in catalog order.
func (c Config) Servers(cat Catalog) []string {
	if len(c.Benchmarks) == 0 {
		return cat.Servers
	}
	return c.Benchmarks
}

// Settings lists every variable with its value, in declaration order: the
// footer of bench.txt, results.json and .env.example are built from it.
func (c Config) Settings() []Setting {
	t := reflect.TypeOf(c)
	out := make([]Setting, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		out = append(out, Setting{
			Name:    f.Tag.Get("env"),
			Value:   c.value(f.Name),
			Help:    f.Tag.Get("help"),
			Default: f.Tag.Get("envDefault"),
		})
	}
	return out
}

func (c Config) value(field string) string {
	f, _ := reflect.TypeOf(c).FieldByName(field)
	if v, ok := c.given[f.Tag.Get("env")]; ok {
		return v
	}
	if d, ok := f.Tag.Lookup("envDefault"); ok && c.given != nil {
		return d
	}
	v := reflect.ValueOf(c).FieldByName(field).Interface()
	if s, ok := v.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(v)
}
