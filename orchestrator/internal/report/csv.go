package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// CSVColumns are the columns of results.csv, in order. The file has one
// row per server and cell: the cell's ranked servers fastest first, then
// the servers not ranked, in catalog order. Figures are medians over the
// rounds, as in bench.txt; a server not ranked has its figures empty.
//
//	run                  the run id (its folder's name)
//	scenario             the cell's request scenario
//	server_cpus          the server's CPU limit in cores
//	client_cpus          the load client's CPU limit in cores
//	profile              the load profile (1a … 3b), empty when the shape
//	                     came from connections and concurrency
//	connections          HTTP/2 connections of the load client
//	concurrency          calls in flight over all connections
//	server               the server's name (a folder of servers/)
//	tools                load tools the figures come from, joined by "+"
//	rounds               rounds the server was run in
//	rps_median           OK calls per second, median of the rounds
//	rps_lo, rps_hi       its interval: see rps_interval
//	rps_interval         "min–max, 75%" (the rounds' range, below 6 rounds,
//	                     with its confidence) or "95% CI" (the median's
//	                     confidence interval)
//	rps_cv               the rounds' standard deviation over their mean
//	p50_ms … p999_ms     latency percentiles p50, p90, p95, p99, p99.9 in
//	                     milliseconds, of every OK call of the rounds when
//	                     each kept a histogram, else medians of the rounds
//	                     (empty when the load tool did not measure them, or
//	                     too few calls support the percentile: 10 above it)
//	server_cpu_percent   the server's CPU in percent of one core (this and
//	                     the other figures of the server's stats are empty
//	                     when no round had a stats reading of it)
//	client_cpu_percent   the load client's CPU in percent of one core
//	rps_per_server_core  req/s over the cores the server kept busy
//	memory_mib           the server's memory in MiB
//	server_throttled     share of CFS periods the server's quota stopped it
//	client_throttled     the same for the load client
//	client_bound         true when the client set the pace in some round
//	failed_share         share of calls that failed (not OK)
//	ranked               true when every round was measured
//	failure              why the server is not ranked, empty when it is
//	capacity_rps_median  req/s of the "server capacity" ranking, where the
//	                     run has one and the server is in it
//	busy_host_rounds     rounds in which other work on the host kept more
//	                     than 0.3 cores busy beside the server and its client
//	group                the row's letters: rows that share one cannot be
//	                     told apart
//	stack                the server's language or platform, from its
//	                     server.json (this and the next three are empty
//	                     for a run recorded before servers declared them)
//	library, version     the library the server is built on, and its version
//	grpc                 the gRPC implementation under that library and its
//	                     version, when the library is a framework over
//	                     another project's ("grpc-java 1.75.0")
//	tls                  the cell's GRPC_TLS: on when the load went over
//	                     TLS, else off
//	rate                 a rate cell's rate as GRPC_LOAD_RATES gives it
//	                     ("25%", "5000") or "probe N" of a latency
//	                     objective's search; empty at saturation
//	target_rps           the rate the server was loaded at, in req/s (a
//	                     share resolved to its capacity); rps_median is
//	                     the rate achieved
//	sustained            true when every round was measured, sustained the
//	                     target and was stable (its queue did not grow; see
//	                     docs/methodology.md), false when one did not
var CSVColumns = []string{
	"run", "scenario", "server_cpus", "client_cpus", "profile", "connections", "concurrency",
	"server", "tools", "rounds",
	"rps_median", "rps_lo", "rps_hi", "rps_interval", "rps_cv",
	"p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms",
	"server_cpu_percent", "client_cpu_percent", "rps_per_server_core", "memory_mib",
	"server_throttled", "client_throttled", "client_bound", "failed_share",
	"ranked", "failure", "capacity_rps_median", "busy_host_rounds", "group",
	"stack", "library", "version", "grpc", "tls",
	"rate", "target_rps", "sustained",
}

// Columns of the server's own stats, left empty when no round had them.
var (
	colServerCPU       = slices.Index(CSVColumns, "server_cpu_percent")
	colPerCore         = slices.Index(CSVColumns, "rps_per_server_core")
	colMemory          = slices.Index(CSVColumns, "memory_mib")
	colServerThrottled = slices.Index(CSVColumns, "server_throttled")
	colRanked          = slices.Index(CSVColumns, "ranked")
	colFailure         = slices.Index(CSVColumns, "failure")
	colCapacity        = slices.Index(CSVColumns, "capacity_rps_median")
	colStack           = slices.Index(CSVColumns, "stack")
)

// WriteCSV writes results.csv: CSVColumns, then a row per server and cell.
func WriteCSV(w io.Writer, a analysis.Run) error {
	run := a.Record
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVColumns); err != nil {
		return fmt.Errorf("write results.csv: %w", err)
	}
	for ci, ac := range a.Cells {
		c := ac.Record
		cell := []string{run.ID, c.Scenario, ac.Plan.ServerCPUs.String(), ac.Plan.ClientCPUs.String(), c.Profile,
			strconv.Itoa(c.Connections), strconv.Itoa(c.Concurrency)}
		capacity := map[string]float64{}
		for _, r := range ac.Capacity.Rows {
			capacity[r.Name] = r.RPS.Median
		}
		servers := map[string]record.Server{}
		for _, s := range c.Servers {
			servers[s.Name] = s
		}
		for _, r := range ac.Load.Rows {
			s := servers[r.Name]
			rec := append(cell[:len(cell):len(cell)], r.Name, strings.Join(r.Tools, "+"), strconv.Itoa(len(s.Rounds)),
				num(r.RPS.Median, 1), num(r.RPS.Lo, 1), num(r.RPS.Hi, 1), r.RPS.Interval, num(r.RPS.CV, 4),
				msField(r.P50), msField(r.P90), msField(r.P95), msField(r.P99), msField(r.P999),
				num(r.ServerCPU, 2), num(r.ClientCPU, 2), num(r.PerServerCore, 1), num(float64(r.MemoryBytes)/(1<<20), 2),
				num(r.ServerThrottled, 4), num(r.ClientThrottled, 4), strconv.FormatBool(r.ClientBound), num(r.ErrorShare(), 4),
				"true", "", "", strconv.Itoa(r.BusyHostRounds), r.Group)
			rec = append(append(rec, builtFields(s)...), ac.Plan.TLSMode())
			rec = append(rec, rateFields(a, ac, ci, s)...)
			if r.ServerStats == 0 {
				// No reading of the server: not a measured zero.
				for _, col := range []int{colServerCPU, colPerCore, colMemory, colServerThrottled} {
					rec[col] = ""
				}
			}
			if v, ok := capacity[r.Name]; ok {
				rec[colCapacity] = num(v, 1)
			}
			if err := cw.Write(rec); err != nil {
				return fmt.Errorf("write results.csv: %w", err)
			}
		}
		for _, s := range c.Servers {
			if s.Ranked() {
				continue
			}
			rec := append(cell[:len(cell):len(cell)], s.Name, "", strconv.Itoa(len(s.Rounds)))
			rec = append(rec, make([]string, colStack-len(rec))...)
			rec = append(append(rec, builtFields(s)...), ac.Plan.TLSMode())
			rec = append(rec, rateFields(a, ac, ci, s)...)
			rec[colRanked] = "false"
			rec[colFailure] = csvText(analysis.FailureText(s))
			if err := cw.Write(rec); err != nil {
				return fmt.Errorf("write results.csv: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write results.csv: %w", err)
	}
	return nil
}

// builtFields are a server's stack, library, version and grpc columns.
func builtFields(s record.Server) []string {
	return []string{csvText(s.Stack), csvText(s.Library), csvText(s.Version), csvText(s.GRPC)}
}

// rateFields are a row's rate, target_rps and sustained: empty at
// saturation, and the last two for a server not measured at its rate.
func rateFields(a analysis.Run, c analysis.Cell, ci int, s record.Server) []string {
	if !c.Plan.Swept() {
		return []string{"", "", ""}
	}
	p, ok := a.RateCell(ci, s.Name)
	if !ok {
		return []string{analysis.RateName(c.Plan), "", ""}
	}
	return []string{p.Rate, num(p.Target, 1), strconv.FormatBool(p.Mark() == "")}
}

// csvText keeps a text cell from being taken for a formula by a
// spreadsheet: a cell that starts with = + - @ (or a tab or carriage
// return) gets a leading ', as OWASP advises. Only text columns pass
// here: a negative number in a numeric column stays a number.
func csvText(s string) string {
	if s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
}

func num(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// msField writes a latency in ms, and one that was not measured (0) as
// an empty field rather than 0.
func msField(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return num(msOf(d), 3)
}
