package docker

import (
	"context"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
)

// BuildOptions names the image to build and how.
type BuildOptions struct {
	Tag        string
	Dockerfile string // path inside the context; "" means Dockerfile
	BuildArgs  map[string]string
	Labels     map[string]string
	// Memory (bytes, swap included) and CPUs (cores) limit the container
	// of each step; 0 means none. The classic builder takes no limit on
	// processes.
	Memory int64
	CPUs   float64
}

// cpuPeriod is the CFS period a build's CPU quota is a share of, Docker's
// default.
const cpuPeriod = 100_000

// Build builds an image from a context with the classic builder, writing the
// builder's output to log, and returns the image id. Layers that did not
// change come from the engine's cache.
func (e *Engine) Build(ctx context.Context, buildContext io.Reader, opts BuildOptions, log io.Writer) (string, error) {
	args := make(map[string]*string, len(opts.BuildArgs))
	for k, v := range opts.BuildArgs {
		args[k] = &v
	}
	resp, err := e.api.ImageBuild(ctx, buildContext, build.ImageBuildOptions{
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
	return e.ImageID(ctx, opts.Tag)
}

func cpuPeriodOf(cpus float64) int64 {
	if cpus <= 0 {
		return 0
	}
	return cpuPeriod
}

// ImageID returns the id of a local image, or an error that IsMissing
// recognises when there is none.
func (e *Engine) ImageID(ctx context.Context, ref string) (string, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	img, err := e.api.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return img.ID, nil
}

// IsMissing reports whether err says an image or container does not exist.
func IsMissing(err error) bool { return cerrdefs.IsNotFound(err) }

// Pull fetches an image from its registry.
func (e *Engine) Pull(ctx context.Context, ref string, log io.Writer) error {
	r, err := e.api.ImagePull(ctx, ref, image.PullOptions{})
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
func (e *Engine) Import(ctx context.Context, rootfs io.Reader, ref string, changes []string) error {
	r, err := e.api.ImageImport(ctx, image.ImportSource{Source: rootfs, SourceName: "-"}, ref, image.ImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("import %s: %w", ref, err)
	}
	if err := jsonmessage.DisplayJSONMessagesStream(r, io.Discard, 0, false, nil); err != nil {
		r.Close()
		return fmt.Errorf("import %s: %w", ref, err)
	}
	return r.Close()
}

// Copy copies an image of this engine into another, as `docker save | docker
// load` does: for a base image one engine has and another lacks. log hears
// how far it got, every copyReport bytes.
func (e *Engine) Copy(ctx context.Context, ref string, to *Engine, log io.Writer) error {
	r, err := e.api.ImageSave(ctx, []string{ref})
	if err != nil {
		return fmt.Errorf("save %s: %w", ref, err)
	}
	defer r.Close()
	counted := &copyProgress{r: r, log: log, ref: ref}
	resp, err := to.api.ImageLoad(ctx, counted, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fmt.Errorf("load %s into %s: %w", ref, to.host, err)
	}
	defer resp.Body.Close()
	if err := jsonmessage.DisplayJSONMessagesStream(resp.Body, io.Discard, 0, false, nil); err != nil {
		return fmt.Errorf("load %s into %s: %w", ref, to.host, err)
	}
	return nil
}

// copyReport is how often Copy says how far it got.
const copyReport = 64 << 20

// copyProgress counts what an image copy has read, and says so now and
// then: the only output of a long copy, for its stall detector.
type copyProgress struct {
	r        io.Reader
	log      io.Writer
	ref      string
	n, noted int64
}

func (c *copyProgress) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	if c.n-c.noted >= copyReport {
		c.noted = c.n
		fmt.Fprintf(c.log, "copying %s: %d MiB\n", c.ref, c.n>>20)
	}
	return n, err
}
