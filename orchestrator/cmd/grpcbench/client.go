package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/certs"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/kube"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// clientFlags are shared by the commands that run in the client container.
type clientFlags struct {
	Target   string `help:"Server address; the client shares its network namespace." default:"127.0.0.1:50051"`
	Scenario string `help:"Folder with helloworld.proto and payload.json." default:"/input/scenario" type:"existingdir"`
	TLSCA    string `name:"tls-ca" help:"The run's CA certificate (PEM): connect over TLS, verifying the server's chain against it, with ALPN h2." type:"existingfile"`
}

// server is where the flags say the server is, and how to reach it.
func (f clientFlags) server() (probe.Server, error) {
	s := probe.Server{Target: f.Target}
	if f.TLSCA == "" {
		return s, nil
	}
	ca, err := os.ReadFile(f.TLSCA)
	if err != nil {
		return s, err
	}
	if s.TLS, err = certs.ClientConfig(ca); err != nil {
		return s, fmt.Errorf("--tls-ca %s: %w", f.TLSCA, err)
	}
	return s, nil
}

type loadgenCmd struct {
	Spec string `help:"The load spec, as JSON." default:"/input/spec.json" type:"existingfile"`
}

// Run prints the load.Result as JSON on stdout; logs go to stderr.
func (c *loadgenCmd) Run(ctx context.Context, std streams) error {
	js, err := os.ReadFile(c.Spec)
	if err != nil {
		return err
	}
	spec, err := load.ReadSpec(js)
	if err != nil {
		return err
	}
	t, ok := load.Lookup(spec.Tool)
	runner, inProcess := t.(load.Runner)
	if !ok || !inProcess {
		return fmt.Errorf("load spec: %q is not a load tool that runs here; those are %v", spec.Tool, load.Names(load.Runners()))
	}
	if err := load.Drives(runner, spec.Kind); err != nil {
		return fmt.Errorf("load spec: %w", err)
	}
	// Go's own default never goes below 2 under a 1-core quota.
	runtime.GOMAXPROCS(config.CPUs(spec.CPUs).Cores())
	slog.Info("load", "spec", spec, "gomaxprocs", runtime.GOMAXPROCS(0))
	spec.Answered = new(atomic.Uint64)
	stop := load.ReportProgress(std.Stderr, spec.Answered, time.Second)
	res, err := runner.Run(ctx, spec)
	stop()
	if err != nil {
		return err
	}
	return json.NewEncoder(std.Stdout).Encode(res)
}

type probeCmd struct {
	clientFlags
	Timeout time.Duration `help:"How long the server has to answer." default:"60s"`
}

func (c *probeCmd) Run(ctx context.Context, std streams) error {
	sc, err := scenario.Load(ctx, c.Scenario)
	if err != nil {
		return err
	}
	srv, err := c.server()
	if err != nil {
		return err
	}
	start := time.Now()
	attempts, err := probe.Ready(ctx, srv, sc, c.Timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(std.Stderr, "ready after %d attempts in %s\n", attempts, time.Since(start).Round(time.Millisecond))
	return nil
}

type rttCmd struct {
	Target string `help:"Server address." required:""`
	Count  int    `help:"TCP handshakes to time." default:"20"`
}

// Run prints the median round trip of TCP handshakes to the target, as
// JSON.
func (c *rttCmd) Run(ctx context.Context, std streams) error {
	d, err := probe.RoundTrip(ctx, c.Target, max(1, c.Count))
	if err != nil {
		return err
	}
	return json.NewEncoder(std.Stdout).Encode(struct {
		Median time.Duration `json:"median"`
	}{d})
}

type isolateCmd struct{}

// Run leaves the network namespace loopback only: kube.IsolateCommand.
func (isolateCmd) Run() error { return kube.Isolate() }

type conformCmd struct {
	clientFlags
}

// Run prints the conformance verdict as JSON; a server that fails the gate
// is not an error of this command.
func (c *conformCmd) Run(ctx context.Context, std streams) error {
	sc, err := scenario.Load(ctx, c.Scenario)
	if err != nil {
		return err
	}
	srv, err := c.server()
	if err != nil {
		return err
	}
	v, err := probe.Conform(ctx, srv, sc)
	if err != nil {
		return err
	}
	return json.NewEncoder(std.Stdout).Encode(v)
}

type envCmd struct{}

// Run prints the settings as .env.example holds them.
func (envCmd) Run(std streams) error {
	var b strings.Builder
	b.WriteString("# grpcbench settings. Copy to .env and uncomment what you change;\n# variables set in the environment win over this file.\n")
	cfg, err := config.Parse(nil, config.Offered(load.Runners()))
	if err != nil {
		return err
	}
	for _, s := range cfg.All() {
		fmt.Fprintf(&b, "\n# %s\n#%s=%s\n", s.Help, s.Name, s.Default)
	}
	_, err = io.WriteString(std.Stdout, b.String())
	return err
}
