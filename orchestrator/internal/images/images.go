// Package images builds what a run starts: the orchestrator's own image
// (readiness probe, conformance gate and load client), the images of the
// load tools that have their own, and each server's image for a scenario. Base images a Dockerfile
// starts FROM are made available first.
package images

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/archive"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/baseimage"
	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scratch"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sources"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stall"
)

// Builder builds the images of one repository under one image name.
type Builder struct {
	Host    Host
	Catalog catalog.Catalog
	// Name is GRPC_IMAGE_NAME, the repository every tag goes under.
	Name string
	// Peer, when set, is the run's other host: a base image this host
	// lacks and it has is copied from it rather than pulled or made again.
	Peer backend.Host
	// Arch is the host's architecture as Go names it (amd64, arm64): the
	// running binary can be the client when it is a static Linux binary of
	// that architecture.
	Arch string
	// Self is the running binary, offered as the client; "" always builds
	// the client from the repository's Dockerfile.
	Self string
	// Sources checks out the third-party sources servers pin.
	Sources sources.Fetcher
	// Memory and CPUs limit each step of a build (GRPC_BUILD_RAM,
	// GRPC_BUILD_CPUS); Stall is how long a build may go without output
	// (GRPC_BUILD_STALL) before it fails as hung, Timeout how long it may
	// take in all (GRPC_BUILD_TIMEOUT). 0 means no limit.
	Memory  int64
	CPUs    float64
	Stall   time.Duration
	Timeout time.Duration
}

// Host is what building needs of the host it builds on: the bootstrap's
// needs, and taking in an image another host saved.
type Host interface {
	baseimage.Host
	Load(ctx context.Context, image io.Reader) error
}

// ClientTag is the tag of the orchestrator's own image.
func (b Builder) ClientTag() string { return b.Name + ":client" }

// ToolTag is the tag of a tool's image.
func (b Builder) ToolTag(tool string) string { return b.Name + ":" + tool }

// ServerTag is the tag of a server's image for a scenario.
func (b Builder) ServerTag(server, scenario string) string {
	return fmt.Sprintf("%s:%s-%s", b.Name, server, scenario)
}

// clientDockerfile puts the running binary in a Debian image: the client
// containers then run exactly the code that drives them, and no run
// compiles the orchestrator again on the host.
const clientDockerfile = `FROM debian:bookworm-slim
COPY grpcbench /usr/local/bin/grpcbench
ENTRYPOINT ["grpcbench"]
`

// Client builds the client image: the running binary in a Debian image when
// it can run there (a static Linux binary of the host's architecture),
// else the orchestrator's image from the repository's Dockerfile.
func (b Builder) Client(ctx context.Context, log io.Writer) (string, error) {
	tag := b.ClientTag()
	var err error
	if b.Self != "" && Static(b.Self, b.Arch) {
		fmt.Fprintf(log, "the load client image is this binary, %s\n", b.Self)
		_, err = b.buildContext(ctx, archive.New().AddBytes("Dockerfile", []byte(clientDockerfile), 0o644).AddFile(b.Self, "grpcbench"),
			[]byte(clientDockerfile), backend.BuildOptions{Tag: tag}, log)
	} else {
		_, err = b.build(ctx, b.Catalog.Root, nil, backend.BuildOptions{Tag: tag}, log)
	}
	if err != nil {
		return "", fmt.Errorf("build the load client image %s: %w", tag, err)
	}
	return tag, nil
}

// Static says whether the file is a statically linked Linux executable of
// the architecture (as Go names it).
func Static(path, arch string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX || f.Machine != machines[arch] || f.Type != elf.ET_EXEC {
		return false
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP { // a dynamic loader: the binary needs the host's libraries
			return false
		}
	}
	return true
}

// Tool builds the image of a load tool from tools/<name>.
func (b Builder) Tool(ctx context.Context, tool string, log io.Writer) (string, error) {
	tag := b.ToolTag(tool)
	if _, err := b.build(ctx, b.Catalog.ToolDir(tool), nil, backend.BuildOptions{Tag: tag}, log); err != nil {
		return "", fmt.Errorf("build the %s image %s: %w", tool, tag, err)
	}
	return tag, nil
}

// Image is a built server image.
type Image struct {
	Tag string
	ID  string
}

// Server builds a server's image with the scenario's proto in its build
// context under scenario/ (not the payload, which only the client reads:
// scenarios sharing a proto then share the build cache), and the third-party sources its sources.json
// pins checked out under their folders.
func (b Builder) Server(ctx context.Context, server string, sc *scenario.Scenario, log io.Writer) (Image, error) {
	dir := b.Catalog.ServerDir(server)
	srcs, err := sources.Read(dir)
	if err != nil {
		return Image{}, err
	}
	trees, removeTrees, err := scratch.Dir("grpcbench-sources-")
	if err != nil {
		return Image{}, err
	}
	defer removeTrees()
	for _, src := range srcs {
		if err := b.Sources.Checkout(ctx, src, filepath.Join(trees, src.Dir), log); err != nil {
			return Image{}, fmt.Errorf("server %s: %w", server, err)
		}
	}
	// A variant runs its base's image: built once, under the base's name.
	server = b.Catalog.Base(server)
	tag := b.ServerTag(server, sc.Name)
	labels := map[string]string{"io.grpcbench.server": server, "io.grpcbench.scenario": sc.Name}
	id, err := b.build(ctx, dir, func(a *archive.Archive) {
		a.AddBytes(scenario.Dir+"/"+scenario.ProtoFile, sc.Proto, 0o644)
		for _, src := range srcs {
			a.AddDir(filepath.Join(trees, src.Dir), src.Dir)
		}
	}, backend.BuildOptions{Tag: tag, Labels: labels}, log)
	if err != nil {
		return Image{}, err
	}
	return Image{Tag: tag, ID: id}, nil
}

// build makes sure the Dockerfile's base images exist, then builds dir,
// with what extra adds, into an image.
func (b Builder) build(ctx context.Context, dir string, extra func(*archive.Archive), opts backend.BuildOptions, log io.Writer) (string, error) {
	dockerfile, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		return "", err
	}
	archive := archive.New().AddDir(dir, "")
	if extra != nil {
		extra(archive)
	}
	return b.buildContext(ctx, archive, dockerfile, opts, log)
}

// buildContext makes sure the Dockerfile's base images exist, then builds
// the archive into an image under the build limits and returns its id. A
// step that writes nothing for b.Stall (a copy between hosts, a pull, a
// base image made here, the build) is taken to hang, and all of them
// together may take b.Timeout: past either the build is cut off and fails
// with that reason.
func (b Builder) buildContext(ctx context.Context, archive *archive.Archive, dockerfile []byte, opts backend.BuildOptions, log io.Writer) (string, error) {
	ctx, watch := stall.Guard(ctx, b.Stall, b.Timeout, "the build of "+opts.Tag)
	defer watch.Stop()
	id, err := b.buildWatched(ctx, archive, dockerfile, opts, watch.Writer(log))
	return id, watch.Err(err)
}

func (b Builder) buildWatched(ctx context.Context, archive *archive.Archive, dockerfile []byte, opts backend.BuildOptions, log io.Writer) (string, error) {
	opts.Memory, opts.CPUs = b.Memory, b.CPUs
	bases := baseimage.FromImages(dockerfile)
	if err := b.copyFromPeer(ctx, bases, log); err != nil {
		return "", err
	}
	if err := baseimage.Ensure(ctx, b.Host, bases, log); err != nil {
		return "", err
	}
	buildContext, err := archive.Reader()
	if err != nil {
		return "", err
	}
	return b.Host.Build(ctx, buildContext, opts, log)
}

// copyFromPeer copies the base images the peer host has and this one
// lacks.
func (b Builder) copyFromPeer(ctx context.Context, refs []string, log io.Writer) error {
	if b.Peer == nil {
		return nil
	}
	for _, ref := range refs {
		if _, err := b.Host.ImageID(ctx, ref); !errors.Is(err, backend.ErrMissing) {
			continue
		}
		if _, err := b.Peer.ImageID(ctx, ref); err != nil {
			continue
		}
		fmt.Fprintf(log, "copying base image %s from %s\n", ref, b.Peer.Address())
		if err := b.copy(ctx, ref, log); err != nil {
			return err
		}
	}
	return nil
}

// copy copies an image of the peer into the host, as `docker save | docker
// load` does; log hears how far it got, every copyReport bytes.
func (b Builder) copy(ctx context.Context, ref string, log io.Writer) error {
	r, err := b.Peer.Save(ctx, ref)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := b.Host.Load(ctx, &copyProgress{r: r, log: log, ref: ref}); err != nil {
		return fmt.Errorf("copy %s: %w", ref, err)
	}
	return nil
}

// copyReport is how often a copy says how far it got.
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
