package suite

import (
	"context"
	"io"
	"time"

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
	Logs(ctx context.Context, follow bool, stdout, stderr io.Writer) error
	Stats(ctx context.Context) (io.ReadCloser, error)
	WatchOOM(ctx context.Context) (stop func() int)
	Remove(ctx context.Context) error
}

// Observer hears what a server is doing, for a progress display.
type Observer interface {
	// Phase says what the server is doing; d is how long a timed phase
	// lasts, 0 for the others.
	Phase(name string, d time.Duration)
	// Rate is the live rate of OK calls while a load runs.
	Rate(rps float64)
}

type noObserver struct{}

func (noObserver) Phase(string, time.Duration) {}
func (noObserver) Rate(float64)                {}

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
