package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

const (
	ownerHost      = "io.grpcbench.owner.host"
	ownerBoot      = "io.grpcbench.owner.boot"
	ownerPID       = "io.grpcbench.owner.pid"
	ownerStart     = "io.grpcbench.owner.start"
	ownerRun       = "io.grpcbench.owner.run"
	ownerToken     = "io.grpcbench.owner.token"
	ownerDir       = "io.grpcbench.owner.dir"
	ownerContainer = "io.grpcbench.owner.container"
	ownerStarted   = "io.grpcbench.owner.started"
	// LockLabel marks a lock container; its value is the image name.
	LockLabel = "io.grpcbench.lock"
)

func ownerLabels(o backend.Owner) map[string]string {
	return map[string]string{ownerHost: o.Host, ownerBoot: o.Boot, ownerPID: strconv.Itoa(o.PID), ownerStart: strconv.FormatUint(o.Start, 10),
		ownerRun: o.Run, ownerToken: o.Token, ownerDir: o.Dir, ownerContainer: o.Container, ownerStarted: o.Started}
}

func ownerOf(labels map[string]string) backend.Owner {
	pid, _ := strconv.Atoi(labels[ownerPID])
	start, _ := strconv.ParseUint(labels[ownerStart], 10, 64)
	return backend.Owner{Host: labels[ownerHost], Boot: labels[ownerBoot], PID: pid, Start: start, Run: labels[ownerRun],
		Token: labels[ownerToken], Dir: labels[ownerDir], Container: labels[ownerContainer], Started: labels[ownerStarted]}
}

// LockedError says another live run holds the lock.
type LockedError struct {
	Name   string
	Holder backend.Owner
	Lock   string
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("another grpcbench run uses GRPC_IMAGE_NAME=%s on this engine: %s. Wait for it, or use another GRPC_IMAGE_NAME; "+
		"if no such run is going, remove the lock with `docker rm %s`", e.Name, e.Holder, e.Lock)
}

// lockImage is the image of lock containers: empty, imported on first
// use; a lock container is created, never started.
const lockImage = "grpcbench-lock:empty"

var unsafeInName = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

// LockName is the name of the lock container of an image name. A name
// with a registry path (registry.local/team/bench) has characters a
// container name cannot hold: they become _, and a hash of the whole name
// keeps a/b and a_b apart.
func LockName(image string) string {
	safe := unsafeInName.ReplaceAllString(image, "_")
	if safe == image {
		return "grpcbench-lock-" + image
	}
	sum := sha256.Sum256([]byte(image))
	return "grpcbench-lock-" + safe + "-" + hex.EncodeToString(sum[:4])
}

// Lock takes the engine-wide lock of an image name for owner: a container
// of a fixed name, which the engine creates once (a second create is
// refused), whose labels say who created it, and which no `docker volume
// prune` removes. A lock left by an owner that alive says is gone is taken
// over: removed by its id, so that a lock another taker created in the
// meantime stays, then created again, which only one taker can do. When
// owner.Container runs on this engine, its start is recorded with it.
// release removes the lock this call created, not another.
func (h *Host) Lock(ctx context.Context, name string, owner backend.Owner, alive func(context.Context, backend.Owner) bool) (release func(context.Context) error, err error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	lock := LockName(name)
	if err := h.ensureLockImage(ctx); err != nil {
		return nil, fmt.Errorf("take the lock of GRPC_IMAGE_NAME=%s: %w", name, err)
	}
	if owner.Container != "" {
		if info, err := h.api.ContainerInspect(ctx, owner.Container); err == nil && info.State != nil && info.State.Running {
			owner.Started = info.State.StartedAt
		} else {
			owner.Container = "" // a container of another engine
		}
	}
	labels := ownerLabels(owner)
	labels[LockLabel] = name
	// Each pass either takes the lock, finds a live holder, or removes a
	// dead one; takers racing for a dead one's lock may need a few.
	for range 50 {
		created, err := h.api.ContainerCreate(ctx, &container.Config{Image: lockImage, Cmd: []string{"lock"}, Labels: labels},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, lock)
		if err == nil {
			return func(ctx context.Context) error {
				ctx, cancel := quick(ctx)
				defer cancel()
				if err := h.api.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true}); err != nil && !IsMissing(err) {
					return fmt.Errorf("give back the lock %s: %w", lock, err)
				}
				return nil
			}, nil
		}
		if !cerrdefs.IsConflict(err) {
			return nil, fmt.Errorf("take the lock of GRPC_IMAGE_NAME=%s: %w", name, err)
		}
		info, err := h.api.ContainerInspect(ctx, lock)
		if IsMissing(err) {
			continue // given back in between
		} else if err != nil {
			return nil, fmt.Errorf("read the lock of GRPC_IMAGE_NAME=%s: %w", name, err)
		}
		holder := ownerOf(info.Config.Labels)
		if alive(ctx, holder) {
			return nil, &LockedError{Name: name, Holder: holder, Lock: lock}
		}
		err = h.api.ContainerRemove(ctx, info.ID, container.RemoveOptions{Force: true})
		switch {
		case cerrdefs.IsConflict(err): // another taker is removing it: wait for the name to be free
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		case err != nil && !IsMissing(err):
			return nil, fmt.Errorf("remove the lock %s of a run that is gone: %w", lock, err)
		}
	}
	return nil, fmt.Errorf("take the lock of GRPC_IMAGE_NAME=%s: other runs took it at the same moment", name)
}

// LockHeld says whether the lock of an image name is there and carries
// token: a `docker container prune` removes the lock container (it is
// never started), which the run must notice before another run takes it.
func (h *Host) LockHeld(ctx context.Context, name, token string) (bool, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	info, err := h.api.ContainerInspect(ctx, LockName(name))
	if IsMissing(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("read the lock of GRPC_IMAGE_NAME=%s: %w", name, err)
	}
	return ownerOf(info.Config.Labels).Token == token, nil
}

// ensureLockImage imports the empty image of lock containers when the
// engine lacks it.
func (h *Host) ensureLockImage(ctx context.Context) error {
	if _, err := h.api.ImageInspect(ctx, lockImage); err == nil {
		return nil
	} else if !IsMissing(err) {
		return err
	}
	var empty bytes.Buffer
	if err := tar.NewWriter(&empty).Close(); err != nil {
		return err
	}
	return h.Import(ctx, &empty, lockImage, []string{"LABEL " + LockLabel + "=image"})
}

// Started says when the container with the id started and whether it runs;
// an error that is backend.ErrMissing when the engine has no such container.
func (h *Host) Started(ctx context.Context, id string) (started string, running bool, err error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	info, err := h.api.ContainerInspect(ctx, id)
	if err != nil {
		return "", false, missing(err)
	}
	if info.State == nil {
		return "", false, nil
	}
	return info.State.StartedAt, info.State.Running, nil
}
