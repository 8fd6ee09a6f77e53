package images

// Builds into a run folder: each build's log there, a server's build timed
// as a phase of the record, its failure a build-phase failure as the harness
// reports the others.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// BuildClient builds the orchestrator's own image, with its log in the run
// folder.
func BuildClient(ctx context.Context, b Builder, folder record.Folder, out progress.Reporter) (string, error) {
	out.Printf("building the load client image %s", b.ClientTag())
	out.Building("the load client image")
	log, err := folder.Create("grpcbench-build.log")
	if err != nil {
		return "", err
	}
	defer log.Close()
	tag, err := b.Client(ctx, io.MultiWriter(log, progress.StepWriter(out)))
	if err != nil {
		return "", fmt.Errorf("%w (log: %s)", err, log.Name())
	}
	return tag, nil
}

// BuildServer builds a server's image, with its log as logName in folder,
// and records the build as a phase.
func BuildServer(ctx context.Context, b Builder, name string, sc *scenario.Scenario, folder record.Folder, logName string, out progress.Reporter) (Image, record.Phase, error) {
	out.Printf("%s: building %s", name, b.ServerTag(name, sc.Name))
	out.Building(name)
	start := time.Now()
	img, err := buildServer(ctx, b, name, sc, folder, logName, progress.StepWriter(out))
	phase := record.Phase{Name: "build", Start: start, Seconds: time.Since(start).Seconds()}
	if err != nil {
		return img, phase, &record.PhaseError{Phase: "build", Err: fmt.Errorf("%w (log: %s)", err, folder.Path(logName))}
	}
	return img, phase, nil
}

func buildServer(ctx context.Context, b Builder, name string, sc *scenario.Scenario, folder record.Folder, logName string, steps io.Writer) (Image, error) {
	log, err := folder.Create(logName)
	if err != nil {
		return Image{}, err
	}
	defer log.Close()
	return b.Server(ctx, name, sc, io.MultiWriter(log, steps))
}

// BuildImages builds the client image and each server's image for every
// scenario without running anything; the first failure ends it.
func BuildImages(ctx context.Context, b, client Builder, servers []string, scenarios []*scenario.Scenario, folder record.Folder, out progress.Reporter) error {
	if _, err := BuildClient(ctx, client, folder, out); err != nil {
		return err
	}
	for _, sc := range scenarios {
		for _, name := range b.Catalog.Bases(servers) {
			sub, err := folder.Sub(name)
			if err != nil {
				return err
			}
			if _, _, err := BuildServer(ctx, b, name, sc, sub, "build-"+sc.Name+".log", out); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}
