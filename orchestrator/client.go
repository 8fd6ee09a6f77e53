package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/config"
	"github.com/grpcbench/grpcbench/orchestrator/load"
	"github.com/grpcbench/grpcbench/orchestrator/probe"
	"github.com/grpcbench/grpcbench/orchestrator/scenario"
)

// clientFlags are shared by the commands that run in the client container.
type clientFlags struct {
	Target   string `help:"Server address; the client shares its network namespace." default:"127.0.0.1:50051"`
	Scenario string `help:"Folder with helloworld.proto and payload.json." default:"/scenario" type:"existingdir"`
}

type loadgenCmd struct {
	clientFlags
	Engine      string        `help:"Load engine." enum:"ghz,h2" default:"ghz"`
	Connections int           `help:"HTTP/2 connections." default:"50"`
	Concurrency int           `help:"Calls in flight over all connections." default:"1000"`
	QPS         int           `name:"qps" help:"Total request rate; 0 is unlimited." default:"0"`
	Warmup      time.Duration `help:"Unmeasured load first." default:"5s"`
	Duration    time.Duration `help:"Measured load." default:"20s"`
	CPUs        config.CPUs   `name:"cpus" help:"CPU limit of this container, for GOMAXPROCS." default:"1"`
}

// Run prints the load.Result as JSON on stdout; logs go to stderr.
func (c *loadgenCmd) Run(ctx context.Context) error {
	// Go's own default never goes below 2 under a 1-core quota.
	runtime.GOMAXPROCS(c.CPUs.Cores())
	slog.Info("load", "engine", c.Engine, "target", c.Target, "connections", c.Connections, "concurrency", c.Concurrency, "qps", c.QPS, "gomaxprocs", runtime.GOMAXPROCS(0))
	run := load.GHZ
	if c.Engine == "h2" {
		run = load.H2
	}
	res, err := run(ctx, load.Spec{
		Target:      c.Target,
		ScenarioDir: c.Scenario,
		Connections: c.Connections,
		Concurrency: c.Concurrency,
		QPS:         c.QPS,
		Warmup:      c.Warmup,
		Duration:    c.Duration,
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

type probeCmd struct {
	clientFlags
	Timeout time.Duration `help:"How long the server has to answer." default:"60s"`
}

func (c *probeCmd) Run(ctx context.Context) error {
	sc, err := scenario.Load(ctx, c.Scenario)
	if err != nil {
		return err
	}
	start := time.Now()
	attempts, err := probe.Ready(ctx, c.Target, sc, c.Timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ready after %d attempts in %s\n", attempts, time.Since(start).Round(time.Millisecond))
	return nil
}

type conformCmd struct {
	clientFlags
}

// Run prints the conformance verdict as JSON; a server that fails the gate
// is not an error of this command.
func (c *conformCmd) Run(ctx context.Context) error {
	sc, err := scenario.Load(ctx, c.Scenario)
	if err != nil {
		return err
	}
	v, err := probe.Conform(ctx, c.Target, sc)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(v)
}

type envCmd struct{}

// Run prints the settings as .env.example holds them.
func (envCmd) Run() error {
	fmt.Print("# grpcbench settings. Copy to .env and uncomment what you change;\n# variables set in the environment win over this file.\n")
	for _, s := range (config.Config{}).Settings() {
		fmt.Printf("\n# %s\n#%s=%s\n", s.Help, s.Name, s.Default)
	}
	return nil
}
