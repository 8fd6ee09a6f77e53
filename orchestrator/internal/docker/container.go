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
)

// ContainerSpec is a container to start.
type ContainerSpec struct {
	Image  string
	Cmd    []string
	Env    []string
	Labels map[string]string
	// NanoCPUs is the CPU quota (1e9 = one core); 0 means none.
	NanoCPUs int64
	// CPUSet pins the container to these cores ("0", "1-2"); "" means any.
	CPUSet string
	// Memory is the memory limit in bytes (swap included); 0 means none.
	Memory int64
	// NetworkOf joins the network namespace of that container, so that
	// 127.0.0.1 is the same loopback for both; NoNetwork gives the
	// container a namespace with loopback only.
	NetworkOf string
	NoNetwork bool
	// HostNetwork runs the container in its host's network namespace: a
	// load client on a machine of its own, without NAT on its path.
	HostNetwork bool
	// Publish makes container ports (TCP) reachable from other machines
	// at host ports of PublishIP, an address of the engine's host only
	// (host port 0: one the engine picks, which State reads back). The
	// container then runs on a network of its own, removed with it,
	// without NAT for what it sends out (see ownNetwork).
	Publish   map[int]int
	PublishIP string
	// Files are written into the container before it starts, by path
	// under InputDir, an anonymous volume: a read-only root file system
	// takes no copy.
	Files    map[string][]byte
	InputDir string
	// Containment: the user to run as ("" is the image's), a read-only
	// root file system with tmpfs mounts (path → options) where the
	// process writes, and a limit on processes and threads.
	User      string
	ReadOnly  bool
	Tmpfs     map[string]string
	PidsLimit int64
}

// Every container runs without capabilities or a way to gain privileges
// (nothing a benchmark does needs either), with bounded logs.
var (
	dropAll     = []string{"ALL"}
	noNewPrivs  = []string{"no-new-privileges"}
	boundedLogs = container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "10m", "max-file": "2"}}
)

// Container is a container this process started.
type Container struct {
	id     string
	engine *Engine
	// network is the container's own network, removed with it.
	network string
}

// ID is the engine's id of the container.
func (c *Container) ID() string { return c.id }

// Start creates the container, copies its files in and starts it. A
// container that was created but could not be started is removed again.
func (e *Engine) Start(ctx context.Context, spec ContainerSpec) (*Container, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	host := &container.HostConfig{
		Resources:      container.Resources{NanoCPUs: spec.NanoCPUs, CpusetCpus: spec.CPUSet, Memory: spec.Memory},
		CapDrop:        dropAll,
		SecurityOpt:    noNewPrivs,
		LogConfig:      boundedLogs,
		ReadonlyRootfs: spec.ReadOnly,
		Tmpfs:          spec.Tmpfs,
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
		var err error
		if network, err = e.ownNetwork(ctx, spec.Labels); err != nil {
			return nil, err
		}
		host.NetworkMode = container.NetworkMode(network)
	}
	if len(spec.Files) > 0 {
		host.Mounts = []mount.Mount{{Type: mount.TypeVolume, Target: spec.InputDir}}
	}
	created, err := e.api.ContainerCreate(ctx, &container.Config{
		Image:        spec.Image,
		Cmd:          spec.Cmd,
		Env:          spec.Env,
		Labels:       spec.Labels,
		User:         spec.User,
		ExposedPorts: exposed,
	}, host, nil, nil, "")
	if err != nil {
		if network != "" {
			_ = e.removeNetwork(context.WithoutCancel(ctx), network)
		}
		return nil, fmt.Errorf("create container from %s: %w", spec.Image, err)
	}
	c := &Container{id: created.ID, engine: e, network: network}
	if err := c.start(ctx, spec.InputDir, spec.Files); err != nil {
		_ = c.Remove(context.WithoutCancel(ctx))
		return nil, err
	}
	return c, nil
}

func (c *Container) start(ctx context.Context, dir string, files map[string][]byte) error {
	if len(files) > 0 {
		a := NewArchive()
		for _, name := range slices.Sorted(maps.Keys(files)) {
			rel, ok := strings.CutPrefix(name, dir+"/")
			if !ok {
				return fmt.Errorf("file %s is not under %s", name, dir)
			}
			a.AddBytes(rel, files[name], 0o644)
		}
		archive, err := a.Reader()
		if err != nil {
			return err
		}
		if err := c.engine.api.CopyToContainer(ctx, c.id, dir, archive, container.CopyToContainerOptions{}); err != nil {
			return fmt.Errorf("copy files into container %.12s: %w", c.id, err)
		}
	}
	if err := c.engine.api.ContainerStart(ctx, c.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container %.12s: %w", c.id, err)
	}
	return nil
}

// Wait blocks until the container stops and returns its exit code.
func (c *Container) Wait(ctx context.Context) (int64, error) {
	statusC, errC := c.engine.api.ContainerWait(ctx, c.id, container.WaitConditionNotRunning)
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

// State is what the engine knows of a container's process, and the host
// ports its published ports are at (container port → host port).
type State struct {
	Running   bool
	ExitCode  int
	OOMKilled bool
	Ports     map[int]int
}

// State inspects the container.
func (c *Container) State(ctx context.Context) (State, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	info, err := c.engine.api.ContainerInspect(ctx, c.id)
	if err != nil {
		return State{}, fmt.Errorf("inspect container %.12s: %w", c.id, err)
	}
	st := State{Running: info.State.Running, ExitCode: info.State.ExitCode, OOMKilled: info.State.OOMKilled, Ports: map[int]int{}}
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
	r, err := c.engine.api.ContainerLogs(ctx, c.id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: follow})
	if err != nil {
		return fmt.Errorf("logs of container %.12s: %w", c.id, err)
	}
	defer r.Close()
	if _, err := stdcopy.StdCopy(stdout, stderr, r); err != nil {
		return fmt.Errorf("logs of container %.12s: %w", c.id, err)
	}
	return nil
}

// Stats opens the engine's stats stream for the container: one JSON
// document about every second until the container stops or ctx ends.
func (c *Container) Stats(ctx context.Context) (io.ReadCloser, error) {
	r, err := c.engine.api.ContainerStats(ctx, c.id, true)
	if err != nil {
		return nil, fmt.Errorf("stats of container %.12s: %w", c.id, err)
	}
	return r.Body, nil
}

// Remove kills and removes the container.
func (c *Container) Remove(ctx context.Context) error {
	ctx, cancel := quick(ctx)
	defer cancel()
	err := c.engine.api.ContainerRemove(ctx, c.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !IsMissing(err) {
		return fmt.Errorf("remove container %.12s: %w", c.id, err)
	}
	if c.network != "" {
		return c.engine.removeNetwork(ctx, c.network)
	}
	return nil
}

// RemoveLabelled removes every container, running or not, that carries the
// label (key=value), and returns how many there were.
func (e *Engine) RemoveLabelled(ctx context.Context, key, value string) (int, error) {
	label := key + "=" + value
	listCtx, cancel := quick(ctx)
	defer cancel()
	list, err := e.api.ContainerList(listCtx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return 0, fmt.Errorf("list containers labelled %s: %w", label, err)
	}
	for _, s := range list {
		if err := (&Container{id: s.ID, engine: e}).Remove(ctx); err != nil {
			return 0, err
		}
	}
	// The networks of their own that published servers ran on.
	networks, err := e.api.NetworkList(listCtx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return 0, fmt.Errorf("list networks labelled %s: %w", label, err)
	}
	for _, n := range networks {
		if err := e.removeNetwork(ctx, n.ID); err != nil {
			return 0, err
		}
	}
	return len(list), nil
}

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
func (e *Engine) ownNetwork(ctx context.Context, labels map[string]string) (string, error) {
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	name := "grpcbench-" + hex.EncodeToString(suffix)
	if _, err := e.api.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Options: ownNetworkOptions, Labels: labels}); err != nil {
		return "", fmt.Errorf("create network %s: %w", name, err)
	}
	return name, nil
}

func (e *Engine) removeNetwork(ctx context.Context, id string) error {
	ctx, cancel := quick(ctx)
	defer cancel()
	if err := e.api.NetworkRemove(ctx, id); err != nil && !IsMissing(err) {
		return fmt.Errorf("remove network %s: %w", id, err)
	}
	return nil
}

// WatchOOM counts the kills of the kernel's OOM killer in the container's
// cgroup, of any of its processes, not only the first: a server whose
// worker was killed may live on. stop ends the watch and returns the count.
func (c *Container) WatchOOM(ctx context.Context) (stop func() int) {
	ctx, cancel := context.WithCancel(ctx)
	msgs, errs := c.engine.api.Events(ctx, events.ListOptions{Filters: filters.NewArgs(
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
