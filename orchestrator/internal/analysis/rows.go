package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// Thresholds of the flags a row can carry.
const (
	// HighSteal is the share of the host's CPU time taken by its
	// hypervisor above which a round is flagged.
	HighSteal = 0.05
	// BusyHostCores is how many cores of other work on the host, beside
	// the server and its load client, flag a round: the Docker engine's stats
	// streams and the orchestrator take about 0.1 here.
	BusyHostCores = 0.3
	// ErrorShareMark is the share of failed calls above which a row is
	// marked.
	ErrorShareMark = 0.01
)

// Row is one server's figures over its rounds, as a ranking shows
// them: medians, with the spread of req/s.
type Row struct {
	Name string `json:"name"`
	// Stack and Library are what the server is built on (record.Server's
	// Stack and Built), empty for a run recorded before servers declared
	// it.
	Stack   string `json:"stack,omitempty"`
	Library string `json:"library,omitempty"`
	// Tools are the load tools the figures come from.
	Tools []string `json:"tools"`
	// RPS sums up OK calls per second; Values are the rounds' own, of the
	// rounds numbered Rounds.
	RPS    stats.Estimate `json:"rps"`
	Values []float64      `json:"rps_rounds"`
	Rounds []int          `json:"rounds"`
	// Group is the row's letters: rows that share one cannot be told
	// apart (Judge).
	Group string `json:"group"`
	// Latencies: of every OK call of the rounds when Pooled (their
	// histograms merged), else medians of the rounds' own; 0 where the
	// calls cannot support the percentile (histogram.Supports).
	Pooled bool          `json:"pooled,omitempty"`
	Mean   time.Duration `json:"mean"`
	P50    time.Duration `json:"p50"`
	P90    time.Duration `json:"p90"`
	P95    time.Duration `json:"p95"`
	P99    time.Duration `json:"p99"`
	P999   time.Duration `json:"p999"`
	// Percentiles are the pooled histogram's percentile list, else the
	// medians of the rounds' lists when every round has one.
	Percentiles []record.Percentile `json:"percentiles,omitempty"`
	// P99Values are the rounds' own p99 latencies, in nanoseconds.
	P99Values []float64 `json:"p99_rounds"`
	// CPU in percent of one core, memory in bytes, medians.
	ServerCPU   float64 `json:"server_cpu"`
	ClientCPU   float64 `json:"client_cpu"`
	MemoryBytes uint64  `json:"memory_bytes"`
	// PerServerCore is req/s for each core the server kept busy.
	PerServerCore float64 `json:"rps_per_server_core"`
	// Throttled shares of CFS periods, medians.
	ServerThrottled float64 `json:"server_throttled"`
	ClientThrottled float64 `json:"client_throttled"`
	// ClientBound is set when the client set the pace in any round.
	ClientBound bool `json:"client_bound"`
	// Failed and Calls count the calls of every round; Failures lists the
	// failed ones by status.
	Failed   uint64 `json:"failed"`
	Calls    uint64 `json:"calls"`
	Failures string `json:"failures,omitempty"`
	// StealRounds counts rounds whose host steal was above HighSteal.
	StealRounds int `json:"steal_rounds"`
	// BusyHostRounds counts rounds in which other work on the host took
	// more than BusyHostCores; MaxOtherCores is the most it took.
	BusyHostRounds int     `json:"busy_host_rounds"`
	MaxOtherCores  float64 `json:"max_other_cores"`
	// OOMKills counts the server's processes killed for memory.
	OOMKills int `json:"oom_kills"`
	// StatsMissing counts rounds without a stats reading of the server or
	// the client: their CPU and memory are left out of the medians;
	// ServerStats counts those with the server's.
	StatsMissing int      `json:"stats_missing"`
	ServerStats  int      `json:"server_stats_rounds"`
	Notes        []string `json:"notes,omitempty"`
}

// ErrorShare is the share of calls that failed.
func (r Row) ErrorShare() float64 {
	if r.Calls == 0 {
		return 0
	}
	return float64(r.Failed) / float64(r.Calls)
}

// LoadRanking is a cell's ranked servers by the load tool's figures,
// fastest first; servers of equal median keep their catalog order.
func LoadRanking(c record.Cell) []Row {
	var rows []Row
	for _, s := range c.Servers {
		if s.Ranked() {
			rows = append(rows, rowOf(s, s.Rounds, loadMeasurement, float64(c.ClientCPUs)))
		}
	}
	return sorted(rows)
}

// CapacityCaption says where the server capacity ranking's figures come
// from, for every file that shows it.
const CapacityCaption = "the capacity tool's figures alone: it measures every server in every round, over the same kind of window, whether the load tool kept up or not"

// CapacityRanking is the "server capacity" ranking: each server's figures
// from the capacity measurements alone, over the rounds that have one, so
// that no row mixes load tools (CapacityNotes says which servers have
// fewer rounds, or none). It is nil when no round has a capacity
// measurement.
func CapacityRanking(c record.Cell) []Row {
	var rows []Row
	for _, s := range c.Servers {
		if capacity := capacityRounds(s); len(capacity) > 0 {
			rows = append(rows, rowOf(s, capacity, capacityMeasurement, float64(c.ClientCPUs)))
		}
	}
	return sorted(rows)
}

// capacityRounds are a ranked server's rounds that have a capacity
// measurement.
func capacityRounds(s record.Server) []record.Round {
	if !s.Ranked() {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(s.Rounds), func(r record.Round) bool { return r.Capacity == nil || r.Capacity.Load == nil })
}

// CapacityNotes says what the capacity ranking rows leave out: a ranked
// server without a capacity figure, and one whose figures come from fewer
// rounds than the others' (with why the others failed). Rows of records
// from before every round was measured (only client-bound rounds were)
// show here too.
func CapacityNotes(c record.Cell, rows []Row) []string {
	if len(rows) == 0 {
		return nil
	}
	most := 0
	for _, r := range rows {
		most = max(most, r.RPS.N)
	}
	var out []string
	for _, s := range c.Servers {
		if !s.Ranked() {
			continue
		}
		n := len(capacityRounds(s))
		if n == most {
			continue
		}
		why := ""
		for _, r := range s.Rounds {
			if r.CapacityFailure != "" {
				why = fmt.Sprintf(": round %d: %s", r.Round, r.CapacityFailure)
				break
			}
		}
		// The reason is what a server or its client said.
		if n == 0 {
			out = append(out, escape.Text(fmt.Sprintf("%s: not in the server capacity ranking, no round has a capacity measurement%s", s.Name, why)))
			continue
		}
		out = append(out, escape.Text(fmt.Sprintf("%s: server capacity from %d of %d rounds, fewer than the others'%s", s.Name, n, most, why)))
	}
	return out
}

func sorted(rows []Row) []Row {
	slices.SortStableFunc(rows, func(a, b Row) int { return cmp.Compare(b.RPS.Median, a.RPS.Median) })
	return rows
}

// rowOf sums up a server's rounds by the measurement pick takes of each.
func rowOf(s record.Server, rounds []record.Round, pick measurement, clientCPUs float64) Row {
	row := Row{Name: s.Name, Stack: s.Stack, Library: s.Built()}
	var mean, p50, p90, p95, p99, p999, srvCPU, cliCPU, mem, perCore, srvThr, cliThr []float64
	statuses := map[string]uint64{}
	notes := map[string]bool{}
	var loads []*record.Result
	for _, r := range rounds {
		m := pick(r)
		l := m.Load
		loads = append(loads, l)
		if !slices.Contains(row.Tools, l.Tool) {
			row.Tools = append(row.Tools, l.Tool)
		}
		row.Values = append(row.Values, l.RPS)
		row.Rounds = append(row.Rounds, r.Round)
		mean = append(mean, float64(l.Latency.Mean))
		p50 = append(p50, float64(l.Latency.P50))
		p90 = append(p90, float64(l.Latency.P90))
		p95 = append(p95, float64(l.Latency.P95))
		p99 = append(p99, float64(l.Latency.P99))
		p999 = append(p999, float64(l.Latency.P999))
		row.OOMKills += r.OOMKills
		if m.Server.Samples == 0 || m.Client.Samples == 0 {
			row.StatsMissing++
		}
		if m.Server.Samples > 0 {
			srvCPU = append(srvCPU, m.Server.CPUAvgPercent)
			mem = append(mem, float64(m.Server.MemoryAvgBytes))
			srvThr = append(srvThr, m.Server.ThrottledShare)
			if m.Server.CPUAvgPercent > 0 {
				perCore = append(perCore, l.RPS/(m.Server.CPUAvgPercent/100))
			}
		}
		if m.Client.Samples > 0 {
			cliCPU = append(cliCPU, m.Client.CPUAvgPercent)
			cliThr = append(cliThr, m.Client.ThrottledShare)
		}
		row.Calls += l.Requests
		row.Failed += l.Requests - l.OK
		for status, n := range l.Statuses {
			if status != "OK" {
				statuses[status] += n
			}
		}
		for _, n := range l.Notes {
			notes[n] = true
		}
		row.ClientBound = row.ClientBound || m.ClientSaturated(clientCPUs)
		if st := r.HostSteal; st != nil && *st > HighSteal {
			row.StealRounds++
		}
		if o := m.OtherCores; o != nil {
			row.MaxOtherCores = max(row.MaxOtherCores, *o)
			if *o > BusyHostCores {
				row.BusyHostRounds++
			}
		}
	}
	row.RPS = stats.Of(row.Values)
	row.ServerStats = len(srvCPU)
	d := func(v []float64) time.Duration { return time.Duration(stats.Median(v)) }
	row.Mean, row.P50, row.P90, row.P95, row.P99, row.P999 = d(mean), d(p50), d(p90), d(p95), d(p99), d(p999)
	row.P99Values = p99
	row.Percentiles = medianPercentiles(rounds, pick)
	poolLatencies(&row, loads)
	row.ServerCPU, row.ClientCPU = stats.Median(srvCPU), stats.Median(cliCPU)
	row.MemoryBytes = uint64(stats.Median(mem))
	row.PerServerCore = stats.Median(perCore)
	row.ServerThrottled, row.ClientThrottled = stats.Median(srvThr), stats.Median(cliThr)
	var parts []string
	for _, status := range slices.Sorted(maps.Keys(statuses)) {
		parts = append(parts, fmt.Sprintf("%s: %d", status, statuses[status]))
	}
	row.Failures = strings.Join(parts, ", ")
	row.Notes = slices.Sorted(maps.Keys(notes))
	return row
}

// medianPercentiles are the medians, quantile by quantile, of the rounds'
// percentile lists; nil unless every round has the same list.
func medianPercentiles(rounds []record.Round, pick func(record.Round) *record.Measurement) []record.Percentile {
	var first []record.Percentile
	values := map[float64][]float64{}
	for _, r := range rounds {
		list := pick(r).Load.Latency.Percentiles
		if first == nil {
			first = list
		}
		if len(list) == 0 || len(list) != len(first) {
			return nil
		}
		for i, p := range list {
			if p.Q != first[i].Q {
				return nil
			}
			values[p.Q] = append(values[p.Q], float64(p.Latency))
		}
	}
	out := make([]record.Percentile, len(first))
	for i, p := range first {
		out[i] = record.Percentile{Q: p.Q, Latency: time.Duration(stats.Median(values[p.Q]))}
	}
	return out
}

// Judge compares every pair of a ranking's measured rows by the run's
// design, the rounds being blocks, and gives each its group letters. A
// client-bound row is left out: its req/s is the client's, a lower bound of
// the server's, so no order against it can be claimed.
func Judge(design stats.Design, rows []Row) stats.Analysis {
	judged, samples := samplesOf(rows)
	a := stats.Analyse(samples, design)
	letters := stats.Letters(len(judged), func(i, j int) bool { return a.Separated(rows[judged[i]].Name, rows[judged[j]].Name) })
	for k, i := range judged {
		rows[i].Group = letters[k]
	}
	return a
}

// samplesOf is the req/s of each round of the measured (not client-bound)
// rows, and which rows they are.
func samplesOf(rows []Row) (judged []int, samples []stats.Sample) {
	for i, r := range rows {
		if !r.ClientBound {
			judged = append(judged, i)
			samples = append(samples, stats.Sample{Name: r.Name, Rounds: r.Rounds, Values: r.Values})
		}
	}
	return judged, samples
}
