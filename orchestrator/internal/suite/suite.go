// Package suite does one job: bring a server up on a Docker engine (start
// it under its limits, wait until it answers, pass it through the
// conformance gate), measure it with a load engine from a client container
// in its network namespace while both containers are sampled, and tear it
// down, keeping its logs, whatever happened to it.
package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/docker"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// ServerPort is where every server listens.
const ServerPort = 50051

// Target is the server's address as the client containers see it: they
// share its network namespace, so load never leaves loopback.
var Target = "127.0.0.1:" + strconv.Itoa(ServerPort)

// cleanupTimeout bounds the removal of a server's containers, which runs
// even after the run's context is cancelled.
const cleanupTimeout = 30 * time.Second

// Suite brings servers up on one engine and measures them.
type Suite struct {
	Engine Engine
	// ClientImage is the orchestrator's own image: it runs the readiness
	// probe, the conformance gate and the load engines that are Runners.
	ClientImage string
	// Tools are the images of the other engines, by engine name.
	Tools map[string]string
	// Labels mark every container the suite starts (the run, the image name).
	Labels    map[string]string
	Placement report.Placement
}

// ServerSpec is a server to bring up.
type ServerSpec struct {
	Name         string
	Image        string
	Scenario     *scenario.Scenario
	CPUs         config.CPUs
	RAM          config.Bytes
	ReadyTimeout time.Duration
	// Folder receives the server's log and what its clients printed.
	Folder report.Folder
}

// PhaseError says in which phase a server failed.
type PhaseError struct {
	Phase string
	Err   error
}

func (e *PhaseError) Error() string { return e.Phase + " failed: " + e.Err.Error() }
func (e *PhaseError) Unwrap() error { return e.Err }

// Server is a server container and every container started beside it.
type Server struct {
	suite      *Suite
	spec       ServerSpec
	container  Container
	containers []Container
	// Phases are the steps taken so far, with their timings.
	Phases []report.Phase
	// Conformance is the gate's verdict, once given.
	Conformance *probe.Verdict
}

// Up starts the server, waits until it answers and passes it through the
// conformance gate. It always returns the Server, whose Down must be
// called; an error is a *PhaseError.
func (s *Suite) Up(ctx context.Context, spec ServerSpec) (*Server, error) {
	srv := &Server{suite: s, spec: spec}
	err := srv.phase(ctx, "start", func(ctx context.Context) (err error) {
		srv.container, err = srv.start(ctx, docker.ContainerSpec{
			Image: spec.Image,
			Env: []string{
				"GRPC_SERVER_CPUS=" + spec.CPUs.String(),
				"GRPC_SERVER_RAM=" + spec.RAM.String(),
			},
			Labels:   srv.labels("server"),
			NanoCPUs: spec.CPUs.NanoCPUs(),
			CPUSet:   s.Placement.ServerCPUSet,
			Memory:   int64(spec.RAM),
		})
		return err
	})
	if err == nil {
		err = srv.phase(ctx, "readiness", srv.awaitReady)
	}
	if err == nil {
		err = srv.phase(ctx, "conformance", srv.conform)
	}
	return srv, err
}

// phase runs one step and records when it started and how long it took.
func (srv *Server) phase(ctx context.Context, name string, step func(context.Context) error) error {
	start := time.Now()
	err := step(ctx)
	srv.Phases = append(srv.Phases, report.Phase{Name: name, Start: start, Seconds: time.Since(start).Seconds()})
	if err != nil {
		return &PhaseError{Phase: name, Err: err}
	}
	return nil
}

// Down saves the server's log and removes every container started for it,
// even when ctx is cancelled.
func (srv *Server) Down(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if srv.container != nil {
		srv.saveLog(ctx)
	}
	for _, c := range srv.containers {
		if err := c.Remove(ctx); err != nil {
			slog.Error("remove container", "server", srv.spec.Name, "container", c.ID(), "err", err)
		}
	}
}

func (srv *Server) saveLog(ctx context.Context) {
	f, err := srv.spec.Folder.Create("server.log")
	if err == nil {
		err = srv.container.Logs(ctx, f, f)
		f.Close()
	}
	if err != nil {
		slog.Error("save server log", "server", srv.spec.Name, "err", err)
	}
}

// labels are the suite's labels, the container's role and server, and
// extra key-value pairs.
func (srv *Server) labels(role string, extra ...string) map[string]string {
	labels := map[string]string{docker.RoleLabel: role, "io.grpcbench.server": srv.spec.Name}
	for i := 0; i+1 < len(extra); i += 2 {
		labels[extra[i]] = extra[i+1]
	}
	for k, v := range srv.suite.Labels {
		labels[k] = v
	}
	return labels
}

// start starts a container that Down removes.
func (srv *Server) start(ctx context.Context, spec docker.ContainerSpec) (Container, error) {
	c, err := srv.suite.Engine.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	srv.containers = append(srv.containers, c)
	return c, nil
}

// client describes a container of the client image in the server's network
// namespace, with the scenario's files under /scenario.
func (srv *Server) client(role string, args ...string) docker.ContainerSpec {
	return docker.ContainerSpec{
		Image:     srv.suite.ClientImage,
		Cmd:       append([]string{role, "--target", Target, "--scenario", "/" + scenario.Dir}, args...),
		Labels:    srv.labels(role),
		NetworkOf: srv.container.ID(),
		Files:     srv.spec.Scenario.Files(),
	}
}

// awaitReady runs the readiness probe next to the server. A server that
// exits meanwhile ends the wait at once rather than at the timeout.
func (srv *Server) awaitReady(ctx context.Context) error {
	probeCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if _, err := srv.container.Wait(probeCtx); err == nil {
			cancel()
		}
	}()
	_, err := srv.runBeside(probeCtx, srv.client("probe", "--timeout", srv.spec.ReadyTimeout.String()), "probe", nil)
	return err
}

// conform runs the conformance gate next to the server and records its
// verdict; a server that fails it is not measured, one that passes with
// warnings (deviations from the spec that leave its figures valid) is.
func (srv *Server) conform(ctx context.Context) error {
	stdout, err := srv.runBeside(ctx, srv.client("conform"), "conformance", nil)
	if err != nil {
		return err
	}
	var v probe.Verdict
	if err := json.Unmarshal(stdout, &v); err != nil {
		return fmt.Errorf("read the verdict: %w", err)
	}
	srv.Conformance = &v
	if !v.Passed {
		return errors.New(v.Failures())
	}
	return nil
}

// Measure loads the server with an engine under spec while both containers
// are sampled, and returns the figures of the measurement window. The
// client's files are named name.json, name.log and name-stats.jsonl (the
// server's stats: name-server-stats.jsonl). The step is recorded as a phase
// called name.
func (srv *Server) Measure(ctx context.Context, engine load.Engine, spec load.Spec, name string) (report.Measurement, error) {
	var m report.Measurement
	err := srv.phase(ctx, name, func(ctx context.Context) error {
		var err error
		m, err = srv.measure(ctx, engine, spec, name)
		return err
	})
	return m, err
}

func (srv *Server) measure(ctx context.Context, engine load.Engine, spec load.Spec, name string) (report.Measurement, error) {
	spec.Target, spec.ScenarioDir = Target, "/"+scenario.Dir
	cl, err := engine.Client(spec, srv.spec.Scenario)
	if err != nil {
		return report.Measurement{}, err
	}
	image := srv.suite.ClientImage
	if t := engine.Tool(); t != "" {
		image = srv.suite.Tools[t]
	}
	files := srv.spec.Scenario.Files()
	for path, content := range cl.Files {
		files[path] = content
	}
	cpus := config.CPUs(spec.CPUs)
	container := docker.ContainerSpec{
		Image:     image,
		Cmd:       cl.Cmd,
		Labels:    srv.labels("load", "io.grpcbench.engine", engine.Name()),
		NetworkOf: srv.container.ID(),
		Files:     files,
		NanoCPUs:  cpus.NanoCPUs(),
		CPUSet:    srv.suite.Placement.ClientCPUSet,
	}

	serverStats := srv.record(ctx, srv.container, name+"-server-stats.jsonl")
	var clientStats *recorder
	started := time.Now()
	stdout, err := srv.runBeside(ctx, container, name, func(c Container) { clientStats = srv.record(ctx, c, name+"-client-stats.jsonl") })
	ended := time.Now()
	serverSamples := serverStats.stop()
	var clientSamples []stats.Sample
	if clientStats != nil {
		clientSamples = clientStats.stop()
	}
	if err != nil {
		return report.Measurement{}, err
	}
	res, err := engine.Parse(stdout, spec, started, ended)
	if err != nil {
		return report.Measurement{}, err
	}
	return report.Measurement{
		Load:   &res,
		Server: stats.Summarize(serverSamples, res.Start, res.End),
		Client: stats.Summarize(clientSamples, res.Start, res.End),
	}, nil
}

// runBeside runs a client container next to the server until it exits,
// keeps its output as <name>.json (stdout) and <name>.log (stderr) in the
// server's folder, and returns its stdout. It fails, saying how, when the
// server died meanwhile, and when the client exited non-zero.
func (srv *Server) runBeside(ctx context.Context, spec docker.ContainerSpec, name string, started func(Container)) ([]byte, error) {
	code, stdout, stderr, err := srv.runToEnd(ctx, spec, started)
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
		return nil, fmt.Errorf("%s (%s exited with code %d)", lastLine(stderr), spec.Cmd[0], code)
	}
	return stdout, nil
}

func (srv *Server) runToEnd(ctx context.Context, spec docker.ContainerSpec, started func(Container)) (code int64, stdout, stderr []byte, err error) {
	c, err := srv.start(ctx, spec)
	if err != nil {
		return 0, nil, nil, err
	}
	if started != nil {
		started(c)
	}
	if code, err = c.Wait(ctx); err != nil {
		return code, nil, nil, err
	}
	var out, errOut bytes.Buffer
	err = c.Logs(ctx, &out, &errOut)
	return code, out.Bytes(), errOut.Bytes(), err
}

// exited returns an error when the server container is no longer running,
// saying how it ended.
func (srv *Server) exited(ctx context.Context) error {
	st, err := srv.container.State(ctx)
	if err != nil || st.Running {
		return err
	}
	if st.OOMKilled {
		return fmt.Errorf("server was killed for going over GRPC_SERVER_RAM=%s", srv.spec.RAM)
	}
	return fmt.Errorf("server exited with code %d (see server.log)", st.ExitCode)
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// FailureOf describes an error for the record: its phase (setup when it has
// none) and its reason ("interrupted" when the run was cancelled).
func FailureOf(err error) report.Failure {
	f := report.Failure{Phase: "setup", Reason: err.Error()}
	var pe *PhaseError
	if errors.As(err, &pe) {
		f.Phase, f.Reason = pe.Phase, pe.Err.Error()
	}
	if errors.Is(err, context.Canceled) {
		f.Reason = "interrupted"
	}
	return f
}
