// Package bench is the benchmark: every server in turn built, brought up,
// measured with the run's load engine and torn down, and the run's record
// saved after each one, so that a run that dies keeps what it finished.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/suite"
)

// Bench is one benchmark run.
type Bench struct {
	Suite    *suite.Suite
	Builder  images.Builder
	Config   config.Config
	Scenario *scenario.Scenario
	Folder   report.Folder
	// Run is the record, filled as servers finish.
	Run *report.Run
	// Out receives progress for the user.
	Out io.Writer
}

// Benchmark runs every server in turn. It returns ctx's error when the run
// was interrupted; a server that fails is recorded, and the run goes on.
func (b *Bench) Benchmark(ctx context.Context, servers []string) error {
	engine, ok := load.Lookup(b.Config.LoadEngine)
	if !ok {
		return fmt.Errorf("no load engine %q", b.Config.LoadEngine)
	}
	client, err := BuildClient(ctx, b.Builder, b.Folder, b.Out)
	if err != nil {
		return err
	}
	b.Suite.ClientImage = client
	for _, name := range servers {
		if ctx.Err() != nil {
			break
		}
		b.Run.Servers = append(b.Run.Servers, b.benchmark(ctx, name, engine))
		if err := report.Save(b.Folder, *b.Run); err != nil {
			return err
		}
	}
	b.Run.Interrupted = ctx.Err() != nil
	b.Run.Finished = time.Now()
	if err := report.Save(b.Folder, *b.Run); err != nil {
		return err
	}
	return ctx.Err()
}

// BuildClient builds the orchestrator's own image, with its log in the run
// folder.
func BuildClient(ctx context.Context, b images.Builder, folder report.Folder, out io.Writer) (string, error) {
	fmt.Fprintf(out, "building the load client image %s\n", b.ClientTag())
	log, err := folder.Create("grpcbench-build.log")
	if err != nil {
		return "", err
	}
	defer log.Close()
	tag, err := b.Client(ctx, log)
	if err != nil {
		return "", fmt.Errorf("%w (log: %s)", err, log.Name())
	}
	return tag, nil
}

// BuildServer builds a server's image, with its log in folder, and records
// the build as a phase.
func BuildServer(ctx context.Context, b images.Builder, name string, sc *scenario.Scenario, folder report.Folder, out io.Writer) (images.Image, report.Phase, error) {
	fmt.Fprintf(out, "%s: building %s\n", name, b.ServerTag(name, sc.Name))
	start := time.Now()
	img, err := buildServer(ctx, b, name, sc, folder)
	phase := report.Phase{Name: "build", Start: start, Seconds: time.Since(start).Seconds()}
	if err != nil {
		return img, phase, &suite.PhaseError{Phase: "build", Err: fmt.Errorf("%w (log: %s)", err, folder.Path("build.log"))}
	}
	return img, phase, nil
}

func buildServer(ctx context.Context, b images.Builder, name string, sc *scenario.Scenario, folder report.Folder) (images.Image, error) {
	log, err := folder.Create("build.log")
	if err != nil {
		return images.Image{}, err
	}
	defer log.Close()
	return b.Server(ctx, name, sc, log)
}

// benchmark builds, brings up and measures one server.
func (b *Bench) benchmark(ctx context.Context, name string, engine load.Engine) report.Server {
	res := report.Server{Name: name, Scenario: b.Scenario.Name, Image: b.Builder.ServerTag(name, b.Scenario.Name)}
	folder, err := b.Folder.Sub(name)
	if err != nil {
		return b.fail(res, &suite.PhaseError{Phase: "setup", Err: err})
	}
	img, phase, err := BuildServer(ctx, b.Builder, name, b.Scenario, folder, b.Out)
	res.Phases = append(res.Phases, phase)
	if err != nil {
		return b.fail(res, err)
	}
	res.ImageID = img.ID
	srv, err := b.Suite.Up(ctx, b.serverSpec(name, img.Tag, folder))
	defer srv.Down(ctx)
	if err == nil {
		fmt.Fprintf(b.Out, "%s: ready; warm-up %s, then measuring %s\n", name, b.Config.Warmup, b.Config.Duration)
		res.Measurement, err = srv.Measure(ctx, engine, LoadSpec(b.Config), "load")
	}
	res.Phases = append(res.Phases, srv.Phases...)
	res.Conformance = srv.Conformance
	if err == nil && res.Load.OK == 0 {
		err = &suite.PhaseError{Phase: "load", Err: fmt.Errorf("no call succeeded (%s)", res.Load.Failures())}
	}
	if err != nil {
		return b.fail(res, err)
	}
	res.ClientBound = res.ClientSaturated(float64(b.Config.ClientCPUs))
	fmt.Fprintf(b.Out, "%s: %.0f req/s, server CPU %.1f%%, client CPU %.1f%%\n", name, res.Load.RPS, res.Server.CPUAvgPercent, res.Client.CPUAvgPercent)
	return res
}

// ServerSpec is how a server runs under the settings.
func ServerSpec(cfg config.Config, name, image string, sc *scenario.Scenario, folder report.Folder) suite.ServerSpec {
	return suite.ServerSpec{Name: name, Image: image, Scenario: sc, CPUs: cfg.ServerCPUs, RAM: cfg.ServerRAM,
		ReadyTimeout: cfg.ReadyTimeout, Folder: folder}
}

func (b *Bench) serverSpec(name, image string, folder report.Folder) suite.ServerSpec {
	return ServerSpec(b.Config, name, image, b.Scenario, folder)
}

// LoadSpec is the load the settings describe.
func LoadSpec(cfg config.Config) load.Spec {
	return load.Spec{Connections: cfg.Connections, Concurrency: cfg.Concurrency, QPS: cfg.QPS,
		Warmup: cfg.Warmup, Duration: cfg.Duration, CPUs: float64(cfg.ClientCPUs)}
}

// fail records why a server could not be ranked.
func (b *Bench) fail(res report.Server, err error) report.Server {
	f := suite.FailureOf(err)
	slog.Debug("server failed", "server", res.Name, "phase", f.Phase, "err", err)
	fmt.Fprintf(b.Out, "%s: %s failed: %s\n", res.Name, f.Phase, f.Reason)
	res.Failure = &f
	return res
}

// BuildImages builds the client image and each server's image without
// running anything; the first failure ends it.
func BuildImages(ctx context.Context, b images.Builder, servers []string, sc *scenario.Scenario, folder report.Folder, out io.Writer) error {
	if _, err := BuildClient(ctx, b, folder, out); err != nil {
		return err
	}
	for _, name := range servers {
		sub, err := folder.Sub(name)
		if err != nil {
			return err
		}
		if _, _, err := BuildServer(ctx, b, name, sc, sub, out); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
