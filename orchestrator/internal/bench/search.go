package bench

import (
	"context"
	"math/rand/v2"
	"slices"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sweep"
)

// search measures the probes of a latency objective's search, after every
// other round: each probe's rate is decided on every round of the probe
// before it (sweep.Target), so probe k+1's first round waits for probe
// k's last. Each pass visits, in a random order from the run's seed, the
// servers whose probe is due (sweep.ProbeDue); rounds is each probe's
// count of rounds. stop is why the run must stop, as next says.
func (b *Bench) search(ctx context.Context, rounds int) (stop, err error) {
	for pass := 1; ; pass++ {
		var visits []record.Visit
		for ci, cell := range b.run.Cells {
			for _, srv := range cell.Servers {
				if sweep.ProbeDue(b.run, ci, srv.Name, rounds) {
					visits = append(visits, record.Visit{Cell: ci, Server: srv.Name})
				}
			}
		}
		if len(visits) == 0 {
			return nil, nil
		}
		rng := rand.New(rand.NewPCG(b.run.Seed, uint64(1)<<32|uint64(pass)))
		rng.Shuffle(len(visits), func(i, j int) { visits[i], visits[j] = visits[j], visits[i] })
		b.run.Order = append(b.run.Order, visits)
		for _, v := range visits {
			cell := b.run.Cells[v.Cell]
			srv := cell.Servers[slices.IndexFunc(cell.Servers, func(s record.Server) bool { return s.Name == v.Server })]
			if _, stop, err := b.next(ctx, v, len(srv.Rounds)+1, rounds); stop != nil || err != nil {
				return stop, err
			}
		}
	}
}
