package load

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// Tool is a load tool as the orchestrator drives it: the client container
// that runs a spec, and how to read what that container printed. Each tool
// is a package of its own under load/ that registers itself.
type Tool interface {
	Name() string
	// Help is one line for the settings' help: what the tool is for.
	Help() string
	// Image names the image the client runs from: "" for the orchestrator's
	// own image, else a folder of tools/.
	Image() string
	// Kinds are the call kinds the tool drives.
	Kinds() []scenario.Kind
	// TLS says whether the tool loads TLS cells, verifying the server's
	// chain against the run's CA (Spec.CAFile).
	TLS() bool
	// OpenLoop says whether the tool loads open-loop at Spec.QPS: calls
	// start on a Schedule whatever the answers, and latency runs from each
	// call's intended start. Rate cells need it; a tool that paces a
	// closed loop instead (a call waits for a free slot) hides the queueing
	// a sweep is there to show.
	OpenLoop() bool
	// SteadyWarmup says whether the tool ends a warm-up by Spec.Steady, as
	// its series grows; a tool that cannot warms up for all of
	// Spec.Warmup.
	SteadyWarmup() bool
	// Client is the client container's command and the files it needs, by
	// path, for a spec; the scenario's files are added by the caller.
	Client(spec Spec, sc *scenario.Scenario) (Client, error)
	// Parse reads the client's standard output into a Result; started and
	// ended are when the container started and stopped, on the host's clock.
	Parse(stdout []byte, spec Spec, started, ended time.Time) (Result, error)
}

// Runner is a tool that runs inside the orchestrator's own image, as
// `grpcbench loadgen`, and reports grpc-status and latency percentiles:
// the tools a benchmark may rank with.
type Runner interface {
	Tool
	Run(ctx context.Context, spec Spec) (Result, error)
}

// Client is what a client container runs.
type Client struct {
	Cmd   []string
	Files map[string][]byte
}

// tools is the registry, in name order, which help and comparisons list.
var tools []Tool

// Register adds a tool to the registry; each tool's package calls it from
// init, so the binary offers the tools it imports. A name taken twice is a
// bug of the binary.
func Register(t Tool) {
	if _, ok := Lookup(t.Name()); ok {
		panic("load: tool " + t.Name() + " registered twice")
	}
	i, _ := slices.BinarySearchFunc(tools, t.Name(), func(t Tool, name string) int { return strings.Compare(t.Name(), name) })
	tools = slices.Insert(tools, i, t)
}

// Lookup returns the tool with the name.
func Lookup(name string) (Tool, bool) {
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name() == name })
	if i < 0 {
		return nil, false
	}
	return tools[i], true
}

// All lists every tool.
func All() []Tool { return slices.Clone(tools) }

// Runners lists the tools that run in the orchestrator's image: those
// GRPC_LOAD_TOOL takes.
func Runners() []Tool {
	var runners []Tool
	for _, t := range tools {
		if _, ok := t.(Runner); ok {
			runners = append(runners, t)
		}
	}
	return runners
}

// OpenLoopTool is the first tool of the registry that loads open-loop:
// the tool of rate cells.
func OpenLoopTool() (Tool, bool) {
	i := slices.IndexFunc(tools, Tool.OpenLoop)
	if i < 0 {
		return nil, false
	}
	return tools[i], true
}

// Names lists the names of tools.
func Names(tools []Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name()
	}
	return names
}

// Drives refuses a call kind the tool does not drive, naming the tools
// that do.
func Drives(t Tool, kind scenario.Kind) error {
	if slices.Contains(t.Kinds(), kind) {
		return nil
	}
	var can []string
	for _, o := range tools {
		if slices.Contains(o.Kinds(), kind) {
			can = append(can, o.Name())
		}
	}
	return &KindError{Tool: t.Name(), Kind: kind, Kinds: t.Kinds(), Drivers: can}
}

// KindError is a tool asked for a call kind it does not drive.
type KindError struct {
	Tool    string
	Kind    scenario.Kind
	Kinds   []scenario.Kind
	Drivers []string
}

func (e *KindError) Error() string {
	drivers := "none"
	if len(e.Drivers) > 0 {
		drivers = strings.Join(e.Drivers, ", ")
	}
	return fmt.Sprintf("load tool %s drives %s calls, not %s; the tools that drive %s calls: %s",
		e.Tool, kindList(e.Kinds), e.Kind, e.Kind, drivers)
}

func kindList(kinds []scenario.Kind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, " and ")
}

// Where a client container finds its files: InputDir holds them all (the
// only place a read-only container takes files), the spec as JSON, the
// scenario's folder.
const (
	InputDir    = "/input"
	SpecFile    = InputDir + "/spec.json"
	ScenarioDir = InputDir + "/scenario"
)

// Loadgen is a load tool that runs in the orchestrator's own image, as
// `grpcbench loadgen`: the spec goes in as one JSON document (ReadSpec),
// and the Result comes out as JSON on stdout. A tool of this kind is its
// name, its help, the call kinds it drives and its Run.
type Loadgen struct {
	ToolName, Text string
	Drives         []scenario.Kind
	// LoadsOpenLoop says RunLoad paces calls on a Schedule at a rate;
	// EndsWhenSteady that it ends a warm-up by Spec.Steady.
	LoadsOpenLoop, EndsWhenSteady bool
	RunLoad                       func(context.Context, Spec) (Result, error)
}

func (l Loadgen) Name() string           { return l.ToolName }
func (l Loadgen) Help() string           { return l.Text }
func (Loadgen) Image() string            { return "" }
func (l Loadgen) Kinds() []scenario.Kind { return l.Drives }

// TLS: a loadgen tool is Go's gRPC stack or h2 on crypto/tls, which both
// verify the chain.
func (Loadgen) TLS() bool { return true }

func (l Loadgen) OpenLoop() bool { return l.LoadsOpenLoop }

func (l Loadgen) SteadyWarmup() bool { return l.EndsWhenSteady }

func (l Loadgen) Run(ctx context.Context, spec Spec) (Result, error) { return l.RunLoad(ctx, spec) }

func (l Loadgen) Client(spec Spec, _ *scenario.Scenario) (Client, error) {
	spec.Tool = l.ToolName
	js, err := json.Marshal(spec)
	if err != nil {
		return Client{}, fmt.Errorf("encode the load spec: %w", err)
	}
	return Client{Cmd: []string{"loadgen", "--spec", SpecFile}, Files: map[string][]byte{SpecFile: js}}, nil
}

func (Loadgen) Parse(stdout []byte, _ Spec, _, _ time.Time) (Result, error) {
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

// check refuses a spec no tool can run, so that a bad one fails with a
// reason rather than a panic inside the client.
func (s Spec) check() error {
	switch {
	case s.Kind == "":
		return errors.New("load spec: no call kind")
	case s.Connections < 1:
		return fmt.Errorf("load spec: %d connections", s.Connections)
	case s.Concurrency < s.Connections:
		return fmt.Errorf("load spec: %d calls in flight on %d connections", s.Concurrency, s.Connections)
	case s.QPS < 0:
		return fmt.Errorf("load spec: rate %d", s.QPS)
	case s.Duration <= 0 || s.Warmup < 0 || s.Tail < 0:
		return fmt.Errorf("load spec: warm-up %s, duration %s, tail %s", s.Warmup, s.Duration, s.Tail)
	case s.Grace < 0 || s.Deadline < 0:
		return fmt.Errorf("load spec: grace %s, deadline %s", s.Grace, s.Deadline)
	}
	return nil
}

// grpcPrefixLen is the prefix of a gRPC message: a compression flag and a
// 4-byte length.
const grpcPrefixLen = 5

// GRPCFrame wraps a message in gRPC's length-prefixed framing, uncompressed.
func GRPCFrame(msg []byte) []byte {
	b := make([]byte, grpcPrefixLen+len(msg))
	binary.BigEndian.PutUint32(b[1:grpcPrefixLen], uint32(len(msg)))
	copy(b[grpcPrefixLen:], msg)
	return b
}
