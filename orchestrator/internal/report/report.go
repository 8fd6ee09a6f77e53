// Package report holds the record of a run and writes it out: bench.txt for
// people (in grpc_bench's layout), results.json for machines, hardware.txt
// for the context.
package report

import (
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// Run is everything known about one run; results.json is this, encoded.
type Run struct {
	ID       string           `json:"id"`
	Started  time.Time        `json:"started"`
	Finished time.Time        `json:"finished,omitzero"`
	Commit   string           `json:"commit"`
	Settings []config.Setting `json:"settings"`
	Hardware Hardware         `json:"hardware"`
	// Placement says which cores the server and the client ran on.
	Placement Placement `json:"placement"`
	Servers   []Server  `json:"servers"`
	// Interrupted is set when the run was stopped before its last server.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Placement is how the containers were put on the machine's cores.
type Placement struct {
	ServerCPUSet string `json:"server_cpuset,omitempty"`
	ClientCPUSet string `json:"client_cpuset,omitempty"`
	// Shared is true when server and client could not get cores of their own.
	Shared bool `json:"shared"`
}

// Server is the outcome for one server.
type Server struct {
	Name     string `json:"name"`
	Scenario string `json:"scenario"`
	Image    string `json:"image"`
	ImageID  string `json:"image_id,omitempty"`
	// Failure is set when the server could not be measured; such a server
	// is listed, not ranked.
	Failure *Failure `json:"failure,omitempty"`
	Measurement
	Phases []Phase `json:"phases"`
	// Conformance is the gate's verdict, given before the warm-up.
	Conformance *probe.Verdict `json:"conformance,omitempty"`
	// ClientBound is set when the load client used nearly all the CPU it was
	// given: the row then measures the client, not the server.
	ClientBound bool `json:"client_bound"`
}

// Measurement is what one load client measured, with the server's and the
// client's stats over its measurement window.
type Measurement struct {
	Load   *load.Result  `json:"load,omitempty"`
	Server stats.Summary `json:"server_stats"`
	Client stats.Summary `json:"client_stats"`
}

// clientBoundShare is the share of its CPU limit above which the load
// client, not the server, is taken to set the pace.
const clientBoundShare = 0.9

// ClientSaturated reports whether the client used nearly all of the CPUs it was
// given: the measurement then describes the client, not the server.
func (m Measurement) ClientSaturated(clientCPUs float64) bool {
	return m.Client.CPUAvgPercent >= clientBoundShare*100*clientCPUs
}

// Failure says in which phase a server failed and why.
type Failure struct {
	Phase  string `json:"phase"`
	Reason string `json:"reason"`
}

// Phase is one step of a server's benchmark and how long it took.
type Phase struct {
	Name    string    `json:"name"`
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
}

// Ranked reports whether the server belongs in the ranking.
func (s Server) Ranked() bool { return s.Failure == nil && s.Load != nil }
