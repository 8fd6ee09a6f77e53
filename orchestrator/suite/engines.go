package suite

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/docker"
	"github.com/grpcbench/grpcbench/orchestrator/load"
	"github.com/grpcbench/grpcbench/orchestrator/scenario"
)

// Engines compared by CompareEngines, in order: this project's, ghz, and
// nghttp2's h2load as the reference.
var Engines = []string{"h2", "ghz", "h2load"}

// EngineRow is one engine's run against the shared server.
type EngineRow struct {
	Engine string `json:"engine"`
	Measurement
}

// PerCore is requests per second for each core the client kept busy: the
// engine's cost per call, whatever the server does.
func (e EngineRow) PerCore() float64 {
	if e.Client.CPUAvgPercent <= 0 {
		return 0
	}
	return e.Load.RPS / (e.Client.CPUAvgPercent / 100)
}

// CompareEngines starts one server and loads it with each engine in turn,
// all with the same settings, the client on its own cores.
func (s *Suite) CompareEngines(ctx context.Context, server string) ([]EngineRow, error) {
	images, err := s.buildEngineImages(ctx)
	if err != nil {
		return nil, err
	}
	r := s.newServerRun(server)
	defer r.removeContainers(ctx)
	srv, phase, err := r.bringUp(ctx, images.client)
	if srv != nil {
		defer r.saveServerLogs(ctx, srv)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", server, phase, err)
	}
	var rows []EngineRow
	for _, engine := range Engines {
		fmt.Fprintf(s.Out, "%s: loading with %s\n", server, engine)
		m, err := r.loadWith(ctx, srv, images, engine, engine+"-")
		if err != nil {
			return rows, fmt.Errorf("%s: %w", engine, err)
		}
		rows = append(rows, EngineRow{Engine: engine, Measurement: m})
	}
	return rows, nil
}

// engineImages are the images of the engines: ours (h2 and ghz) and h2load.
type engineImages struct{ client, h2load string }

func (s *Suite) buildEngineImages(ctx context.Context) (engineImages, error) {
	clientImage, err := s.buildClient(ctx)
	if err != nil {
		return engineImages{}, err
	}
	h2loadImage := s.Config.ImageName + ":h2load"
	if _, err := s.build(ctx, filepath.Join(s.Root, "tools", "h2load"), nil, docker.BuildOptions{Tag: h2loadImage}, io.Discard); err != nil {
		return engineImages{}, fmt.Errorf("build %s: %w", h2loadImage, err)
	}
	return engineImages{client: clientImage, h2load: h2loadImage}, nil
}

// loadWith measures the server under one engine and the run's settings;
// the engine's files are named with prefix.
func (r *serverRun) loadWith(ctx context.Context, srv Container, images engineImages, engine, prefix string) (Measurement, error) {
	if engine != "h2load" {
		return r.measure(ctx, srv, r.loadgen(srv, images.client, engine), prefix, parseLoadgen)
	}
	spec, parse, err := r.h2load(srv, images.h2load)
	if err != nil {
		return Measurement{}, err
	}
	return r.measure(ctx, srv, spec, prefix, parse)
}

// h2load is the h2load container for the run's settings, and the reader of
// its report, whose window is its run less the warm-up.
func (r *serverRun) h2load(server Container, image string) (docker.ContainerSpec, func([]byte, time.Time, time.Time) (load.Result, error), error) {
	req, err := r.Scenario.RequestBytes()
	if err != nil {
		return docker.ContainerSpec{}, nil, err
	}
	spec := load.Spec{Target: target, Connections: r.Config.Connections, Concurrency: r.Config.Concurrency,
		Warmup: r.Config.Warmup, Duration: r.Config.Duration}
	c := docker.ContainerSpec{
		Image:     image,
		Cmd:       load.H2LoadArgs(spec, "/request.grpc", scenario.FullMethod),
		Labels:    r.labels("h2load"),
		NetworkOf: server.ID(),
		Files:     map[string][]byte{"request.grpc": load.GRPCFrame(req)},
		NanoCPUs:  r.Config.ClientCPUs.NanoCPUs(),
		CPUSet:    r.Run.Placement.ClientCPUSet,
	}
	parse := func(stdout []byte, started, ended time.Time) (load.Result, error) {
		res, err := load.ParseH2Load(string(stdout))
		res.Start, res.End = started.Add(r.Config.Warmup), ended
		return res, err
	}
	return c, parse, nil
}

// WriteEngineTable prints the comparison and, last, the line tracked from
// run to run: per-core ratio: engine/ghz=<x> engine/h2load=<y>.
func WriteEngineTable(w io.Writer, rows []EngineRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\treq/s\tavg. latency\tclient cpu\tclient cpu-seconds\treq/s per client core\tserver cpu\t")
	per := map[string]float64{}
	for _, r := range rows {
		per[r.Engine] = r.PerCore()
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f ms\t%.1f%%\t%.2f\t%.0f\t%.1f%%\t\n", r.Engine, r.Load.RPS,
			float64(r.Load.Latency.Mean)/1e6, r.Client.CPUAvgPercent, r.Client.CPUSeconds, r.PerCore(), r.Server.CPUAvgPercent)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ratio := func(a, b string) string {
		if per[b] == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", per[a]/per[b])
	}
	var notes []string
	for _, r := range rows {
		if r.Load.ErrorShare() > 0 {
			notes = append(notes, fmt.Sprintf("%s: %.2f%% of calls failed (%s)", r.Engine, 100*r.Load.ErrorShare(), r.Load.Failures()))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "! "+strings.Join(notes, "\n! "))
	}
	_, err := fmt.Fprintf(w, "per-core ratio: engine/ghz=%s engine/h2load=%s\n", ratio("h2", "ghz"), ratio("h2", "h2load"))
	return err
}
