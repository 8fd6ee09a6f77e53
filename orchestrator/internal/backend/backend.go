// Package backend is what a run needs of a host, the place its containers
// run: connect to it, read its facts, lock it for an image name, reap what
// killed runs left, check that it answers, build and copy images, start
// containers under limits and read their stats and OOM kills. Package
// docker is the one implementation; backend/fake stands in for it in unit
// tests. A backend registers the address schemes it serves.
package backend

import (
	"context"
	"errors"
	"io"
)

// Labels every container of a run carries, on any backend.
const (
	// RunLabel's value is the run's id.
	RunLabel = "io.grpcbench.run"
	// ImagesLabel holds the run's GRPC_IMAGE_NAME. Containers of an earlier
	// run with the same image name are removed when a run starts: they were
	// left by a run that was killed (two runs that build the same images
	// cannot share a host anyway), while runs under other image names are
	// left alone.
	ImagesLabel = "io.grpcbench.images"
	// RoleLabel says what a container is for (server, load, probe).
	RoleLabel = "io.grpcbench.role"
)

// Host is where containers run, and everything a run asks of it.
type Host interface {
	Images
	Containers
	// Address is where the host was reached, as given to Connect.
	Address() string
	// Local says the host is this machine (or the one whose socket is
	// mounted into the orchestrator's container): its /proc/stat is ours.
	Local() bool
	// Facts describes the host's machine.
	Facts(ctx context.Context) (Facts, error)
	// Ping says whether the host still answers, on a new connection, and
	// has not restarted since it was connected: a restart stopped every
	// container it ran.
	Ping(ctx context.Context) error
	// Lock takes the host-wide lock of an image name for owner; a lock
	// whose holder alive says is gone is taken over. release gives back the
	// lock this call took, not another.
	Lock(ctx context.Context, name string, owner Owner, alive func(context.Context, Owner) bool) (release func(context.Context) error, err error)
	// LockHeld says whether the lock of an image name is there, in force
	// and carries token.
	LockHeld(ctx context.Context, name, token string) (bool, error)
	// Started says when the container with the id started and whether it
	// runs; an error that is ErrMissing when the host has no such container.
	Started(ctx context.Context, id string) (started string, running bool, err error)
	// Processes are the process ids, as the host's own PID namespace
	// numbers them, of the processes the container with the id runs.
	Processes(ctx context.Context, id string) ([]int, error)
	// Reap removes every container, running or not, that carries the label
	// key=value, and says how many there were.
	Reap(ctx context.Context, key, value string) (int, error)
	Close() error
}

// Images is what building needs of a host.
type Images interface {
	// ImageID is the id of a local image; an error that is ErrMissing when
	// there is none.
	ImageID(ctx context.Context, ref string) (string, error)
	Pull(ctx context.Context, ref string, log io.Writer) error
	// Import creates an image from a root file system tar, applying
	// Dockerfile instructions such as CMD or ENV to it.
	Import(ctx context.Context, rootfs io.Reader, ref string, changes []string) error
	// Build builds a tar build context into an image, writing the
	// builder's output to log, and returns the image's id.
	Build(ctx context.Context, buildContext io.Reader, opts BuildOptions, log io.Writer) (string, error)
	// Save writes an image out as a tar stream that Load takes, on this
	// host or another of the same backend.
	Save(ctx context.Context, ref string) (io.ReadCloser, error)
	Load(ctx context.Context, image io.Reader) error
}

// Containers is what running servers and clients needs of a host.
type Containers interface {
	Start(ctx context.Context, spec ContainerSpec) (Container, error)
}

// Container is a started container.
type Container interface {
	ID() string
	// Wait blocks until the container stops and returns its exit code.
	Wait(ctx context.Context) (int64, error)
	State(ctx context.Context) (State, error)
	// Logs copies what the container wrote to stdout and stderr: so far,
	// or, with follow, until it stops.
	Logs(ctx context.Context, follow bool, stdout, stderr io.Writer) error
	// Stats passes each reading of the container's stats to each, about
	// once a second, until the container stops or ctx ends, and copies the
	// backend's own documents to raw as they come.
	Stats(ctx context.Context, raw io.Writer, each func(Sample)) error
	// WatchOOM counts the kills of the kernel's OOM killer in the
	// container, of any of its processes; stop ends the watch and returns
	// the count.
	WatchOOM(ctx context.Context) (stop func() int)
	// Remove kills and removes the container, and what was made for it.
	Remove(ctx context.Context) error
}

// ErrMissing is what an image or container that does not exist is.
var ErrMissing = errors.New("no such object")

// ErrUnreachable is what a host that does not answer Connect is.
var ErrUnreachable = errors.New("host unreachable")
