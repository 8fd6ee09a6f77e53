// Package images builds what a run starts: the orchestrator's own image
// (readiness probe, conformance gate and load client), the images of tool
// engines, and each server's image for a scenario. Base images a Dockerfile
// starts FROM are made available first.
package images

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/grpcbench/grpcbench/orchestrator/internal/baseimage"
	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/docker"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sources"
)

// Builder builds the images of one repository under one image name.
type Builder struct {
	Engine  baseimage.Engine
	Catalog catalog.Catalog
	// Name is GRPC_IMAGE_NAME, the repository every tag goes under.
	Name string
	// Sources checks out the third-party sources servers pin.
	Sources sources.Fetcher
}

// ClientTag is the tag of the orchestrator's own image.
func (b Builder) ClientTag() string { return b.Name + ":grpcbench" }

// ToolTag is the tag of a tool's image.
func (b Builder) ToolTag(tool string) string { return b.Name + ":" + tool }

// ServerTag is the tag of a server's image for a scenario.
func (b Builder) ServerTag(server, scenario string) string {
	return fmt.Sprintf("%s:%s-%s", b.Name, server, scenario)
}

// Client builds the orchestrator's own image from the repository's root.
func (b Builder) Client(ctx context.Context, log io.Writer) (string, error) {
	tag := b.ClientTag()
	if _, err := b.build(ctx, b.Catalog.Root, nil, docker.BuildOptions{Tag: tag}, log); err != nil {
		return "", fmt.Errorf("build the load client image %s: %w", tag, err)
	}
	return tag, nil
}

// Tool builds the image of a tool engine from tools/<name>.
func (b Builder) Tool(ctx context.Context, tool string, log io.Writer) (string, error) {
	tag := b.ToolTag(tool)
	if _, err := b.build(ctx, b.Catalog.ToolDir(tool), nil, docker.BuildOptions{Tag: tag}, log); err != nil {
		return "", fmt.Errorf("build the %s image %s: %w", tool, tag, err)
	}
	return tag, nil
}

// Image is a built server image.
type Image struct {
	Tag string
	ID  string
}

// Server builds a server's image with the scenario's files in its build
// context under scenario/, and the third-party sources its sources.json
// pins checked out under their folders.
func (b Builder) Server(ctx context.Context, server string, sc *scenario.Scenario, log io.Writer) (Image, error) {
	dir := b.Catalog.ServerDir(server)
	srcs, err := sources.Read(dir)
	if err != nil {
		return Image{}, err
	}
	trees, err := os.MkdirTemp("", "grpcbench-sources-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(trees)
	for _, src := range srcs {
		if err := b.Sources.Checkout(ctx, src, filepath.Join(trees, src.Dir), log); err != nil {
			return Image{}, fmt.Errorf("server %s: %w", server, err)
		}
	}
	tag := b.ServerTag(server, sc.Name)
	labels := map[string]string{"io.grpcbench.server": server, "io.grpcbench.scenario": sc.Name}
	id, err := b.build(ctx, dir, func(a *docker.Archive) {
		for name, content := range sc.Files() {
			a.AddBytes(name, content, 0o644)
		}
		for _, src := range srcs {
			a.AddDir(filepath.Join(trees, src.Dir), src.Dir)
		}
	}, docker.BuildOptions{Tag: tag, Labels: labels}, log)
	if err != nil {
		return Image{}, err
	}
	return Image{Tag: tag, ID: id}, nil
}

// build makes sure the Dockerfile's base images exist, then builds dir,
// with what extra adds, into an image.
func (b Builder) build(ctx context.Context, dir string, extra func(*docker.Archive), opts docker.BuildOptions, log io.Writer) (string, error) {
	dockerfile, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		return "", err
	}
	if err := baseimage.Ensure(ctx, b.Engine, baseimage.FromImages(dockerfile), log); err != nil {
		return "", err
	}
	archive := docker.NewArchive().AddDir(dir, "")
	if extra != nil {
		extra(archive)
	}
	buildContext, err := archive.Reader()
	if err != nil {
		return "", err
	}
	return b.Engine.Build(ctx, buildContext, opts, log)
}
