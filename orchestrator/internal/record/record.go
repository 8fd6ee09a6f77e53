// Package record is the record of a run: what was measured, round by round,
// and under which settings, as results.json holds it, and the run's folder
// it is read from and written to. The record owns its schema: every type of
// results.json is defined here, and the packages that measure convert their
// own types at the edge, so that no change elsewhere changes the file. The
// file carries its layout's version (Version); Load reads the layouts
// before it (legacy.go) and refuses one it does not know.
package record

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Version is the layout of results.json that Save writes: 1 had the servers
// at the top level, 2 cells of servers of rounds without a version key, 3
// the record's own types (keys hosts and tool; samples in the record's
// form).
const Version = 3

// Run is everything known about one run; results.json is this, encoded.
type Run struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Started time.Time `json:"started"`
	// State is how the run stands: running from its start (and again from a
	// resume) until it ends, finished or interrupted, at Ended. A run that
	// was killed outright stays running: it is one to resume.
	State  State     `json:"state"`
	Ended  time.Time `json:"ended,omitzero"`
	Commit string    `json:"commit"`
	// Settings are the variables as given; each cell has its own, resolved.
	Settings []Setting `json:"settings"`
	// Hosts are the addresses of the hosts the run's containers ran on,
	// which a resume uses too.
	Hosts *HostAddresses `json:"hosts,omitempty"`
	// Contexts are a hash of each server's build context (its folder and
	// the run's scenarios), by server: a resume refuses to go on with
	// other code.
	Contexts map[string]string `json:"build_contexts,omitempty"`
	// Client is a hash of the orchestrator's binary, which the load
	// client's image is made of: a resume with another one is refused.
	Client string `json:"client_binary,omitempty"`
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
	// Design is how the rankings' pairs are tested: one look at the end,
	// or (GRPC_BENCHMARK_ROUNDS=auto) the looks of a sequential design.
	Design *Design `json:"design,omitempty"`
	// Seed drew the order of the rounds (GRPC_BENCHMARK_SEED replays it);
	// Order is each round's visits, in the order they ran, then each pass
	// of a latency objective's search (its probes come after the rounds).
	Seed  uint64    `json:"seed"`
	Order [][]Visit `json:"order,omitempty"`
	// Baseline is the git ref a gate (bench --baseline) measured the
	// servers at beside the working tree, in the same rounds; nil without.
	Baseline *Baseline `json:"baseline,omitempty"`
	// Looks are the sequential design's looks as they ran, and StopReason
	// why the rounds ended: every pair decided, the last look, the budget.
	Looks      []Look `json:"looks,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	// Dir is the run's folder, where it was read from.
	Dir string `json:"-"`
}

// State is how a run stands.
type State string

// The states of a run.
const (
	Running     State = "running"
	Interrupted State = "interrupted"
	Finished    State = "finished"
)

// End marks the run ended now: interrupted when err says so, else finished.
func (r *Run) End(err error) {
	r.State, r.Ended = Finished, time.Now()
	if err != nil {
		r.State = Interrupted
	}
}

// Baseline is the code a gate measures beside the working tree: a git
// ref as it was given, the commit it was, and the slowdown the gate
// states its power for (0.1 for 10%).
type Baseline struct {
	Ref       string  `json:"ref"`
	Commit    string  `json:"commit"`
	Threshold float64 `json:"threshold"`
}

// BaselineName is the name of a server's row at a baseline ref.
func BaselineName(server, ref string) string { return server + "@" + ref }

// Setting is one variable of the run's configuration with its value as
// text, as the settings wrote it.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Help  string `json:"help"`
	// Default is the value used when the variable is not set.
	Default string `json:"default"`
	// Given says the user set the variable: a resumed run sets only these.
	Given bool `json:"given,omitempty"`
}

// Setting is the run's setting of that name, if it has one.
func (r Run) Setting(name string) (Setting, bool) {
	i := slices.IndexFunc(r.Settings, func(s Setting) bool { return s.Name == name })
	if i < 0 {
		return Setting{}, false
	}
	return r.Settings[i], true
}

// HostAddresses are the addresses of the servers' and the clients' host.
type HostAddresses struct {
	Servers string `json:"servers"`
	Clients string `json:"clients"`
	// TLSVerify and CertPath are how a tcp:// host was reached, as the
	// Docker CLI takes them (DOCKER_TLS_VERIFY, DOCKER_CERT_PATH).
	TLSVerify bool   `json:"tls_verify,omitempty"`
	CertPath  string `json:"cert_path,omitempty"`
}

// Hardware is the machine the servers ran on, as its host sees it (the
// orchestrator itself may run in a container).
type Hardware struct {
	// HostID tells this host from another (a Docker engine's ID): a
	// resume on another one is refused.
	HostID      string `json:"host_id,omitempty"`
	CPUModel    string `json:"cpu_model"`
	CPUs        int    `json:"cpus"`
	MemoryBytes int64  `json:"memory_bytes"`
	Kernel      string `json:"kernel"`
	OS          string `json:"os"`
	// DockerVersion is the Docker engine's version: the host's, or on
	// Kubernetes the engine's that built the images.
	DockerVersion string `json:"docker_version"`
	CgroupVersion string `json:"cgroup_version"`
	StorageDriver string `json:"storage_driver"`
	// Backend is the kind of host (docker, kubernetes); empty in runs
	// recorded before it was kept, which were all Docker's.
	Backend string `json:"backend,omitempty"`
	// Cluster is the Kubernetes cluster and node a host was.
	Cluster *Cluster `json:"cluster,omitempty"`
}

// Cluster is the Kubernetes cluster and the node of it that ran a run's
// pods.
type Cluster struct {
	Context string `json:"context"`
	// Version is the API server's; Kubelet and Runtime the node's kubelet's
	// and container runtime's (containerd://1.6.20).
	Version string `json:"version"`
	Node    string `json:"node"`
	Kubelet string `json:"kubelet_version"`
	Runtime string `json:"container_runtime"`
	// AllocatableCPU is the CPU the kubelet leaves to pods ("1500m");
	// CPUManager its CPU manager policy (static pins whole CPUs) and
	// PodPidsLimit its limit on a pod's processes (-1: none), both empty
	// when the kubelet's configuration could not be read.
	AllocatableCPU string `json:"allocatable_cpu"`
	CPUManager     string `json:"cpu_manager_policy,omitempty"`
	PodPidsLimit   int64  `json:"pod_pids_limit,omitempty"`
}

// Visit is one server's round in one cell.
type Visit struct {
	Cell   int    `json:"cell"`
	Server string `json:"server"`
}

// Design is how a run tests its rankings' pairs: the rounds after which
// it looks and the significance level spent at each, the equivalence
// margin, whether the rounds were fixed (one look at the end), and the
// conditional power below which a pair stops before the last look (0, in
// the runs before it, for none).
type Design struct {
	Looks    []int     `json:"looks"`
	Levels   []float64 `json:"levels"`
	Margin   float64   `json:"margin"`
	Fixed    bool      `json:"fixed"`
	Futility float64   `json:"futility,omitempty"`
}

// Look is one look of a sequential design: after which round, when, and
// per cell the analysis it made (each pair's verdict so far).
type Look struct {
	Rounds  int        `json:"rounds"`
	Elapsed float64    `json:"elapsed_seconds"`
	Cells   []Analysis `json:"cells"`
	// Capacity is the same analysis of each cell's capacity ranking.
	Capacity []Analysis `json:"capacity"`
	// Continuing are the servers of unresolved pairs, per cell, measured
	// in the next look's rounds.
	Continuing [][]string `json:"continuing"`
}

// Analysis is a ranking's pairs as a look tested them.
type Analysis struct {
	Pairs []Pair      `json:"pairs"`
	Looks []LookLevel `json:"looks"`
}

// Pair is the verdict on two servers: the test, the rounds it paired, the
// ratio of their req/s with its interval, the p-value and the verdict, and
// the look that reached it.
type Pair struct {
	A       string  `json:"a"`
	B       string  `json:"b"`
	Test    string  `json:"test,omitempty"`
	N       int     `json:"n"`
	Ratio   float64 `json:"ratio"`
	Lo      float64 `json:"lo,omitempty"`
	Hi      float64 `json:"hi,omitempty"`
	P       float64 `json:"p"`
	Verdict string  `json:"verdict"`
	Look    int     `json:"look"`
}

// LookLevel is what one look of a design tested: its rounds, the level it
// spent, and how many pairs it tested and decided.
type LookLevel struct {
	Rounds  int     `json:"rounds"`
	Level   float64 `json:"level"`
	Tested  int     `json:"tested"`
	Decided int     `json:"decided"`
}

// Resume prepares a record to go on after an interruption: the run is
// running again, rounds the interruption cut short are dropped, to run
// again; what finished, and failures of their own, stay.
func (r *Run) Resume() {
	r.State, r.Ended = Running, time.Time{}
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

// Cell is the servers measured under one combination of the list-valued
// settings (package plan makes it and gives it its meaning).
type Cell struct {
	Scenario   string  `json:"scenario"`
	ServerCPUs float64 `json:"server_cpus"`
	// ClientCPUs is the client's limit, auto resolved.
	ClientCPUs float64 `json:"client_cpus"`
	// Profile is the load shape's name, "" when the shape comes from
	// GRPC_CLIENT_CONNECTIONS and GRPC_CLIENT_CONCURRENCY.
	Profile     string `json:"profile,omitempty"`
	Connections int    `json:"connections"`
	Concurrency int    `json:"concurrency"`
	// Rate is a rate cell's target (GRPC_LOAD_RATES); zero in the cell of
	// the saturation load.
	Rate Rate `json:"rate,omitzero"`
	// Probe is, from 1, which probe of a latency objective's search the
	// cell is: its rate is each server's own, from the probes before.
	Probe int `json:"probe,omitempty"`
	// TLS says the load went over TLS (GRPC_TLS=on).
	TLS bool `json:"tls,omitempty"`
	// Settings are the variables as this cell ran them: its footer.
	Settings  []Setting `json:"settings"`
	Placement Placement `json:"placement"`
	// Kind is the scenario's call kind when it streams, whose figures count
	// messages rather than calls; empty for unary.
	Kind    string   `json:"kind,omitempty"`
	Servers []Server `json:"servers"`
}

// Rate is a rate cell's target: req/s, or a share of the server's
// capacity (0.25 for 25%).
type Rate struct {
	PerSecond float64 `json:"rate_rps,omitempty"`
	Share     float64 `json:"rate_share,omitempty"`
}

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
	Name string `json:"name"`
	// Of is, for a baseline's row (bench --baseline), the server it is the
	// baseline of; its Name is BaselineName(Of, the ref).
	Of      string `json:"of,omitempty"`
	Image   string `json:"image"`
	ImageID string `json:"image_id,omitempty"`
	// Stack, Library and Version are what the server is built on, as its
	// folder's server.json declares them; GRPC is the gRPC implementation
	// under a framework ("grpc-java 1.75.0"), empty when Library is one.
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
	Conformance *Conformance `json:"conformance,omitempty"`
	Rounds      []Round      `json:"rounds"`
}

// Conformance is the conformance gate's verdict on a server: whether it
// passed, each check, and the departures from the gRPC spec that do not
// touch the benchmark's work.
type Conformance struct {
	Passed   bool     `json:"passed"`
	Checks   []Check  `json:"checks"`
	Warnings []string `json:"warnings,omitempty"`
}

// Check is one check of the gate.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"`
}

// Round is one fresh server container, warmed up and measured.
type Round struct {
	Round  int       `json:"round"`
	Start  time.Time `json:"start"`
	Phases []Phase   `json:"phases"`
	// Failure is set when the round could not be measured.
	Failure *Failure `json:"failure,omitempty"`
	// ImageID is the image the round's server ran: a resume that rebuilt
	// the image records the new one for its rounds.
	ImageID string `json:"image_id,omitempty"`
	// ServerAddress is where the clients reached the server from another
	// machine: the address of GRPC_SERVER_ADDRESS and the port the
	// server was published at in this round.
	ServerAddress string `json:"server_address,omitempty"`
	// ServerCPUSet and ClientCPUSet are the cores the server and its load
	// client ran on, as their host read them back once the load started,
	// where it picks them itself (Kubernetes' CPU manager) rather than take
	// the cell's Placement; empty on Docker, which pins to the Placement.
	ServerCPUSet string `json:"server_cpuset,omitempty"`
	ClientCPUSet string `json:"client_cpuset,omitempty"`
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
	// by the capacity tool, taken in every round when that tool is on.
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
// client's usage over its measurement window.
type Measurement struct {
	Load   *Result `json:"load,omitempty"`
	Server Usage   `json:"server_stats"`
	Client Usage   `json:"client_stats"`
	// OtherCores is how many of the host's cores, on average over the
	// window, did work other than the server's and its load client's: the
	// host's engine, the orchestrator, and whatever else runs on the
	// machine. Not known when the host is another machine.
	OtherCores *float64 `json:"host_other_cores,omitempty"`
	// Window is how steady the window was, from the load's series; nil
	// without one.
	Window *Window `json:"window,omitempty"`
}

// How a warm-up under the steady-state rule ended (Result.WarmupEnd).
const (
	WarmupSteady = "steady"
	WarmupCapped = "cap"
)

// Window is the trend of a measurement window's intervals (the server's
// speed in each: its OK calls, or at a set rate the reciprocal of their
// mean latency) and what it says: whether the window was steady (package
// steady's rule), how much the line through the intervals changes over
// it as a share of their mean, with its p; and Spread, the relative
// standard error of the window's mean from its intervals' spread (the
// noise within one round).
type Window struct {
	Steady    bool    `json:"steady"`
	Change    float64 `json:"change"`
	P         float64 `json:"p"`
	Spread    float64 `json:"spread"`
	Intervals int     `json:"intervals"`
}

// Unsteady says the measurement's window was not steady.
func (m Measurement) Unsteady() bool { return m.Window != nil && !m.Window.Steady }

// Result is what a load tool measured over its measurement window.
type Result struct {
	Tool string `json:"tool"`
	// Start and End bound the measurement window, on the host's clock.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Requests is every call of the window: in a closed loop those that
	// completed in it; in an open loop those its schedule planned in it,
	// answered, failed or unanswered. OK are those whose grpc-status was
	// OK.
	Requests uint64 `json:"requests"`
	OK       uint64 `json:"ok"`
	// Statuses counts calls by gRPC status name; Errors failed calls by
	// message.
	Statuses map[string]uint64 `json:"statuses"`
	Errors   map[string]uint64 `json:"errors,omitempty"`
	// RPS is OK calls (or messages, in a streaming cell) per second.
	RPS float64 `json:"rps"`
	// Latency is of the window's OK calls and, in an open loop, of its
	// unanswered ones, each counted at its deadline.
	Latency Latency `json:"latency"`
	// Late counts, in an open-loop load, the calls of the window that
	// could not start on time; Service is the latency of OK calls from
	// their actual start, where Latency runs from the intended one.
	Late    uint64   `json:"late,omitempty"`
	Service *Latency `json:"service_latency,omitempty"`
	// WarmupRequests is how many calls the warm-up completed.
	WarmupRequests uint64 `json:"warmup_requests"`
	// Warmup is how long the warm-up lasted (0 in the runs before it was
	// recorded); WarmupEnd how it ended under the steady-state rule of
	// GRPC_BENCHMARK_WARMUP=auto: "steady", or "cap" when it reached
	// GRPC_BENCHMARK_WARMUP_MAX first; empty for a fixed warm-up.
	Warmup    time.Duration `json:"warmup,omitempty"`
	WarmupEnd string        `json:"warmup_end,omitempty"`
	// Planned is, in an open-loop load, how many calls the schedule meant
	// to start in the window; Unanswered how many of them had no answer by
	// the end of the grace after the window, or never started (failed).
	Planned    uint64 `json:"planned,omitempty"`
	Unanswered uint64 `json:"unanswered,omitempty"`
	// Pacer is, in an open-loop load, the pacer's own lateness: from each
	// call's intended start to the moment it was written.
	Pacer *Latency `json:"pacer,omitempty"`
	// Series is the load interval by interval over warm-up and window.
	Series *Series `json:"series,omitempty"`
	// Histogram is the window's latencies (those of Latency), in
	// microseconds, an HdrHistogram in its compressed, base64 form (V2).
	Histogram string `json:"histogram,omitempty"`
	// Notes say where the figures are narrower than they look.
	Notes []string `json:"notes,omitempty"`
}

// Series is a load interval by interval, from its start (the warm-up's)
// to the end of its window: the calls (or messages) that completed in each
// interval, OK and failed, the mean and the longest latency of the OK
// ones, and the calls in flight at its end.
type Series struct {
	Start    time.Time       `json:"start"`
	Interval time.Duration   `json:"interval"`
	OK       []uint64        `json:"ok"`
	Failed   []uint64        `json:"failed"`
	Mean     []time.Duration `json:"mean"`
	Max      []time.Duration `json:"max"`
	InFlight []int           `json:"in_flight,omitempty"`
}

// ErrorShare is the share of the window's calls that failed.
func (l Result) ErrorShare() float64 {
	if l.Requests == 0 {
		return 0
	}
	return float64(l.Requests-l.OK) / float64(l.Requests)
}

// Failures lists the calls that were not OK by status, in name order:
// "DeadlineExceeded: 40, Unavailable: 60".
func (l Result) Failures() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(l.Statuses)) {
		if name != "OK" {
			parts = append(parts, fmt.Sprintf("%s: %d", name, l.Statuses[name]))
		}
	}
	return strings.Join(parts, ", ")
}

// Latency describes the latencies of OK calls.
type Latency struct {
	Count uint64        `json:"count"`
	Mean  time.Duration `json:"mean"`
	P50   time.Duration `json:"p50"`
	P90   time.Duration `json:"p90"`
	P95   time.Duration `json:"p95"`
	P99   time.Duration `json:"p99"`
	P999  time.Duration `json:"p999,omitempty"`
	Max   time.Duration `json:"max"`
	// Percentiles are, from a tool that keeps a histogram, the latency at
	// each of a list of quantiles, for a percentile plot.
	Percentiles []Percentile `json:"percentiles,omitempty"`
}

// Percentile is the latency at a quantile (0.999 for p99.9).
type Percentile struct {
	Q       float64       `json:"q"`
	Latency time.Duration `json:"latency"`
}

// Usage is the CPU, throttling and memory of one container over a window.
type Usage struct {
	Samples        int     `json:"samples"`
	CPUAvgPercent  float64 `json:"cpu_avg_percent"`
	CPUMaxPercent  float64 `json:"cpu_max_percent"`
	MemoryAvgBytes uint64  `json:"memory_avg_bytes"`
	MemoryMaxBytes uint64  `json:"memory_max_bytes"`
	// CPUSeconds is the CPU time the container used inside the window.
	CPUSeconds float64 `json:"cpu_seconds"`
	// ThrottledShare is the share of CFS periods in which the container's
	// CPU quota stopped it; ThrottledSeconds the time it spent stopped.
	ThrottledShare   float64 `json:"throttled_share"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
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

// Took is the seconds a round's phases took in all.
func (r Round) Took() float64 {
	var total float64
	for _, p := range r.Phases {
		total += p.Seconds
	}
	return total
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
