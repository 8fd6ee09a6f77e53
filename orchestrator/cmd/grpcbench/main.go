// Command grpcbench benchmarks gRPC servers in containers. `grpcbench bench`
// (the default) runs the benchmark; `loadgen`, `probe` and `conform` are what it
// runs inside the client containers. Each command builds its options and
// calls the packages under internal/.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/alecthomas/kong"
	"golang.org/x/sys/unix"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scratch"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"

	// The backends a run can use, each serving its address schemes.
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/docker"
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/kube"
)

// Exit statuses.
const (
	exitOK          = 0
	exitFailure     = 1
	exitBadInput    = 2
	exitNotRanked   = 3
	exitRegression  = 4
	exitUnfinished  = 5
	exitInterrupted = 130
)

// errNotRanked says that the run finished but some servers failed.
var errNotRanked = errors.New("servers not ranked")

type cli struct {
	Verbose bool `help:"Log diagnostics to stderr." short:"v"`

	Bench    benchCmd    `cmd:"" default:"1" help:"Build, run and load every server; write results/<run>/ (settings come from the environment and .env)."`
	Images   imagesCmd   `cmd:"" help:"Build the base images, the client image and the servers' images without benchmarking."`
	Check    checkCmd    `cmd:"" help:"Build every server for every scenario and pass it through the conformance gate; print servers x scenarios."`
	Tools    toolsCmd    `cmd:"" help:"Load one server with each load tool (${toolList}) and compare their cost per call."`
	Accuracy accuracyCmd `cmd:"" help:"Compare one load tool with a reference tool on every server under several load shapes: req/s and mean latency, medians of alternating rounds."`
	Compare  compareCmd  `cmd:"" help:"Compare two runs: every server and cell of either, both medians, the change, whether it is significant; with --fail-on regression, exit 4 when a server got slower, 5 when either run did not finish."`
	Report   reportCmd   `cmd:"" help:"Rewrite bench.txt, summary.txt, results.csv, results.md and report.html of a run folder from its results.json."`
	Env      envCmd      `cmd:"" help:"Print every setting with its default and meaning, as .env.example holds them."`
	Loadgen  loadgenCmd  `cmd:"" hidden:"" help:"Load one server as a spec file says and print the result as JSON (runs in the client container)."`
	Probe    probeCmd    `cmd:"" hidden:"" help:"Wait until a server answers SayHello (runs in the client container)."`
	Conform  conformCmd  `cmd:"" hidden:"" help:"Check that a server echoes, takes concurrent calls and refuses unknown methods (runs in the client container)."`
	RTT      rttCmd      `cmd:"" name:"rtt" hidden:"" help:"Time TCP handshakes to a server on another machine (runs in the client container)."`
	Isolate  isolateCmd  `cmd:"" hidden:"" help:"Set every network interface but loopback down (runs in the init container of a server's pod on Kubernetes)."`
	Engines  renamedCmd  `cmd:"" hidden:"" help:"Renamed: grpcbench tools."`
}

// streams are where a command writes: text for the user on Stdout.
type streams struct {
	Stdout, Stderr io.Writer
}

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	go stopOn(interrupts(), cancel, os.Exit)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}

// stopOn ends the run on the first signal: cancel removes the containers
// and keeps the results. A second one, while that cleanup runs, leaves at
// once with the temporary folders removed; the next run removes the
// containers. A SIGPIPE is never the second: once the reader of the
// output is gone (`grpcbench | head`), the cleanup's own writes raise it
// again, and they fail quietly instead.
func stopOn(signals <-chan os.Signal, cancel func(), exit func(int)) {
	<-signals
	signal.Ignore(syscall.SIGPIPE)
	cancel()
	for sig := range signals {
		if sig != syscall.SIGPIPE { // one raised before the Ignore
			break
		}
	}
	if err := scratch.RemoveAll(); err != nil {
		fmt.Fprintln(os.Stderr, "grpcbench:", err)
	}
	fmt.Fprintln(os.Stderr, "grpcbench: interrupted again: leaving without removing the containers; the next run removes them")
	exit(exitInterrupted)
}

// interrupts delivers the signals that stop a run: SIGINT, SIGTERM,
// SIGPIPE when stdout or stderr is a pipe whose reader is gone (`grpcbench
// | head` closed the output: without this the runtime exits at the next
// write and leaves the containers), and SIGHUP unless it was ignored when
// the process started (`nohup make bench &`), which must outlive the
// terminal. Once SIGPIPE is asked for, a write to any connection whose
// peer hung up raises it too (an exec stream's end, a restarted API
// server): that stops nothing, the write fails with EPIPE.
func interrupts() <-chan os.Signal {
	caught := make(chan os.Signal, 2)
	stops := []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE}
	if !signal.Ignored(syscall.SIGHUP) {
		stops = append(stops, syscall.SIGHUP)
	}
	signal.Notify(caught, stops...)
	signals := make(chan os.Signal, 2)
	go func() {
		for sig := range caught {
			if sig == syscall.SIGPIPE && !closedOutput() {
				slog.Debug("SIGPIPE from a connection, not the output: ignored")
				continue
			}
			signals <- sig
		}
	}()
	return signals
}

// closedOutput says stdout or stderr is a pipe whose reader closed it:
// poll reports an error on its write end.
func closedOutput() bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return true // cannot tell: stop, as before
	}
	return fds[0].Revents&unix.POLLERR != 0 || fds[1].Revents&unix.POLLERR != 0
}

// openRun opens a session for a new run in root and writes its
// hardware.txt.
func openRun(ctx context.Context, root string, std streams) (*session.Session, error) {
	return started(session.Open(ctx, root, std.Stdout))
}

// started writes the hardware.txt of a session just opened.
func started(s *session.Session, err error) (*session.Session, error) {
	if err != nil {
		return nil, err
	}
	if err := report.SaveHardware(s.Folder, s.Run); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// runCommand runs the parsed command and turns a panic into an error that
// says where: in a client container the last line of stderr is what the
// run reports as the reason.
func runCommand(kctx *kong.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, isExit := r.(exit); isExit {
				panic(r)
			}
			slog.Error("panic", "command", kctx.Command(), "value", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("%s failed inside: %v", kctx.Command(), r)
		}
	}()
	return kctx.Run()
}

// exit carries kong's exit status (after --help, say) out of its parser.
type exit int

// run parses args, runs the command, and says how it ended as an exit
// status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	var c cli
	parser, err := kong.New(&c, kong.Name("grpcbench"), kong.Description("Containerized, reproducible gRPC server benchmarks."),
		kong.Writers(stdout, stderr),
		toolVars(),
		kong.Exit(func(code int) { panic(exit(code)) }),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(streams{Stdout: stdout, Stderr: stderr}))
	if err != nil {
		panic(err) // the cli struct is wrong: a bug, not input
	}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(exit)
			if !ok {
				panic(r)
			}
			code = int(e)
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		// A command line kong refuses is bad input, like a refused setting.
		fmt.Fprintln(stderr, "grpcbench:", err)
		return exitBadInput
	}
	level := slog.LevelWarn
	if c.Verbose {
		level = slog.LevelDebug
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))
	err = runCommand(kctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "grpcbench:", escape.Lines(err.Error())) // it may quote a server or a build
	var cfgErr *config.Error
	switch {
	case errors.As(err, &cfgErr):
		return exitBadInput
	case errors.Is(err, backend.ErrUnreachable):
		return exitFailure
	case errors.Is(err, errNotRanked):
		return exitNotRanked
	case errors.Is(err, errRegression):
		return exitRegression
	case errors.Is(err, errUnfinished):
		return exitUnfinished
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	default:
		return exitFailure
	}
}
