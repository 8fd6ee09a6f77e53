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

// An open loop waits the grace after its window, DefaultGrace unless set,
// and each call's deadline is by default the window plus the grace; a
// closed loop runs its tail only; a negative grace or deadline is refused.
func TestGraceAndDeadline(t *testing.T) {
	s := Spec{Kind: scenario.Unary, Connections: 1, Concurrency: 1, Warmup: time.Second, Duration: 4 * time.Second, Tail: 250 * time.Millisecond}
	if s.Length() != 5250*time.Millisecond {
		t.Errorf("closed loop runs %v, want warm-up, window and tail: 5.25s", s.Length())
	}
	s.QPS = 100
	if s.CallGrace() != DefaultGrace || s.CallDeadline() != 4*time.Second+DefaultGrace || s.Length() != 5*time.Second+DefaultGrace {
		t.Errorf("open loop: grace %v, deadline %v, length %v; want %v, the window plus it, warm-up and window plus it",
			s.CallGrace(), s.CallDeadline(), s.Length(), DefaultGrace)
	}
	s.Grace, s.Deadline = 100*time.Millisecond, 20*time.Millisecond
	if s.CallGrace() != s.Grace || s.CallDeadline() != s.Deadline || s.Length() != 5250*time.Millisecond {
		t.Errorf("set: grace %v, deadline %v, length %v; want those set, and the longer tail", s.CallGrace(), s.CallDeadline(), s.Length())
	}
	s.Grace = -time.Second
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "grace -1s") {
		t.Errorf("a negative grace: %v", err)
	}
}
