package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// startTimeout bounds how long a pod may take to have its containers
// running once created: the images are on the node already.
const startTimeout = 2 * time.Minute

// removeGrace is the grace period of a pod's deletion: the kubelet stops
// its containers (SIGTERM, SIGKILL a second later) and the pod goes once
// they have, its cores given back, which a pod deleted at once (grace 0)
// would not wait for.
var removeGrace = int64(1)

// Start starts a container: a pod of the server and its companion, or, for
// a spec with NetworkOf, an exec in the companion of that pod.
func (h *Host) Start(ctx context.Context, spec backend.ContainerSpec) (backend.Container, error) {
	if spec.NetworkOf != "" {
		return h.startExec(ctx, spec)
	}
	return h.startPod(ctx, spec)
}

// pod is a pod this process started, seen as its server container.
type pod struct {
	host       *Host
	name       string
	uid        string
	secret     string
	companion  *backend.ContainerSpec
	entrypoint []string // the companion's image's

	once sync.Once
	// cgroup is the server's, found at the first read.
	cgroup    container
	cgroupErr error
	// execs numbers the execs of the companion.
	execs atomic.Int64
}

func (h *Host) startPod(ctx context.Context, spec backend.ContainerSpec) (backend.Container, error) {
	images := map[string]backend.ImageConfig{}
	refs := []string{spec.Image}
	if spec.Companion != nil {
		refs = append(refs, spec.Companion.Image)
	}
	for _, ref := range refs {
		if err := h.ensure(ctx, ref); err != nil {
			return nil, err
		}
		cfg, err := h.builder.ImageConfig(ctx, ref)
		if err != nil {
			return nil, err
		}
		images[ref] = cfg
	}
	qctx, cancel := quick(ctx)
	defer cancel()
	p := &pod{host: h, companion: spec.Companion}
	if spec.Companion != nil {
		p.entrypoint = images[spec.Companion.Image].Entrypoint
	}
	if len(spec.Files) > 0 {
		s, err := h.secretOf(spec)
		if err != nil {
			return nil, err
		}
		if s, err = h.api.CoreV1().Secrets(h.opts.Namespace).Create(qctx, s, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create the secret of the files of %s: %w", spec.Image, err)
		}
		p.secret = s.Name
	}
	spec2, err := h.podOf(spec, images, p.secret)
	if err == nil {
		var created *corev1.Pod
		if created, err = h.api.CoreV1().Pods(h.opts.Namespace).Create(qctx, spec2, metav1.CreateOptions{}); err == nil {
			p.name, p.uid = created.Name, string(created.UID)
		} else {
			err = fmt.Errorf("create the pod of %s: %w", spec.Image, err)
		}
	}
	if err == nil {
		h.mu.Lock()
		h.pods[p.name] = p
		h.mu.Unlock()
		err = p.awaitStart(ctx)
	}
	if err != nil {
		if rmErr := p.Remove(context.WithoutCancel(ctx)); rmErr != nil {
			slog.Error("remove a pod that did not start", "pod", p.name, "err", rmErr)
		}
		return nil, err
	}
	return p, nil
}

// ID is the pod's name.
func (p *pod) ID() string { return p.name }

// awaitStart waits until the server has started (it may have ended since)
// and the companion runs, and fails at once when the pod cannot: not
// scheduled (no node with the CPUs or memory free), an image missing, a
// container that cannot be made.
func (p *pod) awaitStart(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	_, err := p.until(ctx, func(pd *corev1.Pod) (bool, error) {
		for _, c := range pd.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return false, fmt.Errorf("the pod cannot be scheduled: %s", c.Message)
			}
		}
		started := 0
		for _, st := range append(pd.Status.InitContainerStatuses, pd.Status.ContainerStatuses...) {
			if w := st.State.Waiting; w != nil && stuck(w.Reason) {
				return false, fmt.Errorf("container %s of the pod cannot start: %s: %s", st.Name, w.Reason, w.Message)
			}
			if t := st.State.Terminated; t != nil && st.Name == isolateName && t.ExitCode != 0 {
				return false, fmt.Errorf("the pod's network could not be set to loopback only: %s exited with code %d: %s", isolateName, t.ExitCode, t.Message)
			}
			if t := st.State.Terminated; t != nil && st.Name == clientName {
				return false, fmt.Errorf("the container of the clients ended at once: %s (code %d)", t.Reason, t.ExitCode)
			}
			if st.Name != isolateName && (st.State.Running != nil || st.State.Terminated != nil) {
				started++
			}
		}
		return started == len(pd.Spec.Containers), nil
	})
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, watchtools.ErrWatchClosed) {
		return fmt.Errorf("the pod %s did not start within %s", p.name, startTimeout)
	}
	return err
}

// stuck says a container waits for what will not come by itself.
func stuck(reason string) bool {
	switch reason {
	case "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff":
		return true
	}
	return false
}

// until watches the pod (listing it again after a watch breaks, as an API
// server's restart breaks it) until cond holds or fails; a pod deleted
// meanwhile is backend.ErrMissing.
func (p *pod) until(ctx context.Context, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	pods := p.host.api.CoreV1().Pods(p.host.opts.Namespace)
	selector := fields.OneTermEqualSelector("metadata.name", p.name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return pods.Watch(ctx, o)
		},
	}
	// The wrapper asks the client whether it serves a watch-list stream,
	// which UntilWithSync's informer starts with: a real clientset does
	// (nothing changes), client-go's fake says it does not and is listed.
	ev, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, p.host.api), &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("pod %s: %w", p.name, backend.ErrMissing)
		}
		pd, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		return cond(pd)
	})
	if err != nil {
		return nil, err
	}
	return ev.Object.(*corev1.Pod), nil
}

// status is the status of one of the pod's containers.
func status(pd *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, st := range pd.Status.ContainerStatuses {
		if st.Name == name {
			return st, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// Wait blocks until the server's container ends and returns its exit code.
func (p *pod) Wait(ctx context.Context) (int64, error) {
	pd, err := p.until(ctx, func(pd *corev1.Pod) (bool, error) {
		st, _ := status(pd, serverName)
		return st.State.Terminated != nil, nil
	})
	if err != nil {
		return 0, fmt.Errorf("wait for pod %s: %w", p.name, err)
	}
	st, _ := status(pd, serverName)
	return int64(st.State.Terminated.ExitCode), nil
}

// State is the server container's state as the kubelet last reported it.
func (p *pod) State(ctx context.Context) (backend.State, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	pd, err := p.host.api.CoreV1().Pods(p.host.opts.Namespace).Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		return backend.State{}, fmt.Errorf("read pod %s: %w", p.name, missing(err))
	}
	st, _ := status(pd, serverName)
	return stateOf(st), nil
}

func stateOf(st corev1.ContainerStatus) backend.State {
	s := backend.State{Running: st.State.Running != nil}
	if t := st.State.Terminated; t != nil {
		s.ExitCode, s.OOMKilled = int(t.ExitCode), t.Reason == "OOMKilled"
	}
	return s
}

// missing makes the API's "not found" a backend.ErrMissing too.
func missing(err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: %w", backend.ErrMissing, err)
	}
	return err
}

// Logs copies the server container's log (stdout and stderr are one
// stream in Kubernetes: both go to stdout).
func (p *pod) Logs(ctx context.Context, follow bool, stdout, _ io.Writer) error {
	if !follow {
		var cancel context.CancelFunc
		ctx, cancel = quick(ctx)
		defer cancel()
	}
	r, err := p.host.api.CoreV1().Pods(p.host.opts.Namespace).GetLogs(p.name, &corev1.PodLogOptions{Container: serverName, Follow: follow}).Stream(ctx)
	if err != nil {
		return fmt.Errorf("logs of pod %s: %w", p.name, err)
	}
	defer r.Close()
	if _, err := io.Copy(stdout, r); err != nil {
		return fmt.Errorf("logs of pod %s: %w", p.name, err)
	}
	return nil
}

// containerCgroup is the cgroup of the pod's container of that name, read
// on this machine, the node.
func (p *pod) containerCgroup(ctx context.Context, name string) (container, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	pd, err := p.host.api.CoreV1().Pods(p.host.opts.Namespace).Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		return container{}, fmt.Errorf("read pod %s: %w", p.name, missing(err))
	}
	st, ok := status(pd, name)
	if !ok || st.ContainerID == "" {
		return container{}, fmt.Errorf("pod %s has no container %s", p.name, name)
	}
	_, id, _ := strings.Cut(st.ContainerID, "://")
	return p.host.cgroups.find(p.uid, id)
}

// serverCgroup is the server's cgroup, found once.
func (p *pod) serverCgroup(ctx context.Context) (container, error) {
	p.once.Do(func() { p.cgroup, p.cgroupErr = p.containerCgroup(ctx, serverName) })
	return p.cgroup, p.cgroupErr
}

// CPUSet is the cores the server may run on, read from its cgroup: the
// kubelet's CPU manager picks them, not the spec's CPUSet.
func (p *pod) CPUSet(ctx context.Context) (string, error) {
	ct, err := p.serverCgroup(ctx)
	if err == nil {
		var cpus string
		if cpus, err = ct.cpus(); err == nil {
			return cpus, nil
		}
	}
	return "", fmt.Errorf("cpuset of pod %s: %w", p.name, err)
}

// Stats reads the server's cgroup about once a second until it is gone
// with the server's process or ctx ends.
func (p *pod) Stats(ctx context.Context, raw io.Writer, each func(backend.Sample)) error {
	ct, err := p.serverCgroup(ctx)
	if err != nil {
		return fmt.Errorf("stats of pod %s: %w", p.name, err)
	}
	return stream(ctx, ct, raw, each, func() bool { return false })
}

// WatchOOM counts the kernel's OOM kills in the server's cgroup, of any of
// its processes; when the server's own process was killed its cgroup goes
// with it, and the kubelet's "OOMKilled" counts for one if none was seen.
func (p *pod) WatchOOM(ctx context.Context) (stop func() int) {
	ctx, cancel := context.WithCancel(ctx)
	var base, last uint64
	ct, err := p.serverCgroup(ctx)
	if err == nil {
		if r, err := ct.read(); err == nil {
			base, last = r.OOMKills, r.OOMKills
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err != nil {
			slog.Debug("OOM watch", "pod", p.name, "err", err)
			return
		}
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if r, err := ct.read(); err == nil {
					last = r.OOMKills
				}
			}
		}
	}()
	return func() int {
		cancel()
		<-done
		if r, err := ct.read(); err == nil {
			last = r.OOMKills
		}
		n := int(last - base)
		if n == 0 {
			if st, err := p.State(context.WithoutCancel(ctx)); err == nil && st.OOMKilled {
				n = 1
			}
		}
		return n
	}
}

// Remove deletes the pod and the secret of its files, and waits until the
// pod is gone: its containers stopped and its cores free for the next.
func (p *pod) Remove(ctx context.Context) error {
	h := p.host
	var errs []error
	if p.name != "" {
		errs = append(errs, h.deletePod(ctx, p.name))
		h.mu.Lock()
		delete(h.pods, p.name)
		h.mu.Unlock()
	}
	if p.secret != "" {
		ctx, cancel := quick(ctx)
		defer cancel()
		if err := h.api.CoreV1().Secrets(h.opts.Namespace).Delete(ctx, p.secret, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete secret %s: %w", p.secret, err))
		}
	}
	return errors.Join(errs...)
}

// deletePod deletes a pod and waits until it is gone.
func (h *Host) deletePod(ctx context.Context, name string) error {
	ctx, cancel := quick(ctx)
	defer cancel()
	pods := h.api.CoreV1().Pods(h.opts.Namespace)
	err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &removeGrace})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	for {
		if _, err := pods.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil && ctx.Err() != nil {
			return fmt.Errorf("delete pod %s: it is still there: %w", name, err)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("delete pod %s: it is still there: %w", name, err)
		}
	}
}

// sleep waits for d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Reap deletes every pod (and secret of files) that carries the label
// key=value, waits until the pods are gone, and says how many there were.
func (h *Host) Reap(ctx context.Context, key, value string) (int, error) {
	selector := key + "=" + labelValue(value)
	lctx, cancel := quick(ctx)
	defer cancel()
	pods, err := h.api.CoreV1().Pods(h.opts.Namespace).List(lctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return 0, fmt.Errorf("list pods labelled %s: %w", selector, err)
	}
	for _, pd := range pods.Items {
		if err := h.deletePod(ctx, pd.Name); err != nil {
			return 0, err
		}
	}
	if err := h.api.CoreV1().Secrets(h.opts.Namespace).DeleteCollection(lctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector}); err != nil {
		return 0, fmt.Errorf("delete secrets labelled %s: %w", selector, err)
	}
	return len(pods.Items), nil
}
