package session

import (
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/harness"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scratch"
)

// Kit is what every command that starts servers works with, built once
// per run: the settings, the catalog and the compiled scenarios, the run's
// folder, the builders of the servers' and the clients' hosts, and the
// harness that brings servers up, its client image built.
type Kit struct {
	Config    config.Config
	Catalog   catalog.Catalog
	Scenarios map[string]*scenario.Scenario
	Folder    record.Folder
	// Builder builds the servers' images on the servers' host,
	// ClientBuilder the clients' on theirs.
	Builder, ClientBuilder images.Builder
	Harness                *harness.Harness
	// HostStat is the servers' host's /proc/stat for its CPU steal; ""
	// when that host is another machine.
	HostStat string
	// Alive says whether every host still answers; Held, before each
	// round, whether the run still holds its locks (taking back one that
	// was removed). Nil checks nothing.
	Alive, Held func(context.Context) error
	// Baseline, when set, is the code a gate measures beside the working
	// tree (bench --baseline).
	Baseline *Baseline
}

// Baseline is a git ref's servers and scenarios, extracted, compiled, and
// the builder that tags their images apart from the working tree's.
type Baseline struct {
	record.Baseline
	Catalog   catalog.Catalog
	Scenarios map[string]*scenario.Scenario
	Builder   images.Builder
}

// baselineOf is the code a run measures beside the working tree: the
// servers/ and scenarios/ of cat's repository as git ref base.Ref had them
// (at base.Commit when set: a resumed run's), in a temporary folder that
// remove takes away, and the run's scenarios compiled from them. A ref
// that is no commit, or one without a scenario of the run, is bad input.
func baselineOf(ctx context.Context, cat catalog.Catalog, scenarios []string, base record.Baseline) (b *Baseline, remove func(), err error) {
	dir, remove, err := scratch.Dir("grpcbench-baseline-")
	if err != nil {
		return nil, nil, err
	}
	ref := base.Ref
	at, commit, err := catalog.At(ctx, cat.Root, cmp.Or(base.Commit, ref), dir)
	if err != nil {
		remove()
		return nil, nil, &config.Error{Var: "--baseline", Value: ref, Reason: err.Error(), Allowed: "a git ref of the repository's history whose servers/ and scenarios/ catalog reads"}
	}
	base.Commit = commit
	b = &Baseline{Baseline: base, Catalog: at, Scenarios: map[string]*scenario.Scenario{}}
	for _, name := range scenarios {
		sc, err := at.Scenario(ctx, name)
		if err != nil {
			remove()
			return nil, nil, &config.Error{Var: "--baseline", Value: ref, Reason: fmt.Sprintf("scenario %s at %s: %v", name, ref, err), Allowed: "a ref that has the run's scenarios"}
		}
		b.Scenarios[name] = sc
	}
	return b, remove, nil
}

// Baseline is what the run measures beside the working tree, nil for
// none.
func (s *Session) Baseline() *record.Baseline {
	if s.baseline == nil {
		return nil
	}
	return &s.baseline.Baseline
}

// Kit builds the client image, and the images of the load tools named,
// and sets the harness up with them; observer, when not nil, hears what each
// server is doing.
func (s *Session) Kit(ctx context.Context, out progress.Reporter, observer harness.Observer, tools ...string) (*Kit, error) {
	k := &Kit{Config: s.Config, Catalog: s.Catalog, Scenarios: s.Scenarios, Folder: s.Folder,
		HostStat: s.hostStat(), Alive: s.Alive, Held: s.Held}
	k.Builder, k.ClientBuilder = s.Builders()
	if b := s.baseline; b != nil {
		k.Baseline = &Baseline{Baseline: b.Baseline, Catalog: b.Catalog, Scenarios: b.Scenarios, Builder: k.Builder}
		k.Baseline.Builder.Catalog, k.Baseline.Builder.Suffix = b.Catalog, "-at-"+b.Commit[:min(12, len(b.Commit))]
	}
	client, err := images.BuildClient(ctx, k.ClientBuilder, s.Folder, out)
	if err != nil {
		return nil, err
	}
	opts := s.suiteOptions()
	opts.Images, opts.Observer = harness.Images{Client: client, Tools: map[string]string{}}, observer
	for _, t := range tools {
		if opts.Images.Tools[t], err = k.ClientBuilder.Tool(ctx, t, io.Discard); err != nil {
			return nil, err
		}
	}
	k.Harness = harness.New(opts)
	return k, nil
}

// ServerSpec is how the server name runs in a cell under scenario sc,
// from image, its logs and its clients' files in folder.
func (k *Kit) ServerSpec(cell record.Cell, sc *scenario.Scenario, name, image string, folder record.Folder) harness.ServerSpec {
	return harness.ServerSpec{Name: name, Image: image, Env: k.Catalog.Env(name), Scenario: sc,
		CPUs: config.CPUs(cell.ServerCPUs), ClientCPUs: config.CPUs(cell.ClientCPUs), RAM: k.Config.ServerRAM, ReadyTimeout: k.Config.ReadyTimeout,
		Placement: cell.Placement, Folder: folder, TLS: cell.TLS}
}
