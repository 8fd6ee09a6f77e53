package docker

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
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
	// 127.0.0.1 is the same loopback for both.
	NetworkOf string
	// Files are written into the container before it starts, by path.
	Files map[string][]byte
}

// Container is a container this process started.
type Container struct {
	id     string
	engine *Engine
}

// ID is the engine's id of the container.
func (c *Container) ID() string { return c.id }

// Start creates the container, copies its files in and starts it. A
// container that was created but could not be started is removed again.
func (e *Engine) Start(ctx context.Context, spec ContainerSpec) (*Container, error) {
	host := &container.HostConfig{
		Resources: container.Resources{NanoCPUs: spec.NanoCPUs, CpusetCpus: spec.CPUSet, Memory: spec.Memory},
	}
	if spec.Memory > 0 {
		host.MemorySwap = spec.Memory // no swap: a server that outgrows its limit is killed, not slowed down
	}
	if spec.NetworkOf != "" {
		host.NetworkMode = container.NetworkMode("container:" + spec.NetworkOf)
	}
	created, err := e.api.ContainerCreate(ctx, &container.Config{
		Image:  spec.Image,
		Cmd:    spec.Cmd,
		Env:    spec.Env,
		Labels: spec.Labels,
	}, host, nil, nil, "")
	if err != nil {
		return nil, fmt.Errorf("create container from %s: %w", spec.Image, err)
	}
	c := &Container{id: created.ID, engine: e}
	if err := c.start(ctx, spec.Files); err != nil {
		_ = c.Remove(context.WithoutCancel(ctx))
		return nil, err
	}
	return c, nil
}

func (c *Container) start(ctx context.Context, files map[string][]byte) error {
	if len(files) > 0 {
		a := NewArchive()
		for _, name := range slices.Sorted(maps.Keys(files)) {
			a.AddBytes(name, files[name], 0o644)
		}
		archive, err := a.Reader()
		if err != nil {
			return err
		}
		if err := c.engine.api.CopyToContainer(ctx, c.id, "/", archive, container.CopyToContainerOptions{}); err != nil {
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

// State is what the engine knows of a container's process.
type State struct {
	Running   bool
	ExitCode  int
	OOMKilled bool
}

// State inspects the container.
func (c *Container) State(ctx context.Context) (State, error) {
	info, err := c.engine.api.ContainerInspect(ctx, c.id)
	if err != nil {
		return State{}, fmt.Errorf("inspect container %.12s: %w", c.id, err)
	}
	return State{Running: info.State.Running, ExitCode: info.State.ExitCode, OOMKilled: info.State.OOMKilled}, nil
}

// Logs copies what the container wrote to stdout and stderr: so far, or,
// with follow, until it stops.
func (c *Container) Logs(ctx context.Context, follow bool, stdout, stderr io.Writer) error {
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
	err := c.engine.api.ContainerRemove(ctx, c.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !IsMissing(err) {
		return fmt.Errorf("remove container %.12s: %w", c.id, err)
	}
	return nil
}

// RemoveLabelled removes every container, running or not, that carries the
// label (key=value), and returns how many there were.
func (e *Engine) RemoveLabelled(ctx context.Context, key, value string) (int, error) {
	label := key + "=" + value
	list, err := e.api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return 0, fmt.Errorf("list containers labelled %s: %w", label, err)
	}
	for _, s := range list {
		if err := (&Container{id: s.ID, engine: e}).Remove(ctx); err != nil {
			return 0, err
		}
	}
	return len(list), nil
}
