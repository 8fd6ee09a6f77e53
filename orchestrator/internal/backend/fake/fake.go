// Package fake is a backend.Host in memory, for unit tests of what drives
// hosts (session, harness, check, bench): containers behave as the test's
// script says, and locks, labels and images are kept as a host keeps
// them.
package fake

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// Behaviour is how a container behaves once started.
type Behaviour struct {
	// StartErr fails the start.
	StartErr error
	// Runs keeps the container running until it is removed or ended (a
	// server, or a client that hangs); else it exits with Exit once it has
	// run for Takes (at once when 0), having written Stdout and Stderr.
	Runs      bool
	Exit      int64
	OOMKilled bool
	Stdout    string
	Stderr    string
	// Takes is how long a container that does not run takes to exit: a
	// load client that a run's interruption can cut.
	Takes time.Duration
	// Samples are its stats readings, given as soon as stats are asked for.
	Samples []backend.Sample
	// OOMKills is what watching for OOM kills counts.
	OOMKills int
	// CPUSet is the cores the host reads back that it runs on, as
	// Kubernetes' CPU manager picks them; "" as Docker reads none back.
	CPUSet string
}

// Host is a host in memory. Set Script, BuildErr and PingErr before the
// host is used.
type Host struct {
	// Script says how each container behaves; nil: every container exits
	// with 0 at once, writing nothing.
	Script func(backend.ContainerSpec) Behaviour
	// BuildErr, when set, fails the builds it returns an error for.
	BuildErr func(backend.BuildOptions) error
	// PingErr is what Ping answers.
	PingErr error

	address string
	facts   backend.Facts

	mu      sync.Mutex
	images  map[string]string
	locks   map[string]backend.Owner
	started []*Container
	closed  bool
}

var _ backend.Host = (*Host)(nil)

// New is an empty host at address, on a machine of facts.
func New(address string, facts backend.Facts) *Host {
	return &Host{address: address, facts: facts, images: map[string]string{}, locks: map[string]backend.Owner{}}
}

// Address is the host's address.
func (h *Host) Address() string { return h.address }

// Local says no: a fake host's /proc/stat is nobody's.
func (h *Host) Local() bool { return false }

// Facts are the facts New was given.
func (h *Host) Facts(context.Context) (backend.Facts, error) { return h.facts, nil }

// Ping answers PingErr.
func (h *Host) Ping(context.Context) error { return h.PingErr }

// Close marks the host closed.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	return nil
}

// Closed says whether Close was called.
func (h *Host) Closed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// LockedError says a live owner holds the lock.
type LockedError struct {
	Name   string
	Holder backend.Owner
}

func (e *LockedError) Error() string {
	return "the lock of " + e.Name + " is held by " + e.Holder.String()
}

// Lock takes the lock of name for owner, unless a holder alive says runs
// has it; a dead holder's lock is taken over.
func (h *Host) Lock(ctx context.Context, name string, owner backend.Owner, alive func(context.Context, backend.Owner) bool) (func(context.Context) error, error) {
	h.mu.Lock()
	holder, held := h.locks[name]
	h.mu.Unlock()
	if held && alive(ctx, holder) {
		return nil, &LockedError{Name: name, Holder: holder}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.locks[name] = owner
	return func(context.Context) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.locks[name] == owner { // not another's
			delete(h.locks, name)
		}
		return nil
	}, nil
}

// LockHeld says whether the lock of name carries token.
func (h *Host) LockHeld(_ context.Context, name, token string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.locks[name]
	return ok && o.Token == token, nil
}

// Holder is who holds the lock of name, if anyone does.
func (h *Host) Holder(name string) (backend.Owner, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.locks[name]
	return o, ok
}

// SetLock puts a lock of name held by owner, as another run would have.
func (h *Host) SetLock(name string, owner backend.Owner) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.locks[name] = owner
}

// DropLock removes the lock of name, as `docker container prune` does.
func (h *Host) DropLock(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.locks, name)
}

// Started says when the container started and whether it runs.
func (h *Host) Started(_ context.Context, id string) (string, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.started {
		if c.id == id && !c.removed {
			return c.at.Format(time.RFC3339Nano), c.running(), nil
		}
	}
	return "", false, fmt.Errorf("container %s: %w", id, backend.ErrMissing)
}

// Processes knows no process ids: a fake container runs nothing.
func (h *Host) Processes(context.Context, string) ([]int, error) { return nil, nil }

// Reap removes the containers labelled key=value.
func (h *Host) Reap(_ context.Context, key, value string) (int, error) {
	h.mu.Lock()
	var reaped []*Container
	for _, c := range h.started {
		if !c.removed && c.spec.Labels[key] == value {
			reaped = append(reaped, c)
		}
	}
	h.mu.Unlock()
	for _, c := range reaped {
		c.remove()
	}
	return len(reaped), nil
}

// ImageID is the id of an image built, pulled, imported or loaded.
func (h *Host) ImageID(_ context.Context, ref string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if id, ok := h.images[ref]; ok {
		return id, nil
	}
	return "", fmt.Errorf("image %s: %w", ref, backend.ErrMissing)
}

// Have makes the images present, as if pulled long ago.
func (h *Host) Have(refs ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ref := range refs {
		h.images[ref] = "sha256:" + ref
	}
}

// Pull makes the image present.
func (h *Host) Pull(_ context.Context, ref string, _ io.Writer) error {
	h.Have(ref)
	return nil
}

// Import makes the image present.
func (h *Host) Import(_ context.Context, _ io.Reader, ref string, _ []string) error {
	h.Have(ref)
	return nil
}

// Build makes opts.Tag present, unless BuildErr fails it.
func (h *Host) Build(_ context.Context, _ io.Reader, opts backend.BuildOptions, log io.Writer) (string, error) {
	if h.BuildErr != nil {
		if err := h.BuildErr(opts); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(log, "built %s\n", opts.Tag)
	h.Have(opts.Tag)
	return h.ImageID(context.Background(), opts.Tag)
}

// Save writes the image's name, which Load takes.
func (h *Host) Save(ctx context.Context, ref string) (io.ReadCloser, error) {
	if _, err := h.ImageID(ctx, ref); err != nil {
		return nil, err
	}
	return io.NopCloser(strings.NewReader(ref)), nil
}

// Load makes the image that Save wrote present.
func (h *Host) Load(_ context.Context, image io.Reader) error {
	ref, err := io.ReadAll(image)
	if err != nil {
		return err
	}
	h.Have(string(ref))
	return nil
}

// Start starts a container that behaves as Script says.
func (h *Host) Start(ctx context.Context, spec backend.ContainerSpec) (backend.Container, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var b Behaviour
	if h.Script != nil {
		b = h.Script(spec)
	}
	if b.StartErr != nil {
		return nil, b.StartErr
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.add(spec, b)
	switch {
	case b.Runs:
	case b.Takes > 0:
		time.AfterFunc(b.Takes, func() { c.End(b.Exit, b.OOMKilled) })
	default:
		c.end(b.Exit, b.OOMKilled)
	}
	return c, nil
}

// add puts a container started now on the host; it is under h.mu.
func (h *Host) add(spec backend.ContainerSpec, b Behaviour) *Container {
	c := &Container{id: fmt.Sprintf("c%d", len(h.started)+1), spec: spec, behaviour: b, at: time.Now(), ended: make(chan struct{}), host: h}
	h.started = append(h.started, c)
	return c
}

// Leave puts a container with the labels on the host, as a run that was
// killed leaves one.
func (h *Host) Leave(labels map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.add(backend.ContainerSpec{Labels: maps.Clone(labels)}, Behaviour{Runs: true})
}

// Containers are every container started (or left) on the host, in order.
func (h *Host) Containers() []*Container {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Container(nil), h.started...)
}

// Left are the containers not removed.
func (h *Host) Left() []*Container {
	var left []*Container
	for _, c := range h.Containers() {
		if !c.Removed() {
			left = append(left, c)
		}
	}
	return left
}

// Container is a container of a fake host.
type Container struct {
	id        string
	spec      backend.ContainerSpec
	behaviour Behaviour
	at        time.Time
	host      *Host
	// Under host.mu: whether it was removed, whether its process ended
	// (ended is then closed), and how.
	removed, exited bool
	exit            int64
	oomKilled       bool
	ended           chan struct{}
}

// ID is the container's id.
func (c *Container) ID() string { return c.id }

// Spec is what the container was started with.
func (c *Container) Spec() backend.ContainerSpec { return c.spec }

// Role is the container's backend.RoleLabel.
func (c *Container) Role() string { return c.spec.Labels[backend.RoleLabel] }

// Removed says whether the container was removed.
func (c *Container) Removed() bool {
	c.host.mu.Lock()
	defer c.host.mu.Unlock()
	return c.removed
}

// running is under host.mu.
func (c *Container) running() bool { return !c.exited }

// End ends the container's process now, with the exit code and, when
// oomKilled, as the OOM killer does: a server that crashes under load.
// A process that has ended already is left as it ended.
func (c *Container) End(exit int64, oomKilled bool) {
	c.host.mu.Lock()
	defer c.host.mu.Unlock()
	c.end(exit, oomKilled)
}

// end is End under host.mu.
func (c *Container) end(exit int64, oomKilled bool) {
	if !c.exited {
		c.exited, c.exit, c.oomKilled = true, exit, oomKilled
		close(c.ended)
	}
}

// Wait returns the exit code once the process has ended: at once for a
// container that neither runs nor takes time, after Takes for one that
// takes it, when it is ended or removed (137, killed) for one that runs.
// It returns ctx's error when ctx has ended before, as a wait on a real
// host does, or ends first.
func (c *Container) Wait(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	select {
	case <-c.ended:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	c.host.mu.Lock()
	defer c.host.mu.Unlock()
	return c.exit, nil
}

// State is the container's process as the script has it.
func (c *Container) State(context.Context) (backend.State, error) {
	c.host.mu.Lock()
	defer c.host.mu.Unlock()
	if c.removed {
		return backend.State{}, fmt.Errorf("container %s: %w", c.id, backend.ErrMissing)
	}
	st := backend.State{Running: c.running(), ExitCode: int(c.exit), OOMKilled: c.oomKilled, Ports: map[int]int{}}
	for inside, outside := range c.spec.Publish {
		if outside == 0 {
			outside = 40000 + inside%1000
		}
		st.Ports[inside] = outside
	}
	return st, nil
}

// Logs writes the script's output; following it ends when the process
// ends or ctx does.
func (c *Container) Logs(ctx context.Context, follow bool, stdout, stderr io.Writer) error {
	if _, err := io.WriteString(stdout, c.behaviour.Stdout); err != nil {
		return err
	}
	if _, err := io.WriteString(stderr, c.behaviour.Stderr); err != nil {
		return err
	}
	if follow {
		select {
		case <-c.ended:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Stats gives the script's samples, each also written to raw as a line,
// then waits until the process ends or ctx does.
func (c *Container) Stats(ctx context.Context, raw io.Writer, each func(backend.Sample)) error {
	for _, s := range c.behaviour.Samples {
		fmt.Fprintf(raw, "%s %s %g\n", s.PreRead.Format(time.RFC3339Nano), s.Read.Format(time.RFC3339Nano), s.CPUPercent)
		each(s)
	}
	select {
	case <-c.ended:
	case <-ctx.Done():
	}
	return nil
}

// WatchOOM counts the script's OOM kills.
func (c *Container) WatchOOM(context.Context) func() int {
	return func() int { return c.behaviour.OOMKills }
}

// CPUSet is the behaviour's CPUSet.
func (c *Container) CPUSet(context.Context) (string, error) { return c.behaviour.CPUSet, nil }

// Remove kills the container's process, if it runs, and removes the
// container; removing it again is no error.
func (c *Container) Remove(context.Context) error {
	c.remove()
	return nil
}

func (c *Container) remove() {
	c.host.mu.Lock()
	defer c.host.mu.Unlock()
	c.removed = true
	c.end(137, false)
}
