// Package baseimage makes sure the images a Dockerfile starts FROM exist
// locally: present already, pulled, or, on a machine that cannot pull, built
// here by a recipe and tagged as the Dockerfile names them. The Dockerfiles
// stay the ones a user who can pull runs unchanged.
package baseimage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// Host is what the bootstrap needs of the host it builds on.
type Host interface {
	ImageID(ctx context.Context, ref string) (string, error)
	Pull(ctx context.Context, ref string, log io.Writer) error
	Import(ctx context.Context, rootfs io.Reader, ref string, changes []string) error
	Build(ctx context.Context, buildContext io.Reader, opts backend.BuildOptions, log io.Writer) (string, error)
}

// recipe builds one base image locally.
type recipe struct {
	// needs are base images the recipe itself starts from.
	needs []string
	build func(ctx context.Context, eng Host, ref string, log io.Writer) error
}

var debian = []string{"debian:bookworm-slim"}

var recipes = map[string]recipe{
	"debian:bookworm-slim":       {build: debootstrap("bookworm")},
	"debian:trixie-slim":         {build: debootstrap("trixie")},
	"golang:1.26-bookworm":       {needs: debian, build: fromHost("golang.Dockerfile", "1.26", hostGo)},
	"rust:1.95-bookworm":         {needs: debian, build: fromHost("rust.Dockerfile", "1.95", hostRust)},
	"node:20-bookworm-slim":      {needs: debian, build: fromHost("node.Dockerfile", "20", hostNode)},
	"python:3.11-slim-bookworm":  {needs: debian, build: fromHost("python.Dockerfile", "3.11", debianPackages("3.11"))},
	"maven:3-eclipse-temurin-17": {needs: debian, build: fromHost("maven.Dockerfile", "17", debianPackages("17"))},
	"eclipse-temurin:17-jre":     {needs: debian, build: fromHost("temurin-jre.Dockerfile", "17", debianPackages("17"))},
}

// Known lists the images this package can build when they cannot be pulled.
func Known() []string {
	return slices.Sorted(maps.Keys(recipes))
}

// FromImages returns the images a Dockerfile starts FROM, leaving out the
// names of its own build stages and "scratch".
func FromImages(dockerfile []byte) []string {
	stages := map[string]bool{"scratch": true}
	var refs []string
	sc := bufio.NewScanner(bytes.NewReader(dockerfile))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		args := f[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") { // --platform=...
			args = args[1:]
		}
		if len(args) == 0 {
			continue
		}
		if ref := args[0]; !stages[strings.ToLower(ref)] && !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
		if len(args) == 3 && strings.EqualFold(args[1], "AS") {
			stages[strings.ToLower(args[2])] = true
		}
	}
	return refs
}

// Ensure makes each image available: it is kept if present, else pulled,
// else built by its recipe. log receives the output of pulls and builds.
func Ensure(ctx context.Context, eng Host, refs []string, log io.Writer) error {
	for _, ref := range refs {
		if err := ensure(ctx, eng, ref, log); err != nil {
			return err
		}
	}
	return nil
}

func ensure(ctx context.Context, eng Host, ref string, log io.Writer) error {
	if _, err := eng.ImageID(ctx, ref); err == nil {
		return nil
	} else if !errors.Is(err, backend.ErrMissing) {
		return err
	}
	pullErr := eng.Pull(ctx, ref, log)
	if pullErr == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r, ok := recipes[ref]
	if !ok {
		return fmt.Errorf("base image %s is not here and cannot be pulled (%w); images this project can build itself: %s",
			ref, pullErr, strings.Join(Known(), ", "))
	}
	slog.Info("base image cannot be pulled; building it here", "image", ref, "pull_error", pullErr)
	if err := Ensure(ctx, eng, r.needs, log); err != nil {
		return err
	}
	if err := r.build(ctx, eng, ref, log); err != nil {
		return fmt.Errorf("build base image %s: %w", ref, err)
	}
	return nil
}
