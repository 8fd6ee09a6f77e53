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
)

// Builder builds the images of one repository under one image name.
type Builder struct {
	Engine  baseimage.Engine
	Catalog catalog.Catalog
	// Name is GRPC_IMAGE_NAME, the repository every tag goes under.
	Name string
	// Peer, when set, is the run's other engine: a base image this engine
	// lacks and it has is copied from it rather than pulled or made again.
	Peer *docker.Engine
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
// context under scenario/.
func (b Builder) Server(ctx context.Context, server string, sc *scenario.Scenario, log io.Writer) (Image, error) {
	tag := b.ServerTag(server, sc.Name)
	labels := map[string]string{"io.grpcbench.server": server, "io.grpcbench.scenario": sc.Name}
	id, err := b.build(ctx, b.Catalog.ServerDir(server), sc.Files(), docker.BuildOptions{Tag: tag, Labels: labels}, log)
	if err != nil {
		return Image{}, err
	}
	return Image{Tag: tag, ID: id}, nil
}

// build makes sure the Dockerfile's base images exist, then builds dir
// (plus extra files) into an image.
func (b Builder) build(ctx context.Context, dir string, extra map[string][]byte, opts docker.BuildOptions, log io.Writer) (string, error) {
	dockerfile, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		return "", err
	}
	bases := baseimage.FromImages(dockerfile)
	if err := b.copyFromPeer(ctx, bases, log); err != nil {
		return "", err
	}
	if err := baseimage.Ensure(ctx, b.Engine, bases, log); err != nil {
		return "", err
	}
	archive := docker.NewArchive().AddDir(dir, "")
	for name, content := range extra {
		archive.AddBytes(name, content, 0o644)
	}
	buildContext, err := archive.Reader()
	if err != nil {
		return "", err
	}
	return b.Engine.Build(ctx, buildContext, opts, log)
}

// copyFromPeer copies the base images the peer engine has and this one
// lacks.
func (b Builder) copyFromPeer(ctx context.Context, refs []string, log io.Writer) error {
	to, ok := b.Engine.(*docker.Engine)
	if b.Peer == nil || !ok {
		return nil
	}
	for _, ref := range refs {
		if _, err := b.Engine.ImageID(ctx, ref); !docker.IsMissing(err) {
			continue
		}
		if _, err := b.Peer.ImageID(ctx, ref); err != nil {
			continue
		}
		fmt.Fprintf(log, "copying base image %s from %s\n", ref, b.Peer.Host())
		if err := b.Peer.Copy(ctx, ref, to); err != nil {
			return err
		}
	}
	return nil
}
