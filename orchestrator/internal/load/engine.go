package load

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// Engine is a load tool as the orchestrator drives it: the client container
// that runs a spec, and how to read what that container printed.
type Engine interface {
	Name() string
	// Help is one line for the settings' help: what the engine is for.
	Help() string
	// Tool names the image the client runs from: "" for the orchestrator's
	// own image, else a folder of tools/.
	Tool() string
	// Client is the client container's command and the files it needs, by
	// path, for a spec; the scenario's files are added by the caller.
	Client(spec Spec, sc *scenario.Scenario) (Client, error)
	// Parse reads the client's standard output into a Result; started and
	// ended are when the container started and stopped, on the host's clock.
	Parse(stdout []byte, spec Spec, started, ended time.Time) (Result, error)
}

// Runner is an engine that runs inside the orchestrator's own image, as
// `grpcbench loadgen`, and reports grpc-status and latency percentiles:
// the engines a benchmark may rank with.
type Runner interface {
	Engine
	Run(ctx context.Context, spec Spec) (Result, error)
}

// Client is what a client container runs.
type Client struct {
	Cmd   []string
	Files map[string][]byte
}

// engines is the registry, in the order help and comparisons list them.
var engines = []Engine{ghzEngine{}, h2Engine{}, h2loadEngine{}}

// Lookup returns the engine with the name.
func Lookup(name string) (Engine, bool) {
	i := slices.IndexFunc(engines, func(e Engine) bool { return e.Name() == name })
	if i < 0 {
		return nil, false
	}
	return engines[i], true
}

// All lists every engine.
func All() []Engine { return slices.Clone(engines) }

// Runners lists the names of the engines that run in the orchestrator's
// image: the values GRPC_LOAD_ENGINE takes.
func Runners() []string {
	var names []string
	for _, e := range engines {
		if _, ok := e.(Runner); ok {
			names = append(names, e.Name())
		}
	}
	return names
}

// Where a client container finds its files: InputDir holds them all (the
// only place a read-only container takes files), the spec as JSON, the
// scenario's folder.
const (
	InputDir    = "/input"
	SpecFile    = InputDir + "/spec.json"
	ScenarioDir = InputDir + "/scenario"
)

// loadgenClient is the client of an engine that runs as `grpcbench
// loadgen`: the spec as one JSON document, read back by ReadSpec.
func loadgenClient(engine string, spec Spec) (Client, error) {
	spec.Engine = engine
	js, err := json.Marshal(spec)
	if err != nil {
		return Client{}, fmt.Errorf("encode the load spec: %w", err)
	}
	return Client{Cmd: []string{"loadgen", "--spec", SpecFile}, Files: map[string][]byte{SpecFile: js}}, nil
}

// parseLoadgen reads the Result that `grpcbench loadgen` prints as JSON.
func parseLoadgen(stdout []byte) (Result, error) {
	var res Result
	if err := json.Unmarshal(stdout, &res); err != nil {
		return res, fmt.Errorf("read the load report: %w", err)
	}
	return res, nil
}

// ReadSpec decodes a spec written by the orchestrator.
func ReadSpec(js []byte) (Spec, error) {
	var spec Spec
	if err := json.Unmarshal(js, &spec); err != nil {
		return spec, fmt.Errorf("read the load spec: %w", err)
	}
	return spec, spec.check()
}

// check refuses a spec no engine can run, so that a bad one fails with a
// reason rather than a panic inside the client.
func (s Spec) check() error {
	switch {
	case s.Connections < 1:
		return fmt.Errorf("load spec: %d connections", s.Connections)
	case s.Concurrency < s.Connections:
		return fmt.Errorf("load spec: %d calls in flight on %d connections", s.Concurrency, s.Connections)
	case s.QPS < 0:
		return fmt.Errorf("load spec: rate %d", s.QPS)
	case s.Duration <= 0 || s.Warmup < 0 || s.Tail < 0:
		return fmt.Errorf("load spec: warm-up %s, duration %s, tail %s", s.Warmup, s.Duration, s.Tail)
	}
	return nil
}

type ghzEngine struct{}

func (ghzEngine) Name() string { return "ghz" }
func (ghzEngine) Help() string {
	return "ghz v0.120.0, as grpc_bench runs it (comparable with its published numbers)"
}
func (ghzEngine) Tool() string { return "" }
func (ghzEngine) Client(spec Spec, _ *scenario.Scenario) (Client, error) {
	return loadgenClient("ghz", spec)
}
func (ghzEngine) Parse(stdout []byte, _ Spec, _, _ time.Time) (Result, error) {
	return parseLoadgen(stdout)
}
func (ghzEngine) Run(ctx context.Context, spec Spec) (Result, error) { return GHZ(ctx, spec) }

type h2Engine struct{}

func (h2Engine) Name() string { return "h2" }
func (h2Engine) Help() string {
	return "this project's HTTP/2 engine, several times cheaper per call than ghz"
}
func (h2Engine) Tool() string { return "" }
func (h2Engine) Client(spec Spec, _ *scenario.Scenario) (Client, error) {
	return loadgenClient("h2", spec)
}
func (h2Engine) Parse(stdout []byte, _ Spec, _, _ time.Time) (Result, error) {
	return parseLoadgen(stdout)
}
func (h2Engine) Run(ctx context.Context, spec Spec) (Result, error) { return H2(ctx, spec) }

type h2loadEngine struct{}

// h2loadBody is where the request, framed, goes in the h2load container.
const h2loadBody = InputDir + "/request.grpc"

func (h2loadEngine) Name() string { return "h2load" }
func (h2loadEngine) Help() string {
	return "nghttp2's h2load, the reference for the cost per call (counts HTTP 2xx, not grpc-status)"
}
func (h2loadEngine) Tool() string { return "h2load" }
func (h2loadEngine) Client(spec Spec, sc *scenario.Scenario) (Client, error) {
	req, err := sc.RequestBytes()
	if err != nil {
		return Client{}, err
	}
	return Client{Cmd: H2LoadArgs(spec, h2loadBody, scenario.FullMethod), Files: map[string][]byte{h2loadBody: GRPCFrame(req)}}, nil
}

// Parse reads h2load's report; its window is its run less the warm-up.
func (h2loadEngine) Parse(stdout []byte, spec Spec, started, ended time.Time) (Result, error) {
	res, err := ParseH2Load(string(stdout))
	res.Start, res.End = started.Add(spec.Warmup), ended
	return res, err
}
