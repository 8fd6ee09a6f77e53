// Package suite runs the benchmark: for each server, build its image, start
// it under its limits, wait until it answers, load it from a client
// container in its network namespace while sampling both containers, and
// record the outcome, whatever happens to the servers after it.
package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/baseimage"
	"github.com/grpcbench/grpcbench/orchestrator/config"
	"github.com/grpcbench/grpcbench/orchestrator/docker"
	"github.com/grpcbench/grpcbench/orchestrator/load"
	"github.com/grpcbench/grpcbench/orchestrator/probe"
	"github.com/grpcbench/grpcbench/orchestrator/report"
	"github.com/grpcbench/grpcbench/orchestrator/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/stats"
)

// ServerPort is where every server listens.
const ServerPort = 50051

// target is the server's address as the client containers see it: they
// share its network namespace, so load never leaves loopback.
var target = "127.0.0.1:" + strconv.Itoa(ServerPort)

// clientBoundShare is the share of its CPU limit above which the load
// client, not the server, is taken to set the pace.
const clientBoundShare = 0.9

// cleanupTimeout bounds the removal of a server's containers, which runs
// even after the run's context is cancelled.
const cleanupTimeout = 30 * time.Second

// Suite is one run over a list of servers.
type Suite struct {
	Engine   Engine
	Config   config.Config
	Scenario *scenario.Scenario
	// Root is the repository: servers/<name>/ and the top-level Dockerfile.
	Root string
	// Dir is the run's results folder.
	Dir string
	// Run is the record being filled and saved after each server.
	Run *report.Run
	// Out receives progress for the user.
	Out io.Writer
}

// Benchmark runs every server in turn. After each one, bench.txt and
// results.json are rewritten, so a run that dies keeps what it finished.
// It returns ctx's error when the run was interrupted.
func (s *Suite) Benchmark(ctx context.Context, servers []string) error {
	clientImage, err := s.buildClient(ctx)
	if err != nil {
		return err
	}
	for _, name := range servers {
		if ctx.Err() != nil {
			break
		}
		s.Run.Servers = append(s.Run.Servers, s.benchmark(ctx, name, clientImage))
		if err := report.Save(s.Dir, *s.Run); err != nil {
			return err
		}
	}
	s.Run.Interrupted = ctx.Err() != nil
	s.Run.Finished = time.Now()
	if err := report.Save(s.Dir, *s.Run); err != nil {
		return err
	}
	return ctx.Err()
}

// clientTag is the tag of the orchestrator's own image, which runs the
// readiness probe and the load inside the server's network namespace.
func (s *Suite) clientTag() string { return s.Config.ImageName + ":grpcbench" }

func (s *Suite) buildClient(ctx context.Context) (string, error) {
	tag := s.clientTag()
	fmt.Fprintf(s.Out, "building the load client image %s\n", tag)
	logFile, err := os.Create(filepath.Join(s.Dir, "grpcbench-build.log"))
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	if _, err := s.build(ctx, s.Root, nil, docker.BuildOptions{Tag: tag}, logFile); err != nil {
		return "", fmt.Errorf("build the load client image (log: %s): %w", logFile.Name(), err)
	}
	return tag, nil
}

// build makes sure the Dockerfile's base images exist, then builds dir
// (plus extra files) into an image.
func (s *Suite) build(ctx context.Context, dir string, extra map[string][]byte, opts docker.BuildOptions, log io.Writer) (string, error) {
	dockerfile, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		return "", err
	}
	if err := baseimage.Ensure(ctx, s.Engine, baseimage.FromImages(dockerfile), log); err != nil {
		return "", err
	}
	archive := docker.NewArchive().AddDir(dir, "")
	for name, content := range extra {
		archive.AddBytes(name, content, 0o644)
	}
	buildContext, err := archive.Reader()
	if err != nil {
		return "", err
	}
	return s.Engine.Build(ctx, buildContext, opts, log)
}

// serverRun is the state of one server's benchmark.
type serverRun struct {
	*Suite
	// Config is the settings this server runs under: the suite's, or the
	// suite's under another load shape when shapes are compared.
	Config     config.Config
	dir        string
	result     report.Server
	containers []Container
}

func (s *Suite) newServerRun(name string) *serverRun {
	return &serverRun{Suite: s, Config: s.Config, dir: filepath.Join(s.Dir, name), result: report.Server{
		Name:     name,
		Scenario: s.Scenario.Name,
		Image:    fmt.Sprintf("%s:%s-%s", s.Config.ImageName, name, s.Scenario.Name),
	}}
}

func (s *Suite) benchmark(ctx context.Context, name, clientImage string) report.Server {
	r := s.newServerRun(name)
	defer r.removeContainers(ctx)
	server, phase, err := r.bringUp(ctx, clientImage)
	if server != nil {
		defer r.saveServerLogs(ctx, server)
	}
	if err != nil {
		return r.fail(phase, err)
	}
	fmt.Fprintf(s.Out, "%s: ready; warm-up %s, then measuring %s\n", name, s.Config.Warmup, s.Config.Duration)
	if err := r.phase(ctx, "load", func(ctx context.Context) error { return r.load(ctx, server, clientImage) }); err != nil {
		return r.fail("load", err)
	}
	res := r.result
	fmt.Fprintf(s.Out, "%s: %.0f req/s, server CPU %.1f%%, client CPU %.1f%%\n", name, res.Load.RPS, res.Server.CPUAvgPercent, res.Client.CPUAvgPercent)
	return res
}

// bringUp builds, starts and waits for the server, recording each phase.
// On failure it names the phase; the server is returned once started.
func (r *serverRun) bringUp(ctx context.Context, clientImage string) (Container, string, error) {
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, "setup", err
	}
	fmt.Fprintf(r.Out, "%s: building %s\n", r.result.Name, r.result.Image)
	if err := r.phase(ctx, "build", r.buildServer); err != nil {
		return nil, "build", fmt.Errorf("%w (log: %s)", err, filepath.Join(r.dir, "build.log"))
	}
	var server Container
	if err := r.phase(ctx, "start", func(ctx context.Context) (err error) {
		server, err = r.startServer(ctx)
		return err
	}); err != nil {
		return nil, "start", err
	}
	if err := r.phase(ctx, "readiness", func(ctx context.Context) error { return r.awaitReady(ctx, server, clientImage) }); err != nil {
		return server, "readiness", err
	}
	if err := r.phase(ctx, "conformance", func(ctx context.Context) error { return r.conform(ctx, server, clientImage) }); err != nil {
		return server, "conformance", err
	}
	return server, "", nil
}

// conform runs the conformance gate next to the server and records its
// verdict; a server that fails it is not measured.
func (r *serverRun) conform(ctx context.Context, server Container, clientImage string) error {
	stdout, err := r.runBeside(ctx, server, r.client(server, clientImage, "conform"), "conformance", nil)
	if err != nil {
		return err
	}
	var v probe.Verdict
	if err := json.Unmarshal(stdout, &v); err != nil {
		return fmt.Errorf("read the verdict: %w", err)
	}
	r.result.Conformance = &v
	if !v.Passed {
		return errors.New(v.Failures())
	}
	return nil
}

// phase runs one step and records when it started and how long it took.
func (r *serverRun) phase(ctx context.Context, name string, step func(context.Context) error) error {
	start := time.Now()
	err := step(ctx)
	r.result.Phases = append(r.result.Phases, report.Phase{Name: name, Start: start, Seconds: time.Since(start).Seconds()})
	return err
}

func (r *serverRun) fail(phase string, err error) report.Server {
	reason := err.Error()
	if errors.Is(err, context.Canceled) {
		reason = "interrupted"
	}
	slog.Debug("server failed", "server", r.result.Name, "phase", phase, "err", err)
	fmt.Fprintf(r.Out, "%s: %s failed: %s\n", r.result.Name, phase, reason)
	r.result.Failure = &report.Failure{Phase: phase, Reason: reason}
	return r.result
}

func (r *serverRun) removeContainers(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	for _, c := range r.containers {
		if err := c.Remove(ctx); err != nil {
			slog.Error("remove container", "server", r.result.Name, "container", c.ID(), "err", err)
		}
	}
}

func (r *serverRun) labels(role string) map[string]string {
	return map[string]string{
		docker.RunLabel:       r.Run.ID,
		docker.ImagesLabel:    r.Config.ImageName,
		docker.RoleLabel:      role,
		"io.grpcbench.server": r.result.Name,
	}
}

// start starts a container that is removed when the server's benchmark ends.
func (r *serverRun) start(ctx context.Context, spec docker.ContainerSpec) (Container, error) {
	c, err := r.Engine.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	r.containers = append(r.containers, c)
	return c, nil
}

func (r *serverRun) buildServer(ctx context.Context) error {
	log, err := os.Create(filepath.Join(r.dir, "build.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	labels := map[string]string{"io.grpcbench.server": r.result.Name, "io.grpcbench.scenario": r.Scenario.Name}
	r.result.ImageID, err = r.build(ctx, filepath.Join(r.Root, "servers", r.result.Name), r.Scenario.Files(),
		docker.BuildOptions{Tag: r.result.Image, Labels: labels}, log)
	return err
}

func (r *serverRun) startServer(ctx context.Context) (Container, error) {
	return r.start(ctx, docker.ContainerSpec{
		Image: r.result.Image,
		Env: []string{
			"GRPC_SERVER_CPUS=" + r.Config.ServerCPUs.String(),
			"GRPC_SERVER_RAM=" + r.Config.ServerRAM.String(),
		},
		Labels:   r.labels("server"),
		NanoCPUs: r.Config.ServerCPUs.NanoCPUs(),
		CPUSet:   r.Run.Placement.ServerCPUSet,
		Memory:   int64(r.Config.ServerRAM),
	})
}

// client describes a container of the client image in the server's network
// namespace, with the scenario's files under /scenario.
func (r *serverRun) client(server Container, clientImage, role string, args ...string) docker.ContainerSpec {
	return docker.ContainerSpec{
		Image:     clientImage,
		Cmd:       append([]string{role, "--target", target, "--scenario", "/" + scenario.Dir}, args...),
		Labels:    r.labels(role),
		NetworkOf: server.ID(),
		Files:     r.Scenario.Files(),
	}
}

// runBeside runs a client container next to the server until it exits,
// keeps its output as <name>.json (stdout) and <name>.log (stderr) in the
// server's folder, and returns its stdout. It fails, saying how, when the
// server died meanwhile, and when the client exited non-zero.
func (r *serverRun) runBeside(ctx context.Context, server Container, spec docker.ContainerSpec, name string, started func(Container)) ([]byte, error) {
	code, stdout, stderr, err := r.runToEnd(ctx, spec, started)
	if werr := writeFiles(r.dir, map[string][]byte{name + ".json": stdout, name + ".log": stderr}); err == nil {
		err = werr
	}
	// How the server ended says more than what the client saw of it.
	if exited := r.serverExited(context.WithoutCancel(ctx), server); exited != nil {
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

func (r *serverRun) runToEnd(ctx context.Context, spec docker.ContainerSpec, started func(Container)) (code int64, stdout, stderr []byte, err error) {
	c, err := r.start(ctx, spec)
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

// awaitReady runs the readiness probe next to the server. A server that
// exits meanwhile ends the wait at once rather than at the timeout.
func (r *serverRun) awaitReady(ctx context.Context, server Container, clientImage string) error {
	probeCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if _, err := server.Wait(probeCtx); err == nil {
			cancel()
		}
	}()
	_, err := r.runBeside(probeCtx, server, r.client(server, clientImage, "probe", "--timeout", r.Config.ReadyTimeout.String()), "probe", nil)
	return err
}

// serverExited returns an error when the server container is no longer
// running, saying how it ended.
func (r *serverRun) serverExited(ctx context.Context, server Container) error {
	st, err := server.State(ctx)
	if err != nil || st.Running {
		return err
	}
	if st.OOMKilled {
		return fmt.Errorf("server was killed for going over GRPC_SERVER_RAM=%s", r.Config.ServerRAM)
	}
	return fmt.Errorf("server exited with code %d (see server.log)", st.ExitCode)
}

// load runs the load client next to the server and keeps the figures of
// the measurement window.
func (r *serverRun) load(ctx context.Context, server Container, clientImage string) error {
	m, err := r.measure(ctx, server, r.loadgen(server, clientImage, r.Config.LoadEngine), "", parseLoadgen)
	if err != nil {
		return err
	}
	r.result.Load, r.result.Server, r.result.Client = &m.Load, m.Server, m.Client
	r.result.ClientBound = m.Client.CPUAvgPercent >= clientBoundShare*100*float64(r.Config.ClientCPUs)
	if m.Load.OK == 0 {
		return fmt.Errorf("no call succeeded (%s)", m.Load.Failures())
	}
	return nil
}

// loadgen is the load client container for an engine of our own image.
func (r *serverRun) loadgen(server Container, clientImage, engine string) docker.ContainerSpec {
	spec := r.client(server, clientImage, "loadgen",
		"--engine", engine,
		"--connections", strconv.Itoa(r.Config.Connections),
		"--concurrency", strconv.Itoa(r.Config.Concurrency),
		"--qps", strconv.Itoa(r.Config.QPS),
		"--warmup", r.Config.Warmup.String(),
		"--duration", r.Config.Duration.String(),
		"--cpus", r.Config.ClientCPUs.String(),
	)
	spec.NanoCPUs = r.Config.ClientCPUs.NanoCPUs()
	spec.CPUSet = r.Run.Placement.ClientCPUSet
	return spec
}

func parseLoadgen(stdout []byte, _, _ time.Time) (load.Result, error) {
	var res load.Result
	if err := json.Unmarshal(stdout, &res); err != nil {
		return res, fmt.Errorf("read the load report: %w", err)
	}
	return res, nil
}

// Measurement is what one load client measured, with both containers' stats
// over its measurement window.
type Measurement struct {
	Load   load.Result   `json:"load"`
	Server stats.Summary `json:"server"`
	Client stats.Summary `json:"client"`
}

// measure runs a load client container next to the server while both are
// sampled. parse reads the client's report, given when the container
// started and ended. Files are named with prefix.
func (r *serverRun) measure(ctx context.Context, server Container, spec docker.ContainerSpec, prefix string,
	parse func(stdout []byte, started, ended time.Time) (load.Result, error)) (Measurement, error) {
	serverStats := r.record(ctx, server, prefix+"server-stats.jsonl")
	var clientStats *recorder
	started := time.Now()
	stdout, err := r.runBeside(ctx, server, spec, prefix+"load", func(c Container) { clientStats = r.record(ctx, c, prefix+"client-stats.jsonl") })
	ended := time.Now()
	serverSamples := serverStats.stop()
	var clientSamples []stats.Sample
	if clientStats != nil {
		clientSamples = clientStats.stop()
	}
	if err != nil {
		return Measurement{}, err
	}
	res, err := parse(stdout, started, ended)
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{
		Load:   res,
		Server: stats.Summarize(serverSamples, res.Start, res.End),
		Client: stats.Summarize(clientSamples, res.Start, res.End),
	}, nil
}

func (r *serverRun) saveServerLogs(ctx context.Context, server Container) {
	f, err := os.Create(filepath.Join(r.dir, "server.log"))
	if err != nil {
		slog.Error("save server log", "server", r.result.Name, "err", err)
		return
	}
	defer f.Close()
	if err := server.Logs(context.WithoutCancel(ctx), f, f); err != nil {
		slog.Error("save server log", "server", r.result.Name, "err", err)
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func writeFiles(dir string, files map[string][]byte) error {
	var errs []error
	for name, content := range files {
		errs = append(errs, os.WriteFile(filepath.Join(dir, name), content, 0o644))
	}
	return errors.Join(errs...)
}

// BuildImages builds the client image and each server's image, without
// running anything; the first failure ends it.
func (s *Suite) BuildImages(ctx context.Context, servers []string) error {
	if _, err := s.buildClient(ctx); err != nil {
		return err
	}
	for _, name := range servers {
		r := s.newServerRun(name)
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return err
		}
		fmt.Fprintf(s.Out, "%s: building %s\n", name, r.result.Image)
		if err := r.buildServer(ctx); err != nil {
			return fmt.Errorf("build %s (log: %s): %w", name, filepath.Join(r.dir, "build.log"), err)
		}
	}
	return nil
}
