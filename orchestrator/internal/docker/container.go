package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/docker/go-connections/nat"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/grpcbench/grpcbench/orchestrator/internal/archive"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// Every container runs without capabilities or a way to gain privileges
// (nothing a benchmark does needs either), with bounded logs.
var (
	dropAll     = []string{"ALL"}
	noNewPrivs  = []string{"no-new-privileges"}
	boundedLogs = container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "10m", "max-file": "2"}}
)

// Container is a container this process started.
type Container struct {
	id   string
	host *Host
	// network is the container's own network, removed with it.
	network string
}

// ID is the engine's id of the container.
func (c *Container) ID() string { return c.id }

// Start creates the container, copies its files in and starts it. A
// container that was created but could not be started is removed again.
func (h *Host) Start(ctx context.Context, spec backend.ContainerSpec) (backend.Container, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	tmpfs, err := h.tmpfs(ctx, spec)
	if err != nil {
		return nil, err
	}
	host := &container.HostConfig{
		Resources:      container.Resources{NanoCPUs: spec.NanoCPUs, CpusetCpus: spec.CPUSet, Memory: spec.Memory},
		CapDrop:        dropAll,
		SecurityOpt:    noNewPrivs,
		LogConfig:      boundedLogs,
		ReadonlyRootfs: spec.ReadOnly,
		Tmpfs:          tmpfs,
	}
	if spec.PidsLimit > 0 {
		host.PidsLimit = &spec.PidsLimit
	}
	if spec.Memory > 0 {
		host.MemorySwap = spec.Memory // no swap: a server that outgrows its limit is killed, not slowed down
	}
	switch {
	case spec.NetworkOf != "":
		host.NetworkMode = container.NetworkMode("container:" + spec.NetworkOf)
	case spec.NoNetwork:
		host.NetworkMode = "none"
	case spec.HostNetwork:
		host.NetworkMode = "host"
	}
	exposed, bindings := nat.PortSet{}, nat.PortMap{}
	for inside, outside := range spec.Publish {
		port := nat.Port(strconv.Itoa(inside) + "/tcp")
		exposed[port] = struct{}{}
		binding := nat.PortBinding{HostIP: spec.PublishIP}
		if outside != 0 {
			binding.HostPort = strconv.Itoa(outside)
		}
		bindings[port] = []nat.PortBinding{binding}
	}
	host.PortBindings = bindings
	var network string
	if len(spec.Publish) > 0 {
		if network, err = h.ownNetwork(ctx, spec.Labels); err != nil {
			return nil, err
		}
		host.NetworkMode = container.NetworkMode(network)
		host.DNS = noResolver
	}
	if len(spec.Files) > 0 {
		// Without the image's content at that path, whose owner the volume
		// would take: the files are root's, in a folder of root's.
		host.Mounts = []mount.Mount{{Type: mount.TypeVolume, Target: spec.InputDir, VolumeOptions: &mount.VolumeOptions{NoCopy: true}}}
	}
	created, err := h.api.ContainerCreate(ctx, &container.Config{
		Image:        spec.Image,
		Cmd:          spec.Cmd,
		Env:          spec.Env,
		Labels:       spec.Labels,
		User:         spec.User,
		ExposedPorts: exposed,
	}, host, nil, nil, "")
	if err != nil {
		if network != "" {
			_ = h.removeNetwork(context.WithoutCancel(ctx), network)
		}
		return nil, fmt.Errorf("create container from %s: %w", spec.Image, err)
	}
	c := &Container{id: created.ID, host: h, network: network}
	if err := c.start(ctx, spec.InputDir, spec.Files); err != nil {
		_ = c.Remove(context.WithoutCancel(ctx))
		return nil, err
	}
	return c, nil
}

// tmpfs are the container's tmpfs mounts: the spec's, and, on a read-only
// root, one over each VOLUME the image declares.
func (h *Host) tmpfs(ctx context.Context, spec backend.ContainerSpec) (map[string]string, error) {
	if !spec.ReadOnly {
		return spec.Tmpfs, nil
	}
	img, err := h.ImageConfig(ctx, spec.Image)
	if err != nil {
		return nil, err
	}
	return spec.TmpfsWith(img.Volumes), nil
}

func (c *Container) start(ctx context.Context, dir string, files map[string][]byte) error {
	if len(files) > 0 {
		a := archive.New()
		for _, name := range slices.Sorted(maps.Keys(files)) {
			rel, ok := strings.CutPrefix(name, dir+"/")
			if !ok {
				return fmt.Errorf("file %s is not under %s", name, dir)
			}
			a.AddBytes(rel, files[name], 0o644)
		}
		tar, err := a.Reader()
		if err != nil {
			return err
		}
		if err := c.host.api.CopyToContainer(ctx, c.id, dir, tar, container.CopyToContainerOptions{}); err != nil {
			return fmt.Errorf("copy files into container %.12s: %w", c.id, err)
		}
	}
	if err := c.host.api.ContainerStart(ctx, c.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container %.12s: %w", c.id, err)
	}
	return nil
}

// Wait blocks until the container stops and returns its exit code.
func (c *Container) Wait(ctx context.Context) (int64, error) {
	statusC, errC := c.host.api.ContainerWait(ctx, c.id, container.WaitConditionNotRunning)
	select {
	case st := <-statusC:
		if st.Error != nil {
			return st.StatusCode, fmt.Errorf("wait for container %.12s: %s", c.id, st.Error.Message)
		}
		return st.StatusCode, nil
	case err := <-errC:
		return 0, fmt.Errorf("wait for container %.12s: %w", c.id, err)
	}
}

// State inspects the container.
func (c *Container) State(ctx context.Context) (backend.State, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	info, err := c.host.api.ContainerInspect(ctx, c.id)
	if err != nil {
		return backend.State{}, fmt.Errorf("inspect container %.12s: %w", c.id, err)
	}
	st := backend.State{Running: info.State.Running, ExitCode: info.State.ExitCode, OOMKilled: info.State.OOMKilled, Ports: map[int]int{}}
	if info.NetworkSettings != nil {
		for port, bindings := range info.NetworkSettings.Ports {
			if len(bindings) > 0 {
				st.Ports[port.Int()], _ = strconv.Atoi(bindings[0].HostPort)
			}
		}
	}
	return st, nil
}

// Logs copies what the container wrote to stdout and stderr: so far, or,
// with follow, until it stops.
func (c *Container) Logs(ctx context.Context, follow bool, stdout, stderr io.Writer) error {
	if !follow {
		var cancel context.CancelFunc
		ctx, cancel = quick(ctx)
		defer cancel()
	}
	r, err := c.host.api.ContainerLogs(ctx, c.id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: follow})
	if err != nil {
		return fmt.Errorf("logs of container %.12s: %w", c.id, err)
	}
	defer r.Close()
	if _, err := stdcopy.StdCopy(stdout, stderr, r); err != nil {
		return fmt.Errorf("logs of container %.12s: %w", c.id, err)
	}
	return nil
}

// Stats follows the engine's stats stream for the container, one JSON
// document about every second, copied to raw as it comes, until the
// container stops or ctx ends.
func (c *Container) Stats(ctx context.Context, raw io.Writer, each func(backend.Sample)) error {
	r, err := c.host.api.ContainerStats(ctx, c.id, true)
	if err != nil {
		return fmt.Errorf("stats of container %.12s: %w", c.id, err)
	}
	defer r.Body.Close()
	if err := ReadStats(io.TeeReader(r.Body, raw), each); err != nil {
		return fmt.Errorf("stats of container %.12s: %w", c.id, err)
	}
	return nil
}

// Remove kills and removes the container.
func (c *Container) Remove(ctx context.Context) error {
	ctx, cancel := quick(ctx)
	defer cancel()
	err := c.host.api.ContainerRemove(ctx, c.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !IsMissing(err) {
		return fmt.Errorf("remove container %.12s: %w", c.id, err)
	}
	if c.network != "" {
		return c.host.removeNetwork(ctx, c.network)
	}
	return nil
}

// Reap removes every container, running or not, that carries the label
// (key=value), and the networks of their own, and returns how many
// containers there were.
func (h *Host) Reap(ctx context.Context, key, value string) (int, error) {
	label := key + "=" + value
	listCtx, cancel := quick(ctx)
	defer cancel()
	list, err := h.api.ContainerList(listCtx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return 0, fmt.Errorf("list containers labelled %s: %w", label, err)
	}
	for _, s := range list {
		if err := (&Container{id: s.ID, host: h}).Remove(ctx); err != nil {
			return 0, err
		}
	}
	// The networks of their own that published servers ran on.
	networks, err := h.api.NetworkList(listCtx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return 0, fmt.Errorf("list networks labelled %s: %w", label, err)
	}
	for _, n := range networks {
		if err := h.removeNetwork(ctx, n.ID); err != nil {
			return 0, err
		}
	}
	return len(list), nil
}

// noResolver is the upstream of the engine's DNS server (127.0.0.11) for a
// container of its own network: the engine would forward its queries to
// the host's resolvers, from the container's namespace, a way out (a
// query's name is data) that the network's options do not close. The
// container's own loopback, where nothing answers for it, takes them.
var noResolver = []string{"127.0.0.1"}

// Options of a published server's own network. The engine masquerades
// nothing the network sends out, so a packet to another machine leaves
// with the container's private source address, which nothing outside
// routes back; and containers of the network cannot reach each other.
// Port publishing still works: it rewrites the destination of incoming
// connections, and their answers, not what the container starts. (An
// internal network would cut the way out entirely, but the engine
// publishes no port of a container on one.)
var ownNetworkOptions = map[string]string{
	"com.docker.network.bridge.enable_ip_masquerade": "false",
	"com.docker.network.bridge.enable_icc":           "false",
}

// ownNetwork creates a bridge network for one container, with its labels.
func (h *Host) ownNetwork(ctx context.Context, labels map[string]string) (string, error) {
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	name := "grpcbench-" + hex.EncodeToString(suffix)
	if _, err := h.api.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Options: ownNetworkOptions, Labels: labels}); err != nil {
		return "", fmt.Errorf("create network %s: %w", name, err)
	}
	return name, nil
}

func (h *Host) removeNetwork(ctx context.Context, id string) error {
	ctx, cancel := quick(ctx)
	defer cancel()
	if err := h.api.NetworkRemove(ctx, id); err != nil && !IsMissing(err) {
		return fmt.Errorf("remove network %s: %w", id, err)
	}
	return nil
}

// WatchOOM counts the kills of the kernel's OOM killer in the container's
// cgroup, of any of its processes, not only the first: a server whose
// worker was killed may live on. stop ends the watch and returns the count.
func (c *Container) WatchOOM(ctx context.Context) (stop func() int) {
	ctx, cancel := context.WithCancel(ctx)
	msgs, errs := c.host.api.Events(ctx, events.ListOptions{Filters: filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)), filters.Arg("container", c.id), filters.Arg("event", string(events.ActionOOM)))})
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-msgs:
				n.Add(1)
			case err := <-errs: // the watch's end: cancelled, or the engine gone, whose loss the run sees elsewhere
				slog.Debug("OOM watch ended", "container", c.id, "err", err)
				return
			}
		}
	}()
	return func() int {
		cancel()
		<-done
		return int(n.Load())
	}
}
