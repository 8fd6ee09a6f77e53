package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/grpcbench/grpcbench/orchestrator/internal/archive"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// execer runs a command in a container of a pod, with its streams; an
// error that is a utilexec.ExitError when the command ran and exited
// non-zero.
type execer interface {
	exec(ctx context.Context, namespace, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// apiExecer execs through the API server, over WebSockets, or SPDY on a
// server that has no WebSocket exec, as kubectl does.
type apiExecer struct {
	cfg *rest.Config
	api kubernetes.Interface
}

func (e apiExecer) exec(ctx context.Context, namespace, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	u := e.api.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdin: stdin != nil, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	ws, err := remotecommand.NewWebSocketExecutor(e.cfg, http.MethodGet, u.String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.cfg, http.MethodPost, u)
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

// run runs a short command in the companion; a failure says what it
// wrote to stderr.
func (p *pod) run(ctx context.Context, stdin io.Reader, cmd ...string) error {
	var errOut strings.Builder
	if err := p.host.exec.exec(ctx, p.host.opts.Namespace, p.name, clientName, cmd, stdin, io.Discard, &errOut); err != nil {
		return fmt.Errorf("%s in pod %s: %w: %s", cmd[0], p.name, err, strings.TrimSpace(errOut.String()))
	}
	return nil
}

// execProcess is a client: a process exec'd in the companion of a server's
// pod, the container its clients run in. Its streams are what the client
// wrote; its stats and OOM kills the companion's, which runs nothing else
// but an idle agent.
type execProcess struct {
	pod     *pod
	id      string
	pidFile string
	cgroup  container
	oomBase uint64

	stdout, stderr *output
	cancel         context.CancelFunc
	done           chan struct{}
	// After done: how the process ended, or why its stream did.
	code int64
	err  error
}

// startExec starts a client in the companion of the pod spec.NetworkOf
// names, which this process started: its files written into the
// companion's InputDir first. The client must fit the companion: its
// image, its CPU limit (or none) and no more memory.
func (h *Host) startExec(ctx context.Context, spec backend.ContainerSpec) (backend.Container, error) {
	h.mu.Lock()
	p := h.pods[spec.NetworkOf]
	h.mu.Unlock()
	if p == nil || p.companion == nil {
		return nil, fmt.Errorf("pod %s was not started with a container for its clients", spec.NetworkOf)
	}
	c := p.companion
	switch {
	case spec.Image != c.Image:
		return nil, fmt.Errorf("the clients of a pod run in its companion container, of image %s, not %s: a load tool with an image of its own (h2load) is not supported on Kubernetes", c.Image, spec.Image)
	case spec.NanoCPUs != 0 && spec.NanoCPUs != c.NanoCPUs:
		return nil, fmt.Errorf("the clients of a pod run in its companion container, whose CPU limit, %s, was set with the server; this one asks for %s",
			cpus(c.NanoCPUs), cpus(spec.NanoCPUs))
	case c.Memory > 0 && spec.Memory > c.Memory:
		return nil, fmt.Errorf("the clients of a pod run in its companion container, whose memory limit is %d bytes; this one asks for %d", c.Memory, spec.Memory)
	case len(spec.Files) > 0 && spec.InputDir != c.InputDir:
		return nil, fmt.Errorf("the clients' files go in %s, not %s", c.InputDir, spec.InputDir)
	}
	cg, err := p.companionCgroup(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.writeFiles(ctx, spec); err != nil {
		return nil, err
	}
	n := p.execs.Add(1)
	e := &execProcess{pod: p, id: p.name + "/" + strconv.FormatInt(n, 10), pidFile: fmt.Sprintf("%s/%d.pid", execDir, n), cgroup: cg,
		stdout: newOutput(), stderr: newOutput(), done: make(chan struct{})}
	if r, err := cg.read(); err == nil {
		e.oomBase = r.OOMKills
	}
	// The shell writes its pid, which the client's process keeps, for
	// Remove to kill it by: ending the stream would not end it.
	argv := append([]string{"sh", "-c", `echo $$ >"$0" && exec "$@"`, e.pidFile}, envPrefix(spec.Env)...)
	argv = append(append(argv, p.entrypoint...), spec.Cmd...)
	// The stream lives until the process ends or Remove ends it, as a
	// container outlives the call that started it.
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	go func() {
		defer close(e.done)
		err := h.exec.exec(streamCtx, h.opts.Namespace, p.name, clientName, argv, nil, e.stdout, e.stderr)
		e.stdout.close()
		e.stderr.close()
		var exit utilexec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			e.code = int64(exit.ExitStatus())
		default:
			e.err = fmt.Errorf("the stream of client %s in pod %s was cut (%w): the API server or the kubelet went away; the server did not end it", e.id, p.name, err)
		}
	}()
	return e, nil
}

// envPrefix sets the variables of a client for its process: an exec has
// the container's environment.
func envPrefix(env []string) []string {
	if len(env) == 0 {
		return nil
	}
	return append([]string{"env"}, env...)
}

func cpus(nano int64) string {
	if nano == 0 {
		return "none"
	}
	return strconv.FormatFloat(float64(nano)/1e9, 'f', -1, 64) + " CPUs"
}

// companionCgroup is the companion's cgroup.
func (p *pod) companionCgroup(ctx context.Context) (container, error) {
	return p.containerCgroup(ctx, clientName)
}

// writeFiles replaces what the companion's InputDir holds with the
// client's files, as a tar on an exec's stdin.
func (p *pod) writeFiles(ctx context.Context, spec backend.ContainerSpec) error {
	a := archive.New()
	for _, name := range slices.Sorted(maps.Keys(spec.Files)) {
		rel, ok := strings.CutPrefix(name, spec.InputDir+"/")
		if !ok {
			return fmt.Errorf("file %s is not under %s", name, spec.InputDir)
		}
		a.AddBytes(rel, spec.Files[name], 0o644)
	}
	tar, err := a.Reader()
	if err != nil {
		return err
	}
	ctx, cancel := quick(ctx)
	defer cancel()
	dir := p.companion.InputDir
	if err := p.run(ctx, tar, "sh", "-c", `find "$0" -mindepth 1 -delete && tar -x -o -C "$0"`, dir); err != nil {
		return fmt.Errorf("write the client's files into %s: %w", dir, err)
	}
	return nil
}

// ID is the pod's name and the exec's number in it.
func (e *execProcess) ID() string { return e.id }

// Wait blocks until the process ends and returns its exit code.
func (e *execProcess) Wait(ctx context.Context) (int64, error) {
	select {
	case <-ctx.Done():
		return 0, fmt.Errorf("wait for client %s: %w", e.id, ctx.Err())
	case <-e.done:
		return e.code, e.err
	}
}

// State says whether the process runs, and how it ended: killed for its
// memory when it died of SIGKILL as the companion's cgroup counted an
// OOM kill.
func (e *execProcess) State(context.Context) (backend.State, error) {
	select {
	case <-e.done:
	default:
		return backend.State{Running: true}, nil
	}
	s := backend.State{ExitCode: int(e.code)}
	if r, err := e.cgroup.read(); err == nil && e.code == 137 {
		s.OOMKilled = r.OOMKills > e.oomBase
	}
	return s, e.err
}

// Logs copies what the process wrote: so far, or until it ends.
func (e *execProcess) Logs(ctx context.Context, follow bool, stdout, stderr io.Writer) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, o := range []struct {
		from *output
		to   io.Writer
	}{{e.stdout, stdout}, {e.stderr, stderr}} {
		wg.Go(func() { errs[i] = o.from.copyTo(ctx, o.to, follow) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CPUSet is the cores the companion may run on, read from its cgroup.
func (e *execProcess) CPUSet(context.Context) (string, error) {
	cpus, err := e.cgroup.cpus()
	if err != nil {
		return "", fmt.Errorf("cpuset of client %s: %w", e.id, err)
	}
	return cpus, nil
}

// Stats reads the companion's cgroup until the process ends.
func (e *execProcess) Stats(ctx context.Context, raw io.Writer, each func(backend.Sample)) error {
	return stream(ctx, e.cgroup, raw, each, func() bool {
		select {
		case <-e.done:
			return true
		default:
			return false
		}
	})
}

// WatchOOM counts the OOM kills in the companion from now on.
func (e *execProcess) WatchOOM(context.Context) (stop func() int) {
	r, err := e.cgroup.read()
	return func() int {
		now, err2 := e.cgroup.read()
		if err != nil || err2 != nil {
			return 0
		}
		return int(now.OOMKills - r.OOMKills)
	}
}

// killWait is how long Remove waits for a killed process's stream to end.
const killWait = 5 * time.Second

// Remove kills the process when it still runs, and ends its stream.
func (e *execProcess) Remove(ctx context.Context) error {
	defer e.cancel()
	select {
	case <-e.done:
		return nil
	default:
	}
	ctx, cancel := quick(ctx)
	defer cancel()
	if err := e.pod.run(ctx, nil, "sh", "-c", `kill -KILL "$(cat "$0")"`, e.pidFile); err != nil {
		return fmt.Errorf("kill client %s: %w", e.id, err)
	}
	select {
	case <-e.done:
	case <-time.After(killWait):
	}
	return nil
}

// output is what a process wrote to one stream, kept for Logs, which may
// follow it as it grows.
type output struct {
	mu      sync.Mutex
	b       []byte
	closed  bool
	changed chan struct{} // closed at each write, and at the end
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b = append(o.b, b...)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(b), nil
}

func (o *output) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	close(o.changed)
	o.changed = make(chan struct{})
}

// copyTo copies what was written so far to w and, with follow, what comes
// until the stream ends or ctx does.
func (o *output) copyTo(ctx context.Context, w io.Writer, follow bool) error {
	at := 0
	for {
		o.mu.Lock()
		chunk, closed, changed := o.b[at:], o.closed, o.changed
		o.mu.Unlock()
		if len(chunk) > 0 {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
			at += len(chunk)
			continue
		}
		if closed || !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}
