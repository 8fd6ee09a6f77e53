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
	var tag string
	err := logged(folder, "grpcbench-build.log", "the load client image", out, func(log io.Writer) (err error) {
		tag, err = b.Client(ctx, log)
		return err
	})
	return tag, err
}

// BuildServer builds a server's image, with its log as logName in folder,
// and records the build as a phase.
func BuildServer(ctx context.Context, b Builder, name string, sc *scenario.Scenario, folder record.Folder, logName string, out progress.Reporter) (Image, record.Phase, error) {
	out.Printf("%s: building %s", name, b.ServerTag(name, sc.Name))
	out.Building(name)
	start := time.Now()
	var img Image
	err := logged(folder, logName, name, out, func(log io.Writer) (err error) {
		img, err = b.Server(ctx, name, sc, log)
		return err
	})
	phase := record.Phase{Name: "build", Start: start, Seconds: time.Since(start).Seconds()}
	if err != nil {
		return img, phase, &record.PhaseError{Phase: "build", Err: err}
	}
	return img, phase, nil
}

// logged runs build with its output bounded into the log logName of folder
// and its steps shown by out. Its error names the log; what the log left
// out is said in it and to out.
func logged(folder record.Folder, logName, who string, out progress.Reporter, build func(io.Writer) error) error {
	file, err := folder.Create(logName)
	if err != nil {
		return err
	}
	defer file.Close()
	log := newBoundedLog(file, progress.StepWriter(out))
	err = build(log)
	where := "log: " + file.Name()
	if note := log.Note(); note != "" {
		out.Printf("%s: %s (%s)", who, note, file.Name())
		where += "; " + note
	}
	if err != nil {
		return fmt.Errorf("%w (%s)", err, where)
	}
	return nil
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
