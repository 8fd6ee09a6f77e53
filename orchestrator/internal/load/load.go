// Package load is what the load tools share: the interface a tool
// implements (Tool), the registry the tools' packages add themselves to,
// the load a run asks for (Spec), what a tool measured (Result), and the
// progress lines a client prints. The tools are packages of their own
// (load/h2, load/ghz, load/h2load); the binary imports the ones it offers.
package load

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// Spec is one load run against one server.
type Spec struct {
	// Tool names the load tool that runs the spec, for `grpcbench loadgen`.
	Tool string `json:"tool,omitempty"`
	// Kind is the scenario's call kind, which the tool must drive.
	Kind scenario.Kind `json:"kind"`
	// Target is host:port; the client shares the server's network
	// namespace, so it is always a loopback address.
	Target string `json:"target"`
	// ScenarioDir holds the scenario's proto and payload.
	ScenarioDir string `json:"scenario_dir"`
	Connections int    `json:"connections"`
	// Concurrency is the number of calls in flight over all connections;
	// in an open loop, the most there may be.
	Concurrency int `json:"concurrency"`
	// QPS is the total target rate; 0 sends as fast as answers come. A
	// Result's RPS is the rate achieved.
	QPS int `json:"qps"`
	// Arrivals is how calls are spaced at a QPS: evenly or as a Poisson
	// process. A tool that can (h2) then loads open-loop: calls start on
	// that schedule whatever the answers, and latency runs from each
	// call's intended start.
	Arrivals Arrivals      `json:"arrivals,omitempty"`
	Warmup   time.Duration `json:"warmup"`
	Duration time.Duration `json:"duration"`
	// Tail is load that goes on, unmeasured, after the window, so that the
	// stats sample holding the window's end is under load (usage.LoadTail).
	// h2load, a tool of its own, stops at the window's end.
	Tail time.Duration `json:"tail,omitempty"`
	// CAFile, when set, is the run's CA certificate (PEM) in the client's
	// container: the load goes over TLS, every connection verifying the
	// server's chain against it, for certs.ServerName, with ALPN h2.
	CAFile string `json:"ca_file,omitempty"`
	// CPUs is the client container's CPU limit, which sizes GOMAXPROCS.
	CPUs float64 `json:"cpus,omitempty"`
	// Answered, when set, counts the OK calls as they complete, warm-up
	// included, for a live rate; tools that can count them do.
	Answered *atomic.Uint64 `json:"-"`
}

// Result is what a load run measured over its measurement window (the
// warm-up is not in it).
type Result struct {
	Tool string `json:"tool"`
	// Start and End bound the measurement window, on the host's clock; the
	// container stats are cut to it.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Requests is every call that completed in the window; OK those whose
	// grpc-status was OK.
	Requests uint64 `json:"requests"`
	OK       uint64 `json:"ok"`
	// Statuses counts calls by gRPC status name (OK, Unavailable, ...).
	Statuses map[string]uint64 `json:"statuses"`
	// Errors counts failed calls by error message.
	Errors map[string]uint64 `json:"errors,omitempty"`
	// RPS is OK calls per second of the window.
	RPS     float64 `json:"rps"`
	Latency Latency `json:"latency"`
	// Late counts, in an open-loop load, the calls meant to start in the
	// window that could not start on time: more than 1 ms after their
	// intended start (the cap on calls in flight, the connection's stream
	// limit or window, or a client short of CPU held them back), or never
	// before the load ended. Their latency still runs from the intended
	// start.
	Late uint64 `json:"late,omitempty"`
	// Service is, in an open-loop load, the latency from each call's
	// actual start; Latency runs from the intended start, and the gap
	// between the two is what coordinated omission would hide.
	Service *Latency `json:"service_latency,omitempty"`
	// WarmupRequests is how many calls the warm-up completed.
	WarmupRequests uint64 `json:"warmup_requests"`
	// Planned is, in an open-loop load, how many calls the schedule meant
	// to start in the window (a Poisson schedule's count varies by its
	// square root around the target's); Unanswered how many of them had
	// no answer by the end of the grace after the window, or never
	// started: they count as failed calls.
	Planned    uint64 `json:"planned,omitempty"`
	Unanswered uint64 `json:"unanswered,omitempty"`
	// Pacer is, in an open-loop load, the pacer's own lateness: from each
	// call's intended start to the moment it was written.
	Pacer *Latency `json:"pacer,omitempty"`
	// Series is the load interval by interval over warm-up and window, for
	// the tools that record one.
	Series *Series `json:"series,omitempty"`
	// Histogram is the window's latencies of OK calls, in microseconds, as
	// an HdrHistogram in its compressed, base64 form (V2), for the tools
	// that keep one: the rounds' histograms are merged, not their
	// percentiles.
	Histogram string `json:"histogram,omitempty"`
	// Notes say where the figures are narrower than they look.
	Notes []string `json:"notes,omitempty"`
}

// Series is a load interval by interval, from its start (the warm-up's)
// to the end of its window: what completed in each interval, and how
// many calls were in flight at its end. Each slice has one entry per
// interval; the last ends at the window's end, so it may be shorter.
type Series struct {
	Start    time.Time     `json:"start"`
	Interval time.Duration `json:"interval"`
	// OK and Failed count the calls (or messages) that completed in each
	// interval; Mean and Max are the latencies of its OK ones.
	OK     []uint64        `json:"ok"`
	Failed []uint64        `json:"failed"`
	Mean   []time.Duration `json:"mean"`
	Max    []time.Duration `json:"max"`
	// InFlight is the calls in flight at the interval's end.
	InFlight []int `json:"in_flight,omitempty"`
}

// SeriesInterval is the interval of the series the tools record.
const SeriesInterval = 250 * time.Millisecond

// RateShortfall is how far below its target an achieved rate may be and
// still count as sustained: the pacer holds the rate within a fraction of
// a percent where the server keeps up, and a window's edges (its first
// calls' connections settling, the last ones cut) cost under 1% of a
// second's calls; 2% is short of that by twice, and well short of the
// queue a server that cannot keep up builds. The h2 tool's note and the
// sweeps' verdict use this one figure.
const RateShortfall = 0.02

// Arrivals is the spacing of calls at a set rate.
type Arrivals string

// The arrival processes.
const (
	ArrivalsConstant Arrivals = "constant"
	ArrivalsPoisson  Arrivals = "poisson"
)

// Latency describes the latencies of OK calls.
type Latency struct {
	// Count is the number of calls the figures are computed from.
	Count uint64        `json:"count"`
	Mean  time.Duration `json:"mean"`
	P50   time.Duration `json:"p50"`
	P90   time.Duration `json:"p90"`
	P95   time.Duration `json:"p95"`
	P99   time.Duration `json:"p99"`
	P999  time.Duration `json:"p999,omitempty"`
	Max   time.Duration `json:"max"`
	// Percentiles are, from a tool that keeps a histogram, the latency at
	// each of HDRQuantiles: the distribution's tail, for a percentile
	// plot.
	Percentiles []Percentile `json:"percentiles,omitempty"`
}

// Percentile is the latency at a quantile (0.999 for p99.9).
type Percentile struct {
	Q       float64       `json:"q"`
	Latency time.Duration `json:"latency"`
}

// HDRQuantiles are the quantiles a percentile list holds: from the median
// to five nines, the points an HdrHistogram percentile plot needs.
var HDRQuantiles = []float64{0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999}

// PercentileList is the latency at each of HDRQuantiles, by at.
func PercentileList(at func(q float64) time.Duration) []Percentile {
	out := make([]Percentile, len(HDRQuantiles))
	for i, q := range HDRQuantiles {
		out[i] = Percentile{Q: q, Latency: at(q)}
	}
	return out
}

// A server chooses its status messages, and the status codes it sends, so
// a result keeps a bounded number of them: one that answered every call
// with a message of its own made a key per call, hundreds of MB in the
// record, rewritten after every round.
const (
	// MaxDistinct is how many distinct error messages, and status names
	// besides OK, a result keeps: the most frequent.
	MaxDistinct = 20
	// MaxMessage is how much of an error message it keeps, in bytes.
	MaxMessage = 256
	// Others is the key that counts what the rest of a map held.
	Others = "(others)"
)

// Bound keeps the MaxDistinct most frequent error messages, each cut to
// MaxMessage bytes, and status names (OK always kept), counting the rest
// under Others.
func (r *Result) Bound() {
	r.Errors = bound(r.Errors, "")
	r.Statuses = bound(r.Statuses, "OK")
}

// bound is m with at most MaxDistinct keys besides keep and Others, each
// at most MaxMessage bytes, the rest counted under Others; nil stays nil.
func bound(m map[string]uint64, keep string) map[string]uint64 {
	if m == nil {
		return nil
	}
	cut := make(map[string]uint64, min(len(m), MaxDistinct+2))
	for k, n := range m {
		cut[CutMessage(k)] += n
	}
	var keys []string
	for k := range cut {
		if k != keep && k != Others {
			keys = append(keys, k)
		}
	}
	if len(keys) <= MaxDistinct {
		return cut
	}
	// Most frequent first, then in name order, so that the choice is the
	// same on every read.
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(cut[b], cut[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	out := make(map[string]uint64, MaxDistinct+2)
	for _, k := range keys[:MaxDistinct] {
		out[k] = cut[k]
	}
	if n, ok := cut[keep]; ok {
		out[keep] = n
	}
	out[Others] = cut[Others]
	for _, k := range keys[MaxDistinct:] {
		out[Others] += cut[k]
	}
	return out
}

// CutMessage is a message cut to MaxMessage bytes, on a character's
// boundary, its cut marked.
func CutMessage(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	const mark = "…"
	s = s[:MaxMessage-len(mark)]
	for !utf8.ValidString(s) { // a character cut in two
		s = s[:len(s)-1]
	}
	return s + mark
}

// ErrorShare is the fraction of completed calls that were not OK.
func (r Result) ErrorShare() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Requests-r.OK) / float64(r.Requests)
}

// Failures lists the calls that were not OK by status, in name order:
// "DeadlineExceeded: 40, Unavailable: 60".
func (r Result) Failures() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(r.Statuses)) {
		if name != "OK" {
			parts = append(parts, fmt.Sprintf("%s: %d", name, r.Statuses[name]))
		}
	}
	return strings.Join(parts, ", ")
}
