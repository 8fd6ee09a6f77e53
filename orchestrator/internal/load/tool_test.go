package load

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// fakeTool drives the kinds it is given.
type fakeTool struct {
	name  string
	kinds []scenario.Kind
}

func (f fakeTool) Name() string                                           { return f.name }
func (fakeTool) Help() string                                             { return "a test tool" }
func (fakeTool) Image() string                                            { return "" }
func (f fakeTool) Kinds() []scenario.Kind                                 { return f.kinds }
func (fakeTool) TLS() bool                                                { return true }
func (fakeTool) OpenLoop() bool                                           { return false }
func (fakeTool) SteadyWarmup() bool                                       { return false }
func (fakeTool) Client(Spec, *scenario.Scenario) (Client, error)          { return Client{}, nil }
func (fakeTool) Parse([]byte, Spec, time.Time, time.Time) (Result, error) { return Result{}, nil }

// TestAToolRefusesAKindItDoesNotDrive: a unary tool asked for a streaming
// scenario fails with a message naming the tool, the kind and the tools
// that do drive it.
func TestAToolRefusesAKindItDoesNotDrive(t *testing.T) {
	defer func(saved []Tool) { tools = saved }(tools)
	tools = nil
	unary := fakeTool{"one", []scenario.Kind{scenario.Unary}}
	Register(unary)
	Register(fakeTool{"two", []scenario.Kind{scenario.Unary, scenario.ServerStreaming}})
	if err := Drives(unary, scenario.Unary); err != nil {
		t.Errorf("unary tool, unary scenario: %v", err)
	}
	err := Drives(unary, scenario.ServerStreaming)
	var kind *KindError
	if !errors.As(err, &kind) {
		t.Fatalf("Drives = %v, want a *KindError", err)
	}
	for _, want := range []string{"load tool one", "drives unary calls", "not server-streaming", "drive server-streaming calls: two"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// TestRegistryIsInNameOrder: help and comparisons list the tools by name,
// whatever order their packages were initialised in.
func TestRegistryIsInNameOrder(t *testing.T) {
	defer func(saved []Tool) { tools = saved }(tools)
	tools = nil
	for _, name := range []string{"h2load", "ghz", "h2"} {
		Register(fakeTool{name: name})
	}
	if got := strings.Join(Names(All()), ","); got != "ghz,h2,h2load" {
		t.Errorf("registry order %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a name registered twice was taken")
		}
	}()
	Register(fakeTool{name: "h2"})
}
