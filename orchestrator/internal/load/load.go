// Package load is what the load tools share: the interface a tool
// implements (Tool), the registry the tools' packages add themselves to,
// the load a run asks for (Spec), what a tool measured (Result), and the
// progress lines a client prints. The tools are packages of their own
// (load/h2, load/ghz, load/h2load); the binary imports the ones it offers.
package load

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// Spec is one load run against one server.
type Spec struct {
	// Tool names the load tool that runs the spec, for `grpcbench loadgen`.
	Tool string `json:"engine,omitempty"`
	// Kind is the scenario's call kind, which the tool must drive.
	Kind scenario.Kind `json:"kind"`
	// Target is host:port; the client shares the server's network
	// namespace, so it is always a loopback address.
	Target string `json:"target"`
	// ScenarioDir holds the scenario's proto and payload.
	ScenarioDir string `json:"scenario_dir"`
	Connections int    `json:"connections"`
	// Concurrency is the number of calls in flight over all connections.
	Concurrency int `json:"concurrency"`
	// QPS is the total request rate; 0 sends as fast as answers come.
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
	Tool string `json:"engine"`
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
	// Late counts, in an open-loop load, the calls of the window that could
	// not start on time (the cap on calls in flight or the connection held
	// them back); their latency still runs from the intended start.
	Late uint64 `json:"late,omitempty"`
	// Service is, in an open-loop load, the latency from each call's
	// actual start; Latency runs from the intended start, and the gap
	// between the two is what coordinated omission would hide.
	Service *Latency `json:"service_latency,omitempty"`
	// WarmupRequests is how many calls the warm-up completed.
	WarmupRequests uint64 `json:"warmup_requests"`
	// Notes say where the figures are narrower than they look.
	Notes []string `json:"notes,omitempty"`
}

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
