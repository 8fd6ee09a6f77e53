package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/grpcbench/grpcbench/orchestrator/internal/archive"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// LockLabel marks a lock container; its value is the image name.
const LockLabel = "io.grpcbench.lock"

// LockedError says another live run holds the lock.
type LockedError struct {
	Name   string
	Holder backend.Owner
	Lock   string
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("another grpcbench run uses GRPC_IMAGE_NAME=%s on this engine: %s. Wait for it, or use another GRPC_IMAGE_NAME; "+
		"if no such run is going, remove the lock with `docker rm -f %s`", e.Name, e.Holder, e.Lock)
}

// lockImage is the image of lock containers: a program that waits for
// ever (pauseProgram), imported on first use. A lock container runs it:
// `docker container prune` removes every container that does not run.
const lockImage = "grpcbench-lock:pause"

// lockProgram is where the lock image holds the program.
const lockProgram = "/pause"

var unsafeInName = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

// LockName is the name of the lock container of an image name. Names of
// one repository (grpc_bench, docker.io/library/grpc_bench) have one lock.
// A name with a registry path (registry.local/team/bench) has characters a
// container name cannot hold: they become _, and a hash of the whole name
// keeps a/b and a_b apart.
func LockName(image string) string {
	image = backend.Repository(image)
	safe := unsafeInName.ReplaceAllString(image, "_")
	if safe == image {
		return "grpcbench-lock-" + image
	}
	sum := sha256.Sum256([]byte(image))
	return "grpcbench-lock-" + safe + "-" + hex.EncodeToString(sum[:4])
}

// Lock takes the engine-wide lock of an image name for owner: a running
// container of a fixed name, which the engine creates once (a second
// create is refused), whose labels say who created it, and which neither
// `docker volume prune` nor `docker container prune` removes. A lock left
// by an owner that alive says is gone is taken over: removed by its id, so
// that a lock another taker created in the meantime stays, then created
// again, which only one taker can do. A lock of owner's own token that no
// longer runs (the engine restarted) is started again. When
// owner.Container runs on this engine, its start is recorded with it.
// release removes the lock this call took, not another.
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
		}
	}
	labels := owner.Labels()
	labels[LockLabel] = backend.Repository(name)
	// Each pass either takes the lock, finds a live holder, or removes a
	// dead one; takers racing for a dead one's lock may need a few.
	for range 50 {
		id, err := h.createLock(ctx, lock, labels)
		if err == nil {
			return h.releaseLock(lock, id), nil
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
		holder := backend.OwnerOf(info.Config.Labels)
		if owner.Token != "" && holder.Token == owner.Token { // this run's own, stopped
			if err := h.api.ContainerStart(ctx, info.ID, container.StartOptions{}); err != nil {
				return nil, fmt.Errorf("start the lock %s again: %w", lock, err)
			}
			return h.releaseLock(lock, info.ID), nil
		}
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

// lockLimits contain the lock's one process: the engine's smallest memory
// limit, and no way to start a second.
var lockLimits = container.Resources{Memory: 6 << 20, MemorySwap: 6 << 20, PidsLimit: new(int64(1))}

// lockStarts is how many times a lock is made before its start's failure
// stops the run, lockRetry the pause between: an engine just restarted
// (socket-activated, its containerd settling) has refused a new
// container's start once with "cannot start a stopped process".
const (
	lockStarts = 3
	lockRetry  = time.Second
)

// createLock creates the lock container of that name and starts it,
// again after a pause when the start fails; one that cannot start is
// removed. The engine stops it with SIGKILL, the one signal it takes.
func (h *Host) createLock(ctx context.Context, name string, labels map[string]string) (string, error) {
	for attempt := 1; ; attempt++ {
		id, err := h.createLockOnce(ctx, name, labels)
		var start *lockStartError
		if err == nil || !errors.As(err, &start) || attempt == lockStarts {
			return id, err
		}
		slog.Info("the lock did not start; trying again", "lock", name, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(lockRetry):
		}
	}
}

// lockStartError is a lock container that was made but did not start.
type lockStartError struct {
	name string
	err  error
}

func (e *lockStartError) Error() string { return fmt.Sprintf("start the lock %s: %v", e.name, e.err) }
func (e *lockStartError) Unwrap() error { return e.err }

func (h *Host) createLockOnce(ctx context.Context, name string, labels map[string]string) (string, error) {
	created, err := h.api.ContainerCreate(ctx,
		&container.Config{Image: lockImage, Cmd: []string{lockProgram}, Labels: labels, User: nobody, StopSignal: "SIGKILL"},
		&container.HostConfig{NetworkMode: "none", ReadonlyRootfs: true, CapDrop: dropAll, SecurityOpt: noNewPrivs,
			LogConfig: container.LogConfig{Type: "none"}, Resources: lockLimits}, nil, nil, name)
	if err != nil {
		return "", err
	}
	if err := h.api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		_ = h.api.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
		return "", &lockStartError{name: name, err: err}
	}
	return created.ID, nil
}

// nobody is the user of a lock container, which needs no other.
const nobody = "65534:65534"

// releaseLock removes the lock container with the id, not another of the
// same name.
func (h *Host) releaseLock(name, id string) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := quick(ctx)
		defer cancel()
		if err := h.api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}); err != nil && !IsMissing(err) {
			return fmt.Errorf("give back the lock %s: %w", name, err)
		}
		return nil
	}
}

// LockHeld says whether the lock of an image name is there, runs and
// carries token: a `docker rm` removes the lock, and an engine's restart
// stops it (a stopped lock is one `docker container prune` removes), which
// the run must notice before another run takes the engine.
func (h *Host) LockHeld(ctx context.Context, name, token string) (bool, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	info, err := h.api.ContainerInspect(ctx, LockName(name))
	if IsMissing(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("read the lock of GRPC_IMAGE_NAME=%s: %w", name, err)
	}
	return backend.OwnerOf(info.Config.Labels).Token == token && info.State != nil && info.State.Running, nil
}

// ensureLockImage imports the image of lock containers, for the engine's
// architecture, when the engine lacks it.
func (h *Host) ensureLockImage(ctx context.Context) error {
	if _, err := h.api.ImageInspect(ctx, lockImage); err == nil {
		return nil
	} else if !IsMissing(err) {
		return err
	}
	info, err := h.api.Info(ctx)
	if err != nil {
		return fmt.Errorf("engine info: %w", err)
	}
	program, err := pauseProgram(goArch(info.Architecture))
	if err != nil {
		return err
	}
	rootfs, err := archive.New().AddBytes(strings.TrimPrefix(lockProgram, "/"), program, 0o555).Reader()
	if err != nil {
		return err
	}
	return h.Import(ctx, rootfs, lockImage, []string{"LABEL " + LockLabel + "=image"})
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

// Processes are the process ids of the container's processes, as the
// engine's PID namespace numbers them.
func (h *Host) Processes(ctx context.Context, id string) ([]int, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	top, err := h.api.ContainerTop(ctx, id, nil)
	if err != nil {
		return nil, fmt.Errorf("processes of container %.12s: %w", id, missing(err))
	}
	column := slices.Index(top.Titles, "PID")
	if column < 0 {
		return nil, fmt.Errorf("processes of container %.12s: no PID column in %v", id, top.Titles)
	}
	var pids []int
	for _, p := range top.Processes {
		if column < len(p) {
			if pid, err := strconv.Atoi(p[column]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}
