package docker

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// cpuPeriod is the CFS period a build's CPU quota is a share of, Docker's
// default.
const cpuPeriod = 100_000

// Build builds an image from a context with the classic builder, writing the
// builder's output to log, and returns the image id. Layers that did not
// change come from the engine's cache.
func (h *Host) Build(ctx context.Context, buildContext io.Reader, opts backend.BuildOptions, log io.Writer) (string, error) {
	args := make(map[string]*string, len(opts.BuildArgs))
	for k, v := range opts.BuildArgs {
		args[k] = &v
	}
	resp, err := h.api.ImageBuild(ctx, buildContext, build.ImageBuildOptions{
		Tags:        []string{opts.Tag},
		Dockerfile:  opts.Dockerfile,
		BuildArgs:   args,
		Labels:      opts.Labels,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
		Memory:      opts.Memory,
		MemorySwap:  opts.Memory, // no swap: a step over its limit fails rather than crawls
		CPUPeriod:   cpuPeriodOf(opts.CPUs),
		CPUQuota:    int64(opts.CPUs * cpuPeriod),
	})
	if err != nil {
		return "", fmt.Errorf("build %s: %w", opts.Tag, err)
	}
	defer resp.Body.Close()
	if err := jsonmessage.DisplayJSONMessagesStream(resp.Body, log, 0, false, nil); err != nil {
		return "", fmt.Errorf("build %s: %w", opts.Tag, err)
	}
	return h.ImageID(ctx, opts.Tag)
}

func cpuPeriodOf(cpus float64) int64 {
	if cpus <= 0 {
		return 0
	}
	return cpuPeriod
}

// ImageID returns the id of a local image, or an error that is
// backend.ErrMissing when there is none.
func (h *Host) ImageID(ctx context.Context, ref string) (string, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	img, err := h.api.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", ref, missing(err))
	}
	return img.ID, nil
}

// ImageConfig is what a local image says of the containers it runs; an
// error that is backend.ErrMissing when there is no such image.
func (h *Host) ImageConfig(ctx context.Context, ref string) (backend.ImageConfig, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	img, err := h.api.ImageInspect(ctx, ref)
	if err != nil {
		return backend.ImageConfig{}, fmt.Errorf("inspect image %s: %w", ref, missing(err))
	}
	if img.Config == nil {
		return backend.ImageConfig{}, nil
	}
	return backend.ImageConfig{Entrypoint: img.Config.Entrypoint, Cmd: img.Config.Cmd, Volumes: slices.Sorted(maps.Keys(img.Config.Volumes))}, nil
}

// IsMissing reports whether err says an image or container does not exist.
func IsMissing(err error) bool { return cerrdefs.IsNotFound(err) }

// missing makes an error of the engine that says an image or container
// does not exist a backend.ErrMissing too.
func missing(err error) error {
	if IsMissing(err) {
		return fmt.Errorf("%w: %w", backend.ErrMissing, err)
	}
	return err
}

// Pull fetches an image from its registry.
func (h *Host) Pull(ctx context.Context, ref string, log io.Writer) error {
	r, err := h.api.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	defer r.Close()
	if err := jsonmessage.DisplayJSONMessagesStream(r, log, 0, false, nil); err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	return nil
}

// Import creates an image from a root file system tar, applying Dockerfile
// instructions such as CMD or ENV to it.
func (h *Host) Import(ctx context.Context, rootfs io.Reader, ref string, changes []string) error {
	r, err := h.api.ImageImport(ctx, image.ImportSource{Source: rootfs, SourceName: "-"}, ref, image.ImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("import %s: %w", ref, err)
	}
	if err := jsonmessage.DisplayJSONMessagesStream(r, io.Discard, 0, false, nil); err != nil {
		r.Close()
		return fmt.Errorf("import %s: %w", ref, err)
	}
	return r.Close()
}

// Save writes an image out as `docker save` does, for Load on another
// engine: a base image one engine has and another lacks.
func (h *Host) Save(ctx context.Context, ref string) (io.ReadCloser, error) {
	r, err := h.api.ImageSave(ctx, []string{ref})
	if err != nil {
		return nil, fmt.Errorf("save %s: %w", ref, err)
	}
	return r, nil
}

// Load takes an image that Save wrote, as `docker load` does.
func (h *Host) Load(ctx context.Context, image io.Reader) error {
	resp, err := h.api.ImageLoad(ctx, image, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fmt.Errorf("load an image into %s: %w", h.address, err)
	}
	defer resp.Body.Close()
	if err := jsonmessage.DisplayJSONMessagesStream(resp.Body, io.Discard, 0, false, nil); err != nil {
		return fmt.Errorf("load an image into %s: %w", h.address, err)
	}
	return nil
}
