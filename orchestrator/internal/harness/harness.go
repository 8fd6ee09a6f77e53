// Package harness does one job: bring a server up on a host (start
// it under its limits, wait until it answers, pass it through the
// conformance gate), measure it with a load tool from a client container
// in its network namespace while both containers are sampled, and tear it
// down, keeping its logs, whatever happened to it.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/go-units"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/certs"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/usage"
)

// ServerPort is where every server listens.
const ServerPort = 50051

// loopback is the server's address as the client containers see it when
// they share its network namespace: the load never leaves loopback.
var loopback = "127.0.0.1:" + strconv.Itoa(ServerPort)

// cleanupTimeout bounds the removal of a server's containers, which runs
// even after the run's context is cancelled.
const cleanupTimeout = 30 * time.Second

// clientGrace is how long a client container may take beyond its own
// deadlines (start, connections, the report) before the host is taken to
// be hung; conformLimit bounds the gate, whose calls have deadlines of 10 s.
const (
	clientGrace  = 2 * time.Minute
	conformLimit = 2 * time.Minute
)

// Options are where a harness's containers run, how they are marked, what
// its clients run from, and who hears what each server does.
type Options struct {
	// Servers runs the servers; Clients the probes, gates and load
	// clients (nil: Servers).
	Servers, Clients backend.Containers
	// Remote is where the clients reach a server when they run on another
	// machine (GRPC_SERVER_ADDRESS): the server publishes its port there;
	// nil has the clients join the server's network namespace.
	Remote *Remote
	// Labels mark every container the harness starts (the run, the image name).
	Labels map[string]string
	// ServerCPUs is the CPU count of the servers' host, which caps the
	// workers the gate expects of a server.
	ServerCPUs int
	Images     Images
	// Observer, when set, hears what each server is doing.
	Observer Observer
}

// Images are what the clients run from.
type Images struct {
	// Client is the orchestrator's own image: it runs the readiness probe,
	// the conformance gate and the load tools that are Runners.
	Client string
	// Tools are the images of the load tools that have their own, by the
	// folder of tools/ they are built from.
	Tools map[string]string
}

// Harness brings servers up and measures them.
type Harness struct {
	hosts    Options
	images   Images
	observer Observer
	// certs are the run's CA and server certificate, made for the first
	// server that serves TLS and given to every one after it.
	certs     *certs.Set
	certsErr  error
	certsOnce sync.Once
}

// New is a harness that starts containers as opts say.
func New(opts Options) *Harness {
	if opts.Clients == nil {
		opts.Clients = opts.Servers
	}
	if opts.Observer == nil {
		opts.Observer = noObserver{}
	}
	return &Harness{hosts: opts, images: opts.Images, observer: opts.Observer}
}

// Remote is an address of the servers' machine that the clients' machine
// reaches: each server publishes its port on IP only, at Port, or at a
// port the host picks for it when Port is 0, so that two runs on one
// host never ask for the same port.
type Remote struct {
	IP   string
	Port int
}

// ServerSpec is a server to bring up.
type ServerSpec struct {
	Name         string
	Image        string
	Scenario     *scenario.Scenario
	CPUs         config.CPUs
	RAM          config.Bytes
	ReadyTimeout time.Duration
	// Env is what the server's environment adds to GRPC_SERVER_CPUS and
	// GRPC_SERVER_RAM: a variant's settings.
	Env []string
	// ClientCPUs is the load client's CPU limit in this cell (0: no load,
	// the probe and the gate only), which a host that starts the clients'
	// container with the server's must know up front.
	ClientCPUs config.CPUs
	// Placement pins the server and its clients to cores.
	Placement record.Placement
	// TLS has the server serve TLS with the run's certificate, and its
	// clients verify it.
	TLS bool
	// Folder receives the server's log and what its clients printed.
	Folder record.Folder
}

// Instance is a started server: its container and every container
// started beside it.
type Instance struct {
	harness    *Harness
	spec       ServerSpec
	container  backend.Container
	containers []backend.Container
	// Phases are the steps taken so far, with their timings.
	Phases []record.Phase
	// Conformance is the gate's verdict, once given.
	Conformance *record.Conformance
	// RoundTrip is the network's round trip to a server on another
	// machine, timed before the gate.
	RoundTrip *time.Duration
	// Address is where the clients reach the server: loopback in its
	// network namespace, or the address and port it was published at.
	Address string
	// ServerCPUSet and ClientCPUSet are the cores the server and its load
	// client (the last one measured with) ran on, as their hosts read them
	// back once the load started; "" from a host that pins a container to
	// the placement's cores as given (Docker).
	ServerCPUSet, ClientCPUSet string

	stopOOM  func() int
	oomKills int
}

// OOMKills ends the watch for kills of the OOM killer in the server's
// container and returns how many there were.
func (srv *Instance) OOMKills() int {
	if srv.stopOOM != nil {
		srv.oomKills, srv.stopOOM = srv.stopOOM(), nil
	}
	return srv.oomKills
}

// Remote says the clients reach the server from another machine, at
// Address.
func (srv *Instance) Remote() bool { return srv.harness.hosts.Remote != nil }

// Up starts the server, waits until it answers and passes it through the
// conformance gate. It always returns the Instance, whose Down must be
// called; an error is a *record.PhaseError.
func (s *Harness) Up(ctx context.Context, spec ServerSpec) (*Instance, error) {
	srv := &Instance{harness: s, spec: spec}
	s.observer.Phase("starting", 0)
	err := srv.phase(ctx, "start", func(ctx context.Context) (err error) {
		c, err := s.serverContainer(spec)
		if err != nil {
			return err
		}
		c.Labels = srv.labels("server")
		if srv.container, err = srv.start(ctx, s.hosts.Servers, c); err != nil {
			return err
		}
		srv.stopOOM = srv.container.WatchOOM(context.WithoutCancel(ctx))
		return srv.published(ctx)
	})
	if err == nil {
		s.observer.Phase("waiting until it answers", 0)
		err = srv.phase(ctx, "readiness", srv.awaitReady)
	}
	if err == nil && s.hosts.Remote != nil {
		err = srv.phase(ctx, "round trip", srv.roundTrip)
	}
	if err == nil {
		s.observer.Phase("through the conformance gate", 0)
		err = srv.phase(ctx, "conformance", srv.conform)
	}
	return srv, err
}

// Where a TLS server finds its certificate chain and key, and a client
// the run's CA: a volume of the server's own, whose files the server (not
// root, without capabilities) can read but not change.
const (
	tlsDir   = "/tls"
	certFile = tlsDir + "/server.crt"
	keyFile  = tlsDir + "/server.key"
	caFile   = load.InputDir + "/tls/ca.crt"
)

// runCerts are the run's certificates, made once.
func (s *Harness) runCerts() (*certs.Set, error) {
	s.certsOnce.Do(func() {
		s.certs, s.certsErr = certs.New(time.Now())
	})
	return s.certs, s.certsErr
}

// serverContainer is the container of a server: without network when its
// clients join its namespace (loopback is all it needs), else publishing
// its port on the remote address only, on a network of its own; with its
// certificate and key when it serves TLS.
func (s *Harness) serverContainer(spec ServerSpec) (backend.ContainerSpec, error) {
	c := contained(backend.ContainerSpec{
		Image: spec.Image,
		Env: append([]string{
			"GRPC_SERVER_CPUS=" + spec.CPUs.String(),
			"GRPC_SERVER_RAM=" + spec.RAM.String(),
		}, spec.Env...),
		Labels:    map[string]string{},
		NanoCPUs:  spec.CPUs.NanoCPUs(),
		CPUSet:    spec.Placement.ServerCPUSet,
		Memory:    int64(spec.RAM),
		NoNetwork: s.hosts.Remote == nil,
	}, serverPids)
	if s.hosts.Remote != nil {
		c.Publish, c.PublishIP = map[int]int{ServerPort: s.hosts.Remote.Port}, s.hosts.Remote.IP
	} else {
		c.Companion = s.companion(spec)
	}
	if spec.TLS {
		set, err := s.runCerts()
		if err != nil {
			return c, err
		}
		c.Env = append(c.Env, "GRPC_TLS_CERT="+certFile, "GRPC_TLS_KEY="+keyFile)
		c.Files, c.InputDir = map[string][]byte{certFile: set.Cert, keyFile: set.Key}, tlsDir
	}
	return c, nil
}

// companion is the container the server's clients run in, for a host that
// makes it with the server: the client image with the load client's limits,
// the largest any client of the server asks for.
func (s *Harness) companion(spec ServerSpec) *backend.ContainerSpec {
	c := contained(backend.ContainerSpec{
		Image:    s.images.Client,
		InputDir: load.InputDir,
		NanoCPUs: spec.ClientCPUs.NanoCPUs(),
		CPUSet:   spec.Placement.ClientCPUSet,
		Memory:   loadMemory,
	}, clientPids)
	return &c
}

// published reads back where the server's port was published, the port
// the host picked included.
func (srv *Instance) published(ctx context.Context) error {
	if srv.harness.hosts.Remote == nil {
		srv.Address = loopback
		return nil
	}
	st, err := srv.container.State(ctx)
	if err != nil {
		return err
	}
	port := st.Ports[ServerPort]
	if port == 0 {
		return fmt.Errorf("the engine published port %d of the server at no port of %s", ServerPort, srv.harness.hosts.Remote.IP)
	}
	srv.Address = net.JoinHostPort(srv.harness.hosts.Remote.IP, strconv.Itoa(port))
	return nil
}

// phase runs one step and records when it started and how long it took.
func (srv *Instance) phase(ctx context.Context, name string, step func(context.Context) error) error {
	start := time.Now()
	err := step(ctx)
	srv.Phases = append(srv.Phases, record.Phase{Name: name, Start: start, Seconds: time.Since(start).Seconds()})
	if err != nil {
		return &record.PhaseError{Phase: name, Err: err}
	}
	return nil
}

// Down saves the server's log and removes every container started for it,
// even when ctx is cancelled.
func (srv *Instance) Down(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	srv.OOMKills()
	if srv.container != nil {
		srv.saveLog(ctx)
	}
	for _, c := range srv.containers {
		if err := c.Remove(ctx); err != nil {
			slog.Error("remove container", "server", srv.spec.Name, "container", c.ID(), "err", err)
		}
	}
}

func (srv *Instance) saveLog(ctx context.Context) {
	f, err := srv.spec.Folder.Create("server.log")
	if err == nil {
		err = srv.container.Logs(ctx, false, f, f)
		f.Close()
	}
	if err != nil {
		slog.Error("save server log", "server", srv.spec.Name, "err", err)
	}
}

// labels are the harness's labels, the container's role and server, and
// extra key-value pairs.
func (srv *Instance) labels(role string, extra ...string) map[string]string {
	labels := map[string]string{backend.RoleLabel: role, "io.grpcbench.server": srv.spec.Name}
	for i := 0; i+1 < len(extra); i += 2 {
		labels[extra[i]] = extra[i+1]
	}
	for k, v := range srv.harness.hosts.Labels {
		labels[k] = v
	}
	return labels
}

// start starts a container on eng that Down removes.
func (srv *Instance) start(ctx context.Context, eng backend.Containers, spec backend.ContainerSpec) (backend.Container, error) {
	c, err := eng.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	srv.containers = append(srv.containers, c)
	return c, nil
}

// client describes a container of the client image with the scenario's
// files under load.ScenarioDir, beside the server: in its network
// namespace, or in its own machine's when the server is elsewhere.
func (srv *Instance) client(role string, args ...string) backend.ContainerSpec {
	if srv.spec.TLS {
		args = append(args, "--tls-ca", caFile)
	}
	return srv.beside(backend.ContainerSpec{
		Image:    srv.harness.images.Client,
		Cmd:      append([]string{role, "--target", srv.Address, "--scenario", load.ScenarioDir}, args...),
		Labels:   srv.labels(role),
		Files:    srv.inputs(nil),
		InputDir: load.InputDir,
		Memory:   checkMemory,
	})
}

// beside places a client container where it reaches the server, contained.
func (srv *Instance) beside(c backend.ContainerSpec) backend.ContainerSpec {
	if srv.harness.hosts.Remote != nil {
		c.HostNetwork = true
	} else {
		c.NetworkOf = srv.container.ID()
	}
	return contained(c, clientPids)
}

// inputs are a client's files: the scenario's, the run's CA when the
// server serves TLS, and extra, under load.InputDir.
func (srv *Instance) inputs(extra map[string][]byte) map[string][]byte {
	files := map[string][]byte{}
	for name, content := range srv.spec.Scenario.Files() {
		files[load.InputDir+"/"+name] = content
	}
	if srv.spec.TLS {
		files[caFile] = srv.harness.certs.CA // made when the server started
	}
	for path, content := range extra {
		files[path] = content
	}
	return files
}

// Containment of every container the harness starts: no root, a read-only
// root file system with a small tmpfs for /tmp and for each VOLUME of the
// image, a bounded number of processes and threads (capabilities, privileges and logs are bounded by
// the docker package for every container).
const (
	nobody     = "65534:65534"
	serverPids = 4096
	clientPids = 1024
	tmpfsOpts  = "rw,nosuid,nodev,size=64m,mode=1777"
	// A tmpfs over an image's VOLUME belongs to the container's user, as
	// the folder would have: the engine gives it the mode of the image's
	// folder there, and root as its owner.
	volumeOpts  = tmpfsOpts + ",uid=65534,gid=65534"
	checkMemory = 256 << 20 // probe and gate: one connection, a hundred calls
	loadMemory  = 1 << 30   // ghz keeps up to a million calls' details
)

func contained(spec backend.ContainerSpec, pids int64) backend.ContainerSpec {
	spec.User, spec.ReadOnly, spec.Tmpfs, spec.VolumeTmpfs, spec.PidsLimit = nobody, true, map[string]string{"/tmp": tmpfsOpts}, volumeOpts, pids
	return spec
}

// awaitReady runs the readiness probe next to the server. A server that
// exits meanwhile ends the wait at once rather than at the timeout.
func (srv *Instance) awaitReady(ctx context.Context) error {
	probeCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if _, err := srv.container.Wait(probeCtx); err == nil {
			cancel()
		}
	}()
	_, err := srv.runBeside(probeCtx, srv.client("probe", "--timeout", srv.spec.ReadyTimeout.String()), "probe", srv.spec.ReadyTimeout+clientGrace, nil)
	return err
}

// roundTrip times the network between the client's machine and the
// server's, before any load.
func (srv *Instance) roundTrip(ctx context.Context) error {
	spec := srv.client("rtt")
	spec.Cmd = []string{"rtt", "--target", srv.Address}
	stdout, err := srv.runBeside(ctx, spec, "round-trip", conformLimit, nil)
	if err != nil {
		return err
	}
	var rt struct {
		Median time.Duration `json:"median"`
	}
	if err := json.Unmarshal(stdout, &rt); err != nil {
		return fmt.Errorf("read the round trip: %w", err)
	}
	srv.RoundTrip = &rt.Median
	return nil
}

// conform runs the conformance gate next to the server, adds the check of
// the workers its start-up line states, and records the verdict; a server
// that fails it is not measured, one that passes with warnings (deviations
// from the spec that leave its figures valid) is.
func (srv *Instance) conform(ctx context.Context) error {
	stdout, err := srv.runBeside(ctx, srv.client("conform"), "conformance", conformLimit, nil)
	if err != nil {
		return err
	}
	var v probe.Verdict
	if err := json.Unmarshal(stdout, &v); err != nil {
		return fmt.Errorf("read the verdict: %w", err)
	}
	var log bytes.Buffer
	if err := srv.container.Logs(ctx, false, &log, &log); err != nil {
		return fmt.Errorf("read the server's log for its start-up line: %w", err)
	}
	v.Add(probe.WorkersCheck(log.Bytes(), float64(srv.spec.CPUs), srv.harness.hosts.ServerCPUs))
	srv.Conformance = conformanceOf(v)
	if !v.Passed {
		return errors.New(v.Failures())
	}
	return nil
}

// Measure loads the server with a load tool under spec while both containers
// are sampled, and returns the figures of the measurement window. The
// client's files are named name.json and name.log, the samples of both
// containers' stats name-client-samples.jsonl and name-server-samples.jsonl. The step is recorded as a phase
// called name.
func (srv *Instance) Measure(ctx context.Context, tool load.Tool, spec load.Spec, name string) (record.Measurement, error) {
	var m record.Measurement
	err := srv.phase(ctx, name, func(ctx context.Context) error {
		var err error
		m, err = srv.measure(ctx, tool, spec, name)
		return err
	})
	return m, err
}

func (srv *Instance) measure(ctx context.Context, tool load.Tool, spec load.Spec, name string) (record.Measurement, error) {
	spec.Target, spec.ScenarioDir = srv.Address, load.ScenarioDir
	if srv.spec.TLS {
		spec.CAFile = caFile
	}
	// The stats are interpolated to the window's ends, which needs the
	// sample holding the end under load all through.
	spec.Tail = usage.LoadTail
	cl, err := tool.Client(spec, srv.spec.Scenario)
	if err != nil {
		return record.Measurement{}, err
	}
	image := srv.harness.images.Client
	if t := tool.Image(); t != "" {
		image = srv.harness.images.Tools[t]
	}
	cpus := config.CPUs(spec.CPUs)
	container := srv.beside(backend.ContainerSpec{
		Image:    image,
		Cmd:      cl.Cmd,
		Labels:   srv.labels("load", "io.grpcbench.tool", tool.Name()),
		Files:    srv.inputs(cl.Files),
		InputDir: load.InputDir,
		NanoCPUs: cpus.NanoCPUs(),
		CPUSet:   srv.spec.Placement.ClientCPUSet,
		Memory:   loadMemory,
	})

	serverStats := srv.recordStats(ctx, srv.container, record.SamplesFile(name, "server"))
	var clientStats *statsRecorder
	var cpuSetErr error
	obs := srv.harness.observer
	started := time.Now()
	obs.Phase("warm-up with "+tool.Name(), spec.Warmup)
	measuring := func() {}
	if spec.Steady == nil { // else the tool ends its warm-up when it is steady, at a moment it alone knows
		t := time.AfterFunc(spec.Warmup, func() { obs.Phase("measuring with "+tool.Name(), spec.Duration) })
		measuring = func() { t.Stop() }
	}
	stdout, err := srv.runBeside(ctx, container, name, spec.Length()+clientGrace,
		func(c backend.Container) {
			clientStats = srv.recordStats(ctx, c, record.SamplesFile(name, "client"))
			cpuSetErr = srv.readCPUSets(ctx, c)
		})
	measuring()
	ended := time.Now()
	serverSamples := serverStats.stop()
	var clientSamples []backend.Sample
	if clientStats != nil {
		clientSamples = clientStats.stop()
	}
	if err == nil {
		err = cpuSetErr // after what runBeside says of a server that ended
	}
	if err != nil {
		return record.Measurement{}, err
	}
	res, err := tool.Parse(stdout, spec, started, ended)
	if err != nil {
		return record.Measurement{}, err
	}
	res.Bound()          // what the record keeps, whatever the client printed
	if res.Warmup == 0 { // a tool that does not say warmed up as long as it was told
		res.Warmup = spec.Warmup
	}
	r := resultOf(res)
	return record.Measurement{
		Load:   &r,
		Server: usageOf(usage.Summarize(serverSamples, res.Start, res.End)),
		Client: usageOf(usage.Summarize(clientSamples, res.Start, res.End)),
		Window: windowOf(res, spec.QPS > 0),
	}, nil
}

// pinned is a container whose host reads back the cores it may run on,
// where they need not be the spec's CPUSet: on Kubernetes the kubelet's
// CPU manager picks them.
type pinned interface {
	CPUSet(ctx context.Context) (string, error)
}

// readCPUSets reads back the cores the server and its load client run on.
func (srv *Instance) readCPUSets(ctx context.Context, client backend.Container) error {
	var err error
	if srv.ServerCPUSet, err = cpuSetOf(ctx, srv.container); err != nil {
		return fmt.Errorf("read the cores the server runs on: %w", err)
	}
	if srv.ClientCPUSet, err = cpuSetOf(ctx, client); err != nil {
		return fmt.Errorf("read the cores the load client runs on: %w", err)
	}
	return nil
}

// cpuSetOf is the cores a container runs on, "" from a host that does not
// read them back.
func cpuSetOf(ctx context.Context, c backend.Container) (string, error) {
	if p, ok := c.(pinned); ok {
		return p.CPUSet(ctx)
	}
	return "", nil
}

// runBeside runs a client container next to the server until it exits,
// keeps its output as <name>.json (stdout) and <name>.log (stderr) in the
// server's folder, and returns its stdout. It fails, saying how, when the
// server died meanwhile, and when the client exited non-zero.
func (srv *Instance) runBeside(ctx context.Context, spec backend.ContainerSpec, name string, limit time.Duration, started func(backend.Container)) ([]byte, error) {
	code, oom, stdout, stderr, err := srv.runToEnd(ctx, spec, limit, started)
	for file, content := range map[string][]byte{name + ".json": stdout, name + ".log": stderr} {
		if werr := srv.spec.Folder.Write(file, content); err == nil {
			err = werr
		}
	}
	// How the server ended says more than what the client saw of it.
	if exited := srv.exited(context.WithoutCancel(ctx)); exited != nil {
		return nil, exited
	}
	if err != nil {
		return nil, err
	}
	if code != 0 {
		who := clientNames[spec.Labels[backend.RoleLabel]]
		if oom || bySignal(int(code)) {
			// What it printed last is not why it ended: it is in its log.
			return nil, fmt.Errorf("%s (see %s.log)", ending(who, int(code), oom, spec.Memory), name)
		}
		return nil, fmt.Errorf("%s: %s", ending(who, int(code), oom, spec.Memory), lastLine(stderr))
	}
	return stdout, nil
}

// clientNames say what each role of client container is, in words.
var clientNames = map[string]string{
	"probe":   "the readiness probe",
	"conform": "the conformance gate",
	"rtt":     "the round-trip timer",
	"load":    "the load client",
}

// ending says how a container's process ended, in words: an exit status
// above 128 is the runtime's way of saying a signal killed it.
func ending(who string, code int, oomKilled bool, memory int64) string {
	switch {
	case oomKilled:
		return fmt.Sprintf("%s was killed for going over its memory limit of %s", who, units.BytesSize(float64(memory)))
	case bySignal(code):
		return fmt.Sprintf("%s was killed (signal %d)", who, code-128)
	}
	return fmt.Sprintf("%s exited with code %d", who, code)
}

// bySignal says an exit status is the runtime's 128 + the signal's number.
func bySignal(code int) bool { return code > 128 && code <= 128+64 }

func (srv *Instance) runToEnd(ctx context.Context, spec backend.ContainerSpec, limit time.Duration, started func(backend.Container)) (code int64, oomKilled bool, stdout, stderr []byte, err error) {
	c, err := srv.start(ctx, srv.harness.hosts.Clients, spec)
	if err != nil {
		return 0, false, nil, nil, err
	}
	// A client that outlives its own deadlines by far means a hung host.
	ctx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("%s did not end within %s: the Docker engine may be hung", spec.Cmd[0], limit))
	defer cancel()
	defer func() {
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = context.Cause(ctx)
		}
	}()
	if started != nil {
		started(c)
	}
	// Following the logs ends when the container stops; its stderr is read
	// as it comes, for the live rate of a load client.
	out, errOut := &limitedBuffer{max: maxClientOutput}, &limitedBuffer{max: maxClientOutput}
	unit := srv.spec.Scenario.Kind.RateUnit()
	live := load.ProgressWriter(errOut, func(rate float64) { srv.harness.observer.Rate(rate, unit) })
	logErr := c.Logs(ctx, true, out, live)
	live.Close()
	if out.over && logErr == nil {
		logErr = fmt.Errorf("%s printed more than %s: its output was not read", clientNames[spec.Labels[backend.RoleLabel]], units.BytesSize(maxClientOutput))
	}
	if code, err = c.Wait(ctx); err != nil {
		return code, false, out.Bytes(), errOut.Bytes(), err // what it wrote says why, when it hung
	}
	if code != 0 {
		st, err := c.State(ctx)
		if err != nil {
			return code, false, out.Bytes(), errOut.Bytes(), err
		}
		oomKilled = st.OOMKilled
	}
	return code, oomKilled, out.Bytes(), errOut.Bytes(), logErr
}

// maxClientOutput is the most of a client container's stdout, and of its
// stderr, that is read: a load report is a few KB and a load's progress
// lines a few hundred, but what a server answers reaches them (its error
// messages), and they must not grow the orchestrator or the run folder.
const maxClientOutput = 16 << 20

// limitedBuffer keeps the first max bytes written to it; over says more
// came, which it dropped. (It has no ReadFrom, which io.Copy would use
// instead of Write, so the buffer is not embedded.)
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.over = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) Bytes() []byte { return b.buf.Bytes() }

// exited returns an error when the server container is no longer running,
// saying how it ended.
func (srv *Instance) exited(ctx context.Context) error {
	st, err := srv.container.State(ctx)
	if err != nil || st.Running {
		return err
	}
	if st.OOMKilled {
		return fmt.Errorf("server was killed for going over GRPC_SERVER_RAM=%s", srv.spec.RAM)
	}
	return fmt.Errorf("%s (see server.log)", ending("server", st.ExitCode, false, 0))
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// FailureOf describes an error for the record: its phase (setup when it has
// none) and its reason ("interrupted" when the run was cancelled).
func FailureOf(err error) record.Failure {
	f := record.Failure{Phase: "setup", Reason: err.Error()}
	var pe *record.PhaseError
	if errors.As(err, &pe) {
		f.Phase, f.Reason = pe.Phase, pe.Err.Error()
	}
	if errors.Is(err, context.Canceled) {
		f.Reason, f.CutShort = "interrupted", true
	}
	return f
}
