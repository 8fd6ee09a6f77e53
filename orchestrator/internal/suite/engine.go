package suite

import (
	"context"
	"io"

	"github.com/grpcbench/grpcbench/orchestrator/internal/docker"
)

// Engine is what the suite needs of Docker: containers.
type Engine interface {
	Start(ctx context.Context, spec docker.ContainerSpec) (Container, error)
}

// Container is a started container.
type Container interface {
	ID() string
	Wait(ctx context.Context) (int64, error)
	State(ctx context.Context) (docker.State, error)
	Logs(ctx context.Context, stdout, stderr io.Writer) error
	Stats(ctx context.Context) (io.ReadCloser, error)
	Remove(ctx context.Context) error
}

// Docker adapts a Docker engine to the suite's Engine.
func Docker(e *docker.Engine) Engine { return dockerEngine{e} }

type dockerEngine struct{ *docker.Engine }

func (d dockerEngine) Start(ctx context.Context, spec docker.ContainerSpec) (Container, error) {
	c, err := d.Engine.Start(ctx, spec)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return c, nil
}
