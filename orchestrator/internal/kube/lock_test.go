package kube

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

func owner(run, token string) backend.Owner {
	return backend.Owner{Host: "h", Boot: testBoot, PID: 42, Start: 7, Run: run, Token: token, Dir: "/results/" + run}
}

// TestLeaseLock: the lock is a Lease held by the owner's token, with the
// owner in its annotations, and the builder's lock beside it; a live
// holder refuses another run, naming the Lease; a dead one's Lease is
// taken over, and the dead run's release then leaves the new holder's.
func TestLeaseLock(t *testing.T) {
	th := newTestHost(t)
	versionedLeases(th)
	ctx := context.Background()
	alive, dead := func(context.Context, backend.Owner) bool { return true }, func(context.Context, backend.Owner) bool { return false }
	release1, err := th.Lock(ctx, "grpc_bench", owner("run-1", "t1"), alive)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := th.api.CoordinationV1().Leases(DefaultNamespace).Get(ctx, LeaseName("grpc_bench"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *lease.Spec.HolderIdentity != "t1" || backend.OwnerOf(lease.Annotations) != owner("run-1", "t1") || lease.Annotations["io.grpcbench.lock"] != "grpc_bench" {
		t.Errorf("lease %+v, annotations %v", lease.Spec, lease.Annotations)
	}
	if holder, ok := th.builder.Holder("grpc_bench"); !ok || holder.Token != "t1" {
		t.Errorf("the builder's lock is held by %+v (%v), want t1", holder, ok)
	}
	if held, err := th.LockHeld(ctx, "grpc_bench", "t1"); !held || err != nil {
		t.Errorf("LockHeld(t1) = %v, %v", held, err)
	}

	_, err = th.Lock(ctx, "grpc_bench", owner("run-2", "t2"), alive)
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Holder.Run != "run-1" || locked.Lease != LeaseName("grpc_bench") {
		t.Fatalf("a second run's Lock = %v, want refused, naming run-1 and the Lease", err)
	}

	release2, err := th.Lock(ctx, "grpc_bench", owner("run-2", "t2"), dead)
	if err != nil {
		t.Fatalf("taking a dead run's lock: %v", err)
	}
	if err := release1(ctx); err != nil {
		t.Fatal(err)
	}
	if held, _ := th.LockHeld(ctx, "grpc_bench", "t2"); !held {
		t.Error("the dead run's release gave back the lock another run took over")
	}
	if err := release2(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := th.api.CoordinationV1().Leases(DefaultNamespace).Get(ctx, LeaseName("grpc_bench"), metav1.GetOptions{}); err == nil {
		t.Error("the Lease is still there after its holder gave it back")
	}
	if _, ok := th.builder.Holder("grpc_bench"); ok {
		t.Error("the builder's lock is still there after its holder gave it back")
	}
}

// TestLeaseNames: one repository has one Lease; names a Lease cannot
// hold are kept apart.
func TestLeaseNames(t *testing.T) {
	if LeaseName("grpc_bench") != LeaseName("docker.io/library/grpc_bench") {
		t.Error("two spellings of one repository have two Leases")
	}
	if LeaseName("a_b") == LeaseName("a-b") {
		t.Error("a_b and a-b share a Lease")
	}
	if n := LeaseName("registry.local:5000/Team/bench"); len(n) > 253 || n != LeaseName("registry.local:5000/Team/bench") {
		t.Errorf("lease name %q", n)
	}
}

// versionedLeases makes the fake API server keep a Lease's version as the
// real one does: each write a new one, and a delete with another's
// precondition refused.
func versionedLeases(th testHost) {
	var version atomic.Int64
	bump := func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(interface{ GetObject() runtime.Object }).GetObject().(*coordinationv1.Lease)
		obj.ResourceVersion = strconv.FormatInt(version.Add(1), 10)
		return false, nil, nil
	}
	th.api.PrependReactor("create", "leases", bump)
	th.api.PrependReactor("update", "leases", bump)
	th.api.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		pre := d.GetDeleteOptions().Preconditions
		cur, err := th.api.Tracker().Get(d.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil || pre == nil || pre.ResourceVersion == nil {
			return false, nil, nil
		}
		if cur.(*coordinationv1.Lease).ResourceVersion != *pre.ResourceVersion {
			return true, nil, apierrors.NewConflict(d.GetResource().GroupResource(), d.GetName(), errors.New("the precondition failed"))
		}
		return false, nil, nil
	})
}
