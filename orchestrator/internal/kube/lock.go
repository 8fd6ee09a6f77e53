package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// LockedError says another live run holds the lock.
type LockedError struct {
	Name      string
	Holder    backend.Owner
	Namespace string
	Lease     string
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("another grpcbench run uses GRPC_IMAGE_NAME=%s on this cluster: %s. Wait for it, or use another GRPC_IMAGE_NAME; "+
		"if no such run is going, remove the lock with `kubectl -n %s delete lease %s`", e.Name, e.Holder, e.Namespace, e.Lease)
}

// LeaseName is the name of the Lease that is the lock of an image name:
// names of one repository (grpc_bench, docker.io/library/grpc_bench)
// have one; what a Lease's name cannot hold becomes -, and a hash of the
// repository keeps a_b and a-b apart.
func LeaseName(image string) string {
	repo := backend.Repository(image)
	safe := strings.Trim(unsafeInName.ReplaceAllString(strings.ToLower(repo), "-"), "-")
	sum := sha256.Sum256([]byte(repo))
	if len(safe) > 200 {
		safe = safe[:200]
	}
	return "grpcbench-lock-" + safe + "-" + hex.EncodeToString(sum[:4])
}

// Lock takes the lock of an image name for owner on the cluster and on
// the builder, whose images carry the name too: a Lease in the backend's
// namespace, held by the owner's token, with the owner in its
// annotations. A Lease of a holder that alive says is gone is taken over
// by an update of the version read, which only one taker can make. The
// Lease is not renewed and has no duration: like the Docker engine's
// lock, it is held until given back or its holder is found gone.
func (h *Host) Lock(ctx context.Context, name string, owner backend.Owner, alive func(context.Context, backend.Owner) bool) (func(context.Context) error, error) {
	releaseLease, err := h.lease(ctx, name, owner, alive)
	if err != nil {
		return nil, err
	}
	releaseBuilder, err := h.builder.Lock(ctx, name, owner, alive)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("the builder %s: %w", h.opts.Builder, err), releaseLease(context.WithoutCancel(ctx)))
	}
	return func(ctx context.Context) error {
		return errors.Join(releaseLease(ctx), releaseBuilder(ctx))
	}, nil
}

func (h *Host) lease(ctx context.Context, name string, owner backend.Owner, alive func(context.Context, backend.Owner) bool) (func(context.Context) error, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	leases := h.api.CoordinationV1().Leases(h.opts.Namespace)
	lease := LeaseName(name)
	annotations := owner.Labels()
	annotations["io.grpcbench.lock"] = backend.Repository(name)
	mine := func(l *coordinationv1.Lease) {
		now := metav1.NewMicroTime(time.Now())
		l.Annotations, l.Spec.HolderIdentity, l.Spec.AcquireTime = annotations, new(owner.Token), &now
		l.Labels = map[string]string{managedLabel: "true"}
	}
	for range 50 {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lease, Namespace: h.opts.Namespace}}
		mine(l)
		created, err := leases.Create(ctx, l, metav1.CreateOptions{})
		if err == nil {
			return h.releaseLease(created), nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("take the lock of GRPC_IMAGE_NAME=%s: %w", name, err)
		}
		held, err := leases.Get(ctx, lease, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // given back in between
		} else if err != nil {
			return nil, fmt.Errorf("read the lock of GRPC_IMAGE_NAME=%s: %w", name, err)
		}
		holder := backend.OwnerOf(held.Annotations)
		if owner.Token == "" || holder.Token != owner.Token {
			if alive(ctx, holder) {
				return nil, &LockedError{Name: name, Holder: holder, Namespace: h.opts.Namespace, Lease: lease}
			}
		}
		// This run's own (taken again), or a dead run's: the update of the
		// version read fails when another taker got there first.
		mine(held)
		updated, err := leases.Update(ctx, held, metav1.UpdateOptions{})
		switch {
		case err == nil:
			return h.releaseLease(updated), nil
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			continue
		default:
			return nil, fmt.Errorf("take over the lock %s of a run that is gone: %w", lease, err)
		}
	}
	return nil, fmt.Errorf("take the lock of GRPC_IMAGE_NAME=%s: other runs took it at the same moment", name)
}

// releaseLease deletes the Lease as it was taken: not when another run
// took it over since (its version is another).
func (h *Host) releaseLease(l *coordinationv1.Lease) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := quick(ctx)
		defer cancel()
		err := h.api.CoordinationV1().Leases(l.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("give back the lock %s: %w", l.Name, err)
		}
		return nil
	}
}

// LockHeld says whether the lock of an image name is there and held by
// token, on the cluster and on the builder.
func (h *Host) LockHeld(ctx context.Context, name, token string) (bool, error) {
	if held, err := h.builder.LockHeld(ctx, name, token); err != nil || !held {
		return false, err
	}
	ctx, cancel := quick(ctx)
	defer cancel()
	l, err := h.api.CoordinationV1().Leases(h.opts.Namespace).Get(ctx, LeaseName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("read the lock of GRPC_IMAGE_NAME=%s: %w", name, err)
	}
	return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == token, nil
}

// Started says when a container of the builder's engine started: the
// orchestrator's own, when it runs in one, is there, not in the cluster.
func (h *Host) Started(ctx context.Context, id string) (string, bool, error) {
	return h.builder.Started(ctx, id)
}

// Processes are the processes of a container of the builder's engine.
func (h *Host) Processes(ctx context.Context, id string) ([]int, error) {
	return h.builder.Processes(ctx, id)
}
