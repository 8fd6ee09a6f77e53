// Package ghz is the load tool ghz (v0.120.0), used as a library, as
// grpc_bench runs it: its figures are comparable with grpc_bench's
// published numbers.
package ghz

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ghzload "github.com/bojand/ghz/load"
	"github.com/bojand/ghz/runner"
	"google.golang.org/grpc"

	"github.com/grpcbench/grpcbench/orchestrator/internal/certs"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// name is the tool's name in the settings and the records.
const name = "ghz"

func init() {
	load.Register(load.Loadgen{ToolName: name, Text: "ghz v0.120.0, as grpc_bench runs it (comparable with its published numbers)",
		Drives: []scenario.Kind{scenario.Unary, scenario.ClientStreaming, scenario.ServerStreaming, scenario.BidiStreaming}, RunLoad: Run})
}

// ghzDetailCap is how many calls ghz keeps the latency of; its percentiles
// describe those first calls only.
const ghzDetailCap = 1_000_000

// Run runs the load with ghz used as a library. It avoids ghz's embedding
// hazards: runner.Run resets GOMAXPROCS and installs a SIGINT handler that
// panics on a later Ctrl-C, so the Requester is driven directly; in-flight
// calls at the end are ignored rather than counted as Canceled; template
// processing is off, since it costs more than the call.
//
// A streaming call goes through ghz's own streaming support: a client or
// bidi stream sends the scenario's Sends messages (ghz's stream call
// count), a bidi one without waiting for each echo, as ghz does; a server
// stream reads its replies to the end. ghz counts calls, so each OK call
// counts as its messages (perCall), and its latencies are whole calls'.
func Run(ctx context.Context, spec load.Spec) (load.Result, error) {
	sc, err := scenario.Load(ctx, spec.ScenarioDir)
	if err != nil {
		return load.Result{}, err
	}
	l := ghzLoad{spec: spec, sc: sc}
	begin := time.Now()
	warm, _, err := l.run(ctx, spec.Warmup)
	if err != nil {
		return load.Result{}, fmt.Errorf("warm-up: %w", err)
	}
	rep, stopped, err := l.run(ctx, spec.Duration)
	if err != nil {
		return load.Result{}, fmt.Errorf("measurement: %w", err)
	}
	// The tail is a run of its own, on new connections: in its 1.25 s a
	// busy host may not even finish their TLS handshakes. What it failed to
	// load is unmeasured, so it is a note on the figures, not a failure.
	var tailNote string
	if spec.Tail > 0 {
		if _, _, err := l.run(ctx, spec.Tail); ctx.Err() != nil {
			return load.Result{}, ctx.Err()
		} else if err != nil {
			tailNote = "ghz's load after the window failed (" + strings.ReplaceAll(err.Error(), "\n", "; ") + "): the server's stats at the window's end may read less load"
		}
	}
	// ghz's Total runs from its first call to the end of its shutdown; the
	// window is from the first call to the stop, when calls ceased to count.
	res := fromGHZReport(rep, rep.Date.Add(-rep.Total), stopped, perCall(sc))
	res.WarmupRequests = warm.Count * perCall(sc)
	var cut string
	res.Series, cut = seriesOf(begin, stopped, perCall(sc), warm, rep)
	if cut != "" {
		res.Notes = append(res.Notes, cut)
	}
	if spec.QPS > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"ghz at %d req/s is closed-loop-paced: it spaces calls evenly (%s arrivals do not apply), but its workers wait for answers and latency runs from the actual send, so a server's stalls delay calls instead of showing in the latencies (coordinated omission); h2 loads open-loop",
			spec.QPS, cmp.Or(spec.Arrivals, load.ArrivalsConstant)))
	}
	if tailNote != "" {
		res.Notes = append(res.Notes, tailNote)
	}
	return res, nil
}

// perCall is how many messages of the load one OK call is: the echoes a
// bidi stream or the replies a server stream gets, the requests a client
// stream sends; 1 for unary.
func perCall(sc *scenario.Scenario) uint64 {
	if sc.Kind == scenario.ClientStreaming {
		return uint64(sc.Sends)
	}
	return uint64(sc.Replies)
}

// workers is ghz's constant worker ticker without its race: ghz's own
// (load.ConstWorkerTicker) sends its one tick from a goroutine of its own,
// and a run stopped before that send closes the channel under it, which
// panics the client ("send on closed channel"). Here the send gives up
// once the run has finished, and the channel closes after it.
type workers struct {
	c        chan ghzload.TickValue
	n        int
	finished chan struct{}
	sent     chan struct{}
}

func newWorkers(n int) *workers {
	return &workers{c: make(chan ghzload.TickValue), n: n, finished: make(chan struct{}), sent: make(chan struct{})}
}

func (w *workers) Ticker() <-chan ghzload.TickValue { return w.c }

func (w *workers) Run() {
	defer close(w.sent)
	select {
	case w.c <- ghzload.TickValue{Delta: w.n, Done: true}:
	case <-w.finished:
	}
}

func (w *workers) Finish() {
	close(w.finished)
	<-w.sent
	close(w.c)
}

// ghzLoad is one load run's spec and scenario.
type ghzLoad struct {
	spec load.Spec
	sc   *scenario.Scenario
}

// run runs ghz for d and returns its report and when it was told to stop.
func (l ghzLoad) run(ctx context.Context, d time.Duration) (*runner.Report, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	spec := l.spec
	var streams []runner.Option
	if l.sc.Method.IsStreamingClient() {
		streams = append(streams, runner.WithStreamCallCount(uint(l.sc.Sends)))
	}
	cfg, err := runner.NewConfig(l.sc.ServiceMethod(), spec.Target, append(streams,
		runner.WithProtoFile(filepath.Join(spec.ScenarioDir, scenario.ProtoFile), []string{spec.ScenarioDir}),
		runner.WithDataFromFile(filepath.Join(spec.ScenarioDir, scenario.PayloadFile)),
		runner.WithInsecure(spec.CAFile == ""),
		// Over TLS: the run's CA the only root, and its server name; grpc-go's
		// credentials under ghz offer h2 and refuse a server that picks none.
		runner.WithRootCertificate(spec.CAFile),
		runner.WithServerNameOverride(tlsName(spec)),
		runner.WithConnections(uint(spec.Connections)),
		runner.WithConcurrency(uint(spec.Concurrency)),
		runner.WithRPS(uint(spec.QPS)), // a total rate in ghz v0.120.0, as ours is
		runner.WithRunDuration(d),
		runner.WithDurationStopAction("ignore"),
		runner.WithDisableTemplateFuncs(true),
		runner.WithDisableTemplateData(true),
		runner.WithDefaultCallOptions(countAnswers(spec.Answered, perCall(l.sc))),
		runner.WithWorkerTicker(newWorkers(spec.Concurrency)),
	)...)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("ghz config: %w", err)
	}
	req, err := runner.NewRequester(cfg)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("ghz: %w", err)
	}
	// Stop must be called exactly once and before Run returns (Run closes
	// the channel Stop sends on).
	var once sync.Once
	var stopped time.Time
	stop := func(r runner.StopReason) {
		once.Do(func() {
			stopped = time.Now()
			req.Stop(r)
		})
	}
	timer := time.AfterFunc(d, func() { stop(runner.ReasonTimeout) })
	defer timer.Stop()
	cancelled := context.AfterFunc(ctx, func() { stop(runner.ReasonCancel) })
	defer cancelled()

	rep, err := req.Run()
	if rep == nil || rep.Count == 0 {
		return nil, time.Time{}, errors.Join(errors.New("no call completed"), err, ctx.Err())
	}
	if ctx.Err() != nil {
		return nil, time.Time{}, ctx.Err()
	}
	return rep, stopped, nil
}

// tlsName is the name a TLS connection verifies, none in plaintext.
func tlsName(spec load.Spec) string {
	if spec.CAFile == "" {
		return ""
	}
	return certs.ServerName
}

// countAnswers counts the messages of the calls that end without error,
// for a live rate.
func countAnswers(n *atomic.Uint64, perCall uint64) []grpc.CallOption {
	if n == nil {
		return nil
	}
	return []grpc.CallOption{grpc.OnFinish(func(err error) {
		if err == nil {
			n.Add(perCall)
		}
	})}
}

// fromGHZReport reads ghz's report, each OK call counted as perCall
// messages.
func fromGHZReport(rep *runner.Report, start, end time.Time, perCall uint64) load.Result {
	res := load.Result{
		Tool:     name,
		Start:    start,
		End:      end,
		Requests: rep.Count,
		Statuses: map[string]uint64{},
		Errors:   map[string]uint64{},
	}
	for status, n := range rep.StatusCodeDist {
		res.Statuses[status] = uint64(n)
	}
	if ok := res.Statuses["OK"]; perCall > 1 && ok > 0 {
		res.Statuses["OK"] = ok * perCall
		res.Requests += ok * (perCall - 1)
	}
	for msg, n := range rep.ErrorDist {
		res.Errors[msg] = uint64(n)
	}
	res.OK = res.Statuses["OK"]
	if window := end.Sub(start); window > 0 {
		res.RPS = float64(res.OK) / window.Seconds()
	}

	var sum time.Duration
	ok := make([]time.Duration, 0, len(rep.Details))
	hist := load.NewHistogram()
	for _, d := range rep.Details {
		if d.Error == "" {
			sum += d.Latency
			ok = append(ok, d.Latency)
			load.Record(hist, d.Latency, 1)
		}
	}
	res.Histogram = load.EncodeHistogram(hist)
	if res.Latency.Count = uint64(len(ok)); res.Latency.Count > 0 {
		res.Latency.Mean = sum / time.Duration(res.Latency.Count)
		// ghz's distribution stops at p99; p99.9 comes from the same calls.
		slices.Sort(ok)
		res.Latency.P999 = ok[min(len(ok)-1, int(math.Ceil(0.999*float64(len(ok))))-1)]
	}
	res.Latency.Max = rep.Slowest
	for _, p := range rep.LatencyDistribution {
		switch p.Percentage {
		case 50:
			res.Latency.P50 = p.Latency
		case 90:
			res.Latency.P90 = p.Latency
		case 95:
			res.Latency.P95 = p.Latency
		case 99:
			res.Latency.P99 = p.Latency
		}
	}
	if perCall > 1 {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"ghz times whole calls: each OK call counts as its %d messages, and its latencies are of calls of %d messages, not of one message",
			perCall, perCall))
	}
	if rep.Count > ghzDetailCap {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"ghz keeps the latencies of its first %d calls only: latency figures describe %d of %d calls (the start of the window)",
			ghzDetailCap, res.Latency.Count, rep.Count))
	}
	res.Bound()
	return res
}

// seriesOf is the series from start to end of ghz's runs (a warm-up's and
// a window's), from the details of their calls: each OK call counted as
// its messages when it ended, with its latency. It costs a pass over the
// details ghz keeps anyway, and a few slices the series' length. ghz does
// not report the calls in flight when a run stops (they are ignored), so
// the series has no calls in flight. A run of more calls than ghz keeps
// the details of has none for its last ones: the series then ends before
// the interval its last detail is in, and the note says so.
func seriesOf(start, end time.Time, perCall uint64, reps ...*runner.Report) (*load.Series, string) {
	c := load.NewSeriesCounter(start, end)
	cut := end
	for _, rep := range reps {
		for _, d := range rep.Details {
			ok, n := d.Error == "", uint64(1) // a failed call counts once
			if ok {
				n = perCall
			}
			c.Add(d.Timestamp, ok, d.Latency, n)
		}
		if n := len(rep.Details); rep.Count > uint64(n) && n > 0 && rep.Details[n-1].Timestamp.Before(cut) {
			cut = rep.Details[n-1].Timestamp
		}
	}
	s := load.MergeSeries(c)
	s.InFlight = nil
	if cut.Equal(end) {
		return s, ""
	}
	n := int(cut.Sub(start) / s.Interval)
	s.OK, s.Failed, s.Mean, s.Max = s.OK[:n], s.Failed[:n], s.Mean[:n], s.Max[:n]
	return s, fmt.Sprintf("ghz keeps the details of the first %d calls of a run only: the series ends %v after the warm-up's start, %v before the window's end",
		ghzDetailCap, (time.Duration(n) * s.Interval).Round(time.Millisecond), end.Sub(start.Add(time.Duration(n)*s.Interval)).Round(time.Millisecond))
}
