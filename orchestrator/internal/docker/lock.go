package docker

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/docker/docker/api/types/volume"
)

// Owner says who holds a lock: the process, on which machine and boot.
type Owner struct {
	Host string // hostname; a container's when the run is in one
	Boot string // the kernel's boot id
	PID  int
	Run  string // the run's id
}

const (
	ownerHost = "io.grpcbench.owner.host"
	ownerBoot = "io.grpcbench.owner.boot"
	ownerPID  = "io.grpcbench.owner.pid"
	ownerRun  = "io.grpcbench.owner.run"
)

func (o Owner) labels() map[string]string {
	return map[string]string{ownerHost: o.Host, ownerBoot: o.Boot, ownerPID: strconv.Itoa(o.PID), ownerRun: o.Run}
}

func ownerOf(labels map[string]string) Owner {
	pid, _ := strconv.Atoi(labels[ownerPID])
	return Owner{Host: labels[ownerHost], Boot: labels[ownerBoot], PID: pid, Run: labels[ownerRun]}
}

func (o Owner) String() string {
	return fmt.Sprintf("run %s (pid %d on %s)", o.Run, o.PID, o.Host)
}

// LockedError says another live run holds the lock.
type LockedError struct {
	Name   string
	Holder Owner
	Volume string
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("another grpcbench run uses GRPC_IMAGE_NAME=%s on this engine: %s. Wait for it, or use another GRPC_IMAGE_NAME; "+
		"if no such run is going, remove the lock with `docker volume rm %s`", e.Name, e.Holder, e.Volume)
}

// Lock takes the engine-wide lock of an image name for owner: a volume,
// whose name the engine keeps unique and whose labels say who created it.
// A lock left by an owner that alive says is gone is taken over. release
// gives the lock back.
func (e *Engine) Lock(ctx context.Context, name string, owner Owner, alive func(context.Context, Owner) bool) (release func(context.Context) error, err error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	vol := "grpcbench-lock-" + name
	for range 2 {
		// Creating an existing volume returns it, labels and all: whoever
		// created it first holds the lock.
		v, err := e.api.VolumeCreate(ctx, volume.CreateOptions{Name: vol, Labels: owner.labels()})
		if err != nil {
			return nil, fmt.Errorf("take the lock of GRPC_IMAGE_NAME=%s: %w", name, err)
		}
		if !maps.Equal(v.Labels, owner.labels()) {
			// Docker 20.10 answers the first create of a volume it restored
			// after a restart without the volume's labels; inspect has them.
			if v, err = e.api.VolumeInspect(ctx, vol); IsMissing(err) {
				continue // released in between
			} else if err != nil {
				return nil, fmt.Errorf("read the lock of GRPC_IMAGE_NAME=%s: %w", name, err)
			}
		}
		holder := ownerOf(v.Labels)
		if maps.Equal(v.Labels, owner.labels()) {
			return func(ctx context.Context) error {
				ctx, cancel := quick(ctx)
				defer cancel()
				return e.removeLock(ctx, vol, owner.labels())
			}, nil
		}
		if alive(ctx, holder) {
			return nil, &LockedError{Name: name, Holder: holder, Volume: vol}
		}
		if err := e.removeLock(ctx, vol, v.Labels); err != nil {
			return nil, fmt.Errorf("remove the lock %s of a run that is gone: %w", vol, err)
		}
	}
	return nil, fmt.Errorf("take the lock of GRPC_IMAGE_NAME=%s: another run took it at the same moment", name)
}

// removeLock removes the lock volume if it still carries labels: a run
// that took a dead run's lock over in the meantime keeps its own.
func (e *Engine) removeLock(ctx context.Context, vol string, labels map[string]string) error {
	v, err := e.api.VolumeInspect(ctx, vol)
	if IsMissing(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !maps.Equal(v.Labels, labels) {
		return nil
	}
	if err := e.api.VolumeRemove(ctx, vol, false); err != nil && !IsMissing(err) {
		return err
	}
	return nil
}

// Running says whether a container with the id (or a prefix of it, as a
// container's hostname is) runs on the engine. An engine that cannot tell
// counts it as running: a live run's lock must not be taken.
func (e *Engine) Running(ctx context.Context, id string) bool {
	ctx, cancel := quick(ctx)
	defer cancel()
	info, err := e.api.ContainerInspect(ctx, id)
	if err != nil {
		return !IsMissing(err)
	}
	return info.State != nil && info.State.Running
}
