package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

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

// MaxConcurrency bounds the in-flight calls to a number one client can hold.
const MaxConcurrency = 100000

// MaxRounds bounds GRPC_BENCHMARK_ROUNDS.
const MaxRounds = 100

// rules are the checks, one or more per variable, in the order the
// variables are declared.
var rules = []rule{
	{"GRPC_BENCHMARK_DURATION", func(c Config, _ Facts) string { return positive(c.Duration) }},
	{"GRPC_BENCHMARK_WARMUP", func(c Config, _ Facts) string { return positive(c.Warmup) }},
	{"GRPC_BENCHMARK_ROUNDS", func(c Config, _ Facts) string {
		if c.Rounds < 1 || c.Rounds > MaxRounds {
			return fmt.Sprintf("must be from 1 to %d", MaxRounds)
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
	{"GRPC_CLIENT_CPUS", func(c Config, f Facts) string {
		if c.ClientCPUs.Auto {
			return ""
		}
		return cpus(c.ClientCPUs.CPUs, f)
	}},
	{"GRPC_REQUEST_SCENARIO", func(c Config, f Facts) string {
		return names(c.Scenarios, f.Scenarios, "scenario", false)
	}},
	{"GRPC_IMAGE_NAME", func(c Config, _ Facts) string {
		if !imageName.MatchString(c.ImageName) {
			return "not a valid image repository name"
		}
		return ""
	}},
	{"GRPC_BENCHMARKS", func(c Config, f Facts) string {
		return names(c.Benchmarks, f.Servers, "server", true)
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
	{"GRPC_CAPACITY_ENGINE", func(c Config, _ Facts) string {
		return oneOf(c.CapacityEngine, append(load.Runners(), CapacityOff), "no such engine")
	}},
	{"GRPC_LOAD_PROFILE", func(c Config, _ Facts) string {
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
}

// CapacityOff turns the capacity measurement off.
const CapacityOff = "off"

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

// ruleNames lists the variables the rules check.
func ruleNames() []string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.name
	}
	return names
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
