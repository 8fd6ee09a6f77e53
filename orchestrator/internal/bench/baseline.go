package bench

import (
	"cmp"
	"slices"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// A gate (bench --baseline REF) measures every server twice in each
// round: as the working tree has it, and as REF had it, a row of its own
// named server@REF, built from REF's servers/ and scenarios/ and tagged
// apart. The two rows of a server are visited one right after the other,
// in an order drawn for each round, so that the machine's state and the
// rest of the round are as alike for both as they can be; the rows of
// different servers are interleaved as any are.

// code is what one side of a run is built from: the catalog, the builder
// and the scenarios, and how its rows are named (ref "" for the working
// tree).
type code struct {
	catalog   catalog.Catalog
	builder   images.Builder
	scenarios map[string]*scenario.Scenario
	ref       string
}

// name is a server's row on this side.
func (c code) name(server string) string {
	if c.ref == "" {
		return server
	}
	return record.BaselineName(server, c.ref)
}

// present are the servers this side's catalog has.
func (c code) present(servers []string) []string {
	return slices.DeleteFunc(slices.Clone(servers), func(s string) bool { return !slices.Contains(c.catalog.Servers, c.catalog.Base(s)) })
}

// codes are the run's sides: the working tree, and the baseline when the
// run has one.
func (b *Bench) codes() []code {
	k := b.Kit
	codes := []code{{catalog: k.Catalog, builder: k.Builder, scenarios: k.Scenarios}}
	if bl := k.Baseline; bl != nil {
		codes = append(codes, code{catalog: bl.Catalog, builder: bl.Builder, scenarios: bl.Scenarios, ref: bl.Ref})
	}
	return codes
}

// pairVisits keeps each server's two rows of a gate together in a round's
// drawn order: at the first of them, the other follows; which comes first
// is the draw's.
func pairVisits(run record.Run, visits []record.Visit) []record.Visit {
	group := func(v record.Visit) [2]any {
		srv, _ := run.Cells[v.Cell].Server(v.Server)
		return [2]any{v.Cell, cmp.Or(srv.Of, srv.Name)}
	}
	out := make([]record.Visit, 0, len(visits))
	placed := map[[2]any]bool{}
	for _, v := range visits {
		g := group(v)
		if placed[g] {
			continue
		}
		placed[g] = true
		for _, w := range visits {
			if group(w) == g {
				out = append(out, w)
			}
		}
	}
	return out
}
