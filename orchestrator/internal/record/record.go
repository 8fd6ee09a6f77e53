// Package record is the record of a run: what was measured, round by round,
// and under which settings, as results.json holds it, and the run's folder
// it is read from and written to. The record is versioned by its layout:
// Save writes the current one (cells of servers of rounds), Load reads it
// and the older one (servers at the top level, one measurement each).
// Package report makes the files people read from a record; the benchmark
// adds to one as its rounds finish, and a resume goes on from one.
package record

import (
	"slices"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
	"github.com/grpcbench/grpcbench/orchestrator/internal/usage"
)

// Run is everything known about one run; results.json is this, encoded.
type Run struct {
	ID       string    `json:"id"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Commit   string    `json:"commit"`
	// Settings are the variables as given; each cell has its own, resolved.
	Settings []config.Setting `json:"settings"`
	// Hosts are where the run's containers ran, which a resume uses too.
	Hosts *Hosts `json:"engines,omitempty"`
	// Contexts are a hash of each server's build context (its folder and
	// the run's scenarios), by server: a resume refuses to go on with
	// other code.
	Contexts map[string]string `json:"build_contexts,omitempty"`
	// ResumedAnyway lists what had changed when a resume was told to go
	// on all the same (--resume-anyway).
	ResumedAnyway []string `json:"resumed_anyway,omitempty"`
	// Hardware is the servers' machine; ClientHardware the clients', when
	// another host runs them.
	Hardware       Hardware  `json:"hardware"`
	ClientHardware *Hardware `json:"client_hardware,omitempty"`
	// RoundTrip is the network's round trip between the client's machine
	// and the servers', measured before the load, when they differ.
	RoundTrip *time.Duration `json:"round_trip,omitempty"`
	// Cells are the combinations of the list-valued settings, one section
	// of bench.txt each.
	Cells []Cell `json:"cells"`
	// Interrupted is set when the run was stopped before its last round.
	Interrupted bool `json:"interrupted,omitempty"`
	// Design is how the rankings' pairs are tested: one look at the end,
	// or (GRPC_BENCHMARK_ROUNDS=auto) the looks of a sequential design.
	Design *stats.Design `json:"design,omitempty"`
	// Seed drew the order of the rounds (GRPC_BENCHMARK_SEED replays it);
	// Order is each round's visits, in the order they ran.
	Seed  uint64    `json:"seed"`
	Order [][]Visit `json:"order,omitempty"`
	// Looks are the sequential design's looks as they ran, and StopReason
	// why the rounds ended: every pair decided, the last look, the budget.
	Looks      []RunLook `json:"looks,omitempty"`
	StopReason string    `json:"stop_reason,omitempty"`
	// Dir is the run's folder, where it was read from.
	Dir string `json:"-"`
}

// Hardware is the machine the servers ran on, as the Docker engine sees it
// (the orchestrator itself may run in a container).
type Hardware struct {
	CPUModel      string `json:"cpu_model"`
	CPUs          int    `json:"cpus"`
	MemoryBytes   int64  `json:"memory_bytes"`
	Kernel        string `json:"kernel"`
	OS            string `json:"os"`
	DockerVersion string `json:"docker_version"`
	CgroupVersion string `json:"cgroup_version"`
	StorageDriver string `json:"storage_driver"`
}

// Visit is one server's round in one cell.
type Visit struct {
	Cell   int    `json:"cell"`
	Server string `json:"server"`
}

// RunLook is one look of a sequential design: after which round, when,
// and per cell the analysis it made (each pair's verdict so far).
type RunLook struct {
	Rounds  int              `json:"rounds"`
	Elapsed float64          `json:"elapsed_seconds"`
	Cells   []stats.Analysis `json:"cells"`
	// Capacity is the same analysis of each cell's capacity ranking.
	Capacity []stats.Analysis `json:"capacity"`
	// Continuing are the servers of unresolved pairs, per cell, measured
	// in the next look's rounds.
	Continuing [][]string `json:"continuing"`
}

// DesignOrFixed is the run's design; a record without one had fixed rounds.
func (r Run) DesignOrFixed() stats.Design {
	if r.Design != nil {
		return *r.Design
	}
	return stats.Fixed(0, 0)
}

// Hosts are the DOCKER_HOST of the servers' and the clients' host.
type Hosts struct {
	Servers string `json:"servers"`
	Clients string `json:"clients"`
}

// Resume prepares a record to go on after an interruption: rounds the
// interruption cut short are dropped, to run again; what finished, and
// failures of their own, stay.
func (r *Run) Resume() {
	r.Interrupted = false
	for ci := range r.Cells {
		for si := range r.Cells[ci].Servers {
			s := &r.Cells[ci].Servers[si]
			s.Rounds = slices.DeleteFunc(s.Rounds, func(rd Round) bool { return rd.Failure != nil && rd.Failure.CutShort })
			if s.Failure != nil && s.Failure.CutShort {
				s.Failure = nil
			}
		}
	}
}

// Cell is the servers measured under one combination of settings.
type Cell struct {
	config.Cell
	// Settings are the variables as this cell ran them: its footer.
	Settings  []config.Setting `json:"settings"`
	Placement Placement        `json:"placement"`
	// Kind is the scenario's call kind when it streams, whose figures count
	// messages rather than calls; empty for unary (and before streams).
	Kind    scenario.Kind `json:"kind,omitempty"`
	Servers []Server      `json:"servers"`
}

// Streams says whether the cell's figures count the messages of streams.
func (c Cell) Streams() bool { return c.Kind != "" && c.Kind != scenario.Unary }

// RateUnit is what the cell's rates count (scenario.Kind.RateUnit).
func (c Cell) RateUnit() string { return c.Kind.RateUnit() }

// Server is the cell's server of that name, if the cell has it.
func (c Cell) Server(name string) (Server, bool) {
	for _, s := range c.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return Server{}, false
}

// Placement is how the containers were put on the machine's cores.
type Placement struct {
	ServerCPUSet string `json:"server_cpuset,omitempty"`
	ClientCPUSet string `json:"client_cpuset,omitempty"`
	// Shared is true when server and client could not get cores of their own.
	Shared bool `json:"shared"`
}

// Server is the outcome for one server in one cell.
type Server struct {
	Name    string `json:"name"`
	Image   string `json:"image"`
	ImageID string `json:"image_id,omitempty"`
	// Stack, Library and Version are what the server is built on, as its
	// folder's server.json declares them; GRPC is the gRPC implementation
	// under a framework ("grpc-java 1.75.0"), empty when Library is one.
	// Runs recorded before them have none.
	Stack   string `json:"stack,omitempty"`
	Library string `json:"library,omitempty"`
	Version string `json:"version,omitempty"`
	GRPC    string `json:"grpc,omitempty"`
	// Failure is set when the server could not be measured in every round;
	// such a server is listed, not ranked.
	Failure *Failure `json:"failure,omitempty"`
	// Unsupported says why the server's stack does not serve the cell's
	// scenario (its server.json): it is listed, never built, run or failed.
	Unsupported string `json:"unsupported,omitempty"`
	// Conformance is the gate's verdict in the first round.
	Conformance *probe.Verdict `json:"conformance,omitempty"`
	Rounds      []Round        `json:"rounds"`
}

// Round is one fresh server container, warmed up and measured.
type Round struct {
	Round  int       `json:"round"`
	Start  time.Time `json:"start"`
	Phases []Phase   `json:"phases"`
	// Failure is set when the round could not be measured.
	Failure *Failure `json:"failure,omitempty"`
	// ServerAddress is where the clients reached the server from another
	// machine: the address of GRPC_SERVER_ADDRESS and the port the
	// server was published at in this round.
	ServerAddress string `json:"server_address,omitempty"`
	// TargetRPS is the rate a rate cell's round loaded at (a share of
	// capacity or a probe resolved to req/s); 0 at saturation.
	TargetRPS float64 `json:"target_rps,omitempty"`
	// Measurement is the run's load tool's.
	Measurement
	// ClientBound is set when the load client used nearly all the CPU it
	// was given, or was throttled: the measurement then describes the
	// client, not the server.
	ClientBound bool `json:"client_bound"`
	// Capacity is the capacity measurement of the same server container,
	// by the capacity tool, taken in every round when that tool is on
	// (records from before that have it in client-bound rounds only).
	Capacity *Measurement `json:"capacity,omitempty"`
	// CapacityFailure says why the capacity measurement failed.
	CapacityFailure string `json:"capacity_failure,omitempty"`
	// OOMKills counts the processes of the server the OOM killer killed
	// during the round, whether or not the server survived them.
	OOMKills int `json:"oom_kills,omitempty"`
	// Overhead is the round's time in seconds beyond its warm-ups and
	// measurements: starting containers, readiness, the gate, stats.
	Overhead float64 `json:"overhead_seconds,omitempty"`
	// HostSteal is the share of the host's CPU time taken by its
	// hypervisor during the round's load; nil where it cannot be read.
	HostSteal *float64 `json:"host_steal,omitempty"`
}

// Measurement is what one load client measured, with the server's and the
// client's stats over its measurement window.
type Measurement struct {
	Load   *load.Result  `json:"load,omitempty"`
	Server usage.Summary `json:"server_stats"`
	Client usage.Summary `json:"client_stats"`
	// OtherCores is how many of the host's cores, on average over the
	// window, did work other than the server's and its load client's: the
	// Docker engine, the orchestrator, and whatever else runs on the
	// machine. Not known when the host is another machine.
	OtherCores *float64 `json:"host_other_cores,omitempty"`
}

// Client-bound thresholds: a client that used this share of its CPU limit,
// or was throttled in this share of its CFS periods, set the pace.
const (
	clientBoundShare     = 0.9
	clientThrottledShare = 0.1
)

// ClientSaturated reports whether the client used nearly all of the CPUs
// it was given, or was held back by its quota: the measurement then
// describes the client, not the server.
func (m Measurement) ClientSaturated(clientCPUs float64) bool {
	return m.Client.CPUAvgPercent >= clientBoundShare*100*clientCPUs || m.Client.ThrottledShare >= clientThrottledShare
}

// Failure says in which phase a server failed and why.
type Failure struct {
	Phase  string `json:"phase"`
	Reason string `json:"reason"`
	// Round is the round it failed in, 0 before the first (the build).
	Round int `json:"round,omitempty"`
	// CutShort says the run, not the server, ended it: an interruption,
	// a host gone. A resumed run measures it again.
	CutShort bool `json:"cut_short,omitempty"`
}

// Phase is one step of a server's benchmark and how long it took.
type Phase struct {
	Name    string    `json:"name"`
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
}

// Ranked reports whether the server belongs in the ranking: every round
// measured.
func (s Server) Ranked() bool {
	return s.Unsupported == "" && s.FirstFailure() == nil && len(s.Rounds) > 0 &&
		!slices.ContainsFunc(s.Rounds, func(r Round) bool { return r.Load == nil })
}

// Built is the library the server ran and its version, with the gRPC
// implementation under it: "grpc-go 1.85.0", "Micronaut 4.10.8 on
// grpc-java 1.75.0"; empty in a run recorded before servers declared it.
func (s Server) Built() string {
	switch {
	case s.Library == "":
		return ""
	case s.GRPC != "":
		return s.Library + " " + s.Version + " on " + s.GRPC
	}
	return s.Library + " " + s.Version
}

// FirstFailure is why a server is not ranked, nil while it has not failed:
// its own failure or its first failed round's.
func (s Server) FirstFailure() *Failure {
	if s.Failure != nil {
		return s.Failure
	}
	for _, r := range s.Rounds {
		if r.Failure != nil {
			f := *r.Failure
			f.Round = r.Round
			return &f
		}
	}
	return nil
}

// PhaseError says in which phase a server failed: the phase its Failure
// records.
type PhaseError struct {
	Phase string
	Err   error
}

func (e *PhaseError) Error() string { return e.Phase + " failed: " + e.Err.Error() }
func (e *PhaseError) Unwrap() error { return e.Err }
