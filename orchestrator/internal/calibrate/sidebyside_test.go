package calibrate

import (
	"errors"
	"slices"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/ghz"
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/h2"
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/h2load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// TestTLSLeavesOutToolsThatCannotVerify: in a TLS cell h2load, which
// checks no chain, is not among the tools compared, and naming it is a
// refused flag (before any container), while a plaintext cell keeps it.
func TestTLSLeavesOutToolsThatCannotVerify(t *testing.T) {
	unary := &scenario.Scenario{Name: "complex_proto", Kind: scenario.Unary}
	for _, tls := range []bool{false, true} {
		c := &Comparison{Subject: "h2", Cell: record.Cell{TLS: tls}, Scenario: unary}
		tools, err := c.compared()
		if err != nil {
			t.Fatal(err)
		}
		names := load.Names(tools)
		if want := !tls; slices.Contains(names, "h2load") != want {
			t.Errorf("TLS %v: compared %v; h2load among them should be %v", tls, names, want)
		}
		_, err = c.tool("--against", "h2load")
		var bad *config.Error
		if tls != errors.As(err, &bad) {
			t.Errorf("TLS %v: --against h2load gave %v", tls, err)
		}
		if tls && (bad.Var != "--against" || bad.Allowed != "ghz, h2") {
			t.Errorf("refusal %+v, want --against with ghz, h2 allowed", bad)
		}
		// The default reference shares no code with the subject where one
		// of its own image loads the cell (h2load), else it is another.
		if want := map[bool]string{false: "h2load", true: "ghz"}[tls]; c.Reference() != want {
			t.Errorf("TLS %v: reference %s, want %s", tls, c.Reference(), want)
		}
	}
}
