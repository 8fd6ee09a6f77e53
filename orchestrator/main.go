// Command grpcbench benchmarks gRPC servers in containers. `grpcbench bench`
// (the default) runs the suite; `loadgen` and `probe` are what it runs inside
// the client containers.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/grpcbench/grpcbench/orchestrator/config"
	"github.com/grpcbench/grpcbench/orchestrator/docker"
)

// Exit codes.
const (
	exitFailure     = 1
	exitBadInput    = 2
	exitNotRanked   = 3
	exitInterrupted = 130

	kongUsageError = 80 // kong's status for a command line it cannot parse
)

type cli struct {
	Verbose bool `help:"Log diagnostics to stderr." short:"v"`

	Bench    benchCmd    `cmd:"" default:"1" help:"Build, run and load every server; write results/<run>/ (settings come from the environment and .env)."`
	Images   imagesCmd   `cmd:"" help:"Build the base images, the client image and the servers' images without benchmarking."`
	Check    checkCmd    `cmd:"" help:"Build every server for every scenario and pass it through the conformance gate; print servers x scenarios."`
	Engines  enginesCmd  `cmd:"" help:"Load one server with each load engine (h2, ghz, h2load) and compare their cost per call."`
	Accuracy accuracyCmd `cmd:"" help:"Compare the h2 engine with h2load on every server under several load shapes: req/s and mean latency, medians of alternating rounds."`
	Env      envCmd      `cmd:"" help:"Print every setting with its default and meaning, as .env.example holds them."`
	Loadgen  loadgenCmd  `cmd:"" hidden:"" help:"Load one server and print the result as JSON (runs in the client container)."`
	Probe    probeCmd    `cmd:"" hidden:"" help:"Wait until a server answers SayHello (runs in the client container)."`
	Conform  conformCmd  `cmd:"" hidden:"" help:"Check that a server echoes, takes concurrent calls and refuses unknown methods (runs in the client container)."`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var c cli
	kctx := kong.Parse(&c, kong.Name("grpcbench"), kong.Description("Containerized, reproducible gRPC server benchmarks."),
		kong.UsageOnError(), kong.BindTo(ctx, (*context.Context)(nil)),
		// A flag kong refuses is bad input like a setting Validate refuses.
		kong.Exit(func(code int) {
			if code == kongUsageError {
				code = exitBadInput
			}
			os.Exit(code)
		}))
	level := slog.LevelWarn
	if c.Verbose {
		level = slog.LevelDebug
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	err := kctx.Run()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "grpcbench:", err)
	var cfgErr *config.Error
	var unreachable *docker.UnreachableError
	switch {
	case errors.As(err, &cfgErr):
		os.Exit(exitBadInput)
	case errors.As(err, &unreachable):
		os.Exit(exitFailure)
	case errors.Is(err, errNotRanked):
		os.Exit(exitNotRanked)
	case errors.Is(err, context.Canceled):
		os.Exit(exitInterrupted)
	default:
		os.Exit(exitFailure)
	}
}
