package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The layout of grpc_bench's bench.txt, column for column.
const (
	rowFormat  = "| %-27s | %7s | %14s | %14s | %14s | %14s | %8s | %13s |\n"
	ruleLength = 137
)

// errorShareMark is the share of failed calls above which a row is marked.
const errorShareMark = 0.01

// WriteBench writes the ranking: servers sorted by OK requests per second,
// then the servers that could not be ranked and why, then the parameters.
func WriteBench(w io.Writer, run Run) error {
	var b strings.Builder
	rule := strings.Repeat("-", ruleLength) + "\n"
	b.WriteString(rule)
	fmt.Fprintf(&b, rowFormat, "name", "req/s", "avg. latency", "90 % in", "95 % in", "99 % in", "avg. cpu", "avg. memory")
	b.WriteString(rule)
	for _, s := range Ranking(run.Servers) {
		l := s.Load.Latency
		fmt.Fprintf(&b, rowFormat, s.Name,
			strconv.FormatFloat(math.Round(s.Load.RPS), 'f', 0, 64),
			millis(l.Mean), millis(l.P90), millis(l.P95), millis(l.P99),
			fmt.Sprintf("%.2f%%", s.Server.CPUAvgPercent),
			mebibytes(s.Server.MemoryAvgBytes))
	}
	b.WriteString(rule)
	writeNotes(&b, run)
	b.WriteString("Benchmark Execution Parameters:\n")
	b.WriteString(run.Commit + "\n")
	for _, s := range run.Settings {
		fmt.Fprintf(&b, "- %s=%s\n", s.Name, s.Value)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Ranking returns the ranked servers, fastest first.
func Ranking(servers []Server) []Server {
	var ranked []Server
	for _, s := range servers {
		if s.Ranked() {
			ranked = append(ranked, s)
		}
	}
	slices.SortStableFunc(ranked, func(a, b Server) int { return cmp.Compare(b.Load.RPS, a.Load.RPS) })
	return ranked
}

// writeNotes lists what a reader must know beside the numbers: servers that
// failed, rows with failed calls, deviations from the gRPC spec, an
// interrupted run.
func writeNotes(b *strings.Builder, run Run) {
	var notes []string
	for _, s := range run.Servers {
		switch {
		case s.Failure != nil:
			notes = append(notes, fmt.Sprintf("%s: not ranked, %s failed: %s", s.Name, s.Failure.Phase, s.Failure.Reason))
			continue
		case s.Load != nil && s.Load.ErrorShare() > errorShareMark:
			notes = append(notes, fmt.Sprintf("%s: %.1f%% of calls failed (%s); req/s counts OK calls only",
				s.Name, 100*s.Load.ErrorShare(), s.Load.Failures()))
		}
		if s.ClientBound {
			notes = append(notes, fmt.Sprintf("%s: client-bound: the load client used %.0f%% CPU, at its GRPC_CLIENT_CPUS limit; "+
				"this row measures the client, not the server (raise GRPC_CLIENT_CPUS)", s.Name, s.Client.CPUAvgPercent))
		}
		if s.Load != nil {
			for _, n := range s.Load.Notes {
				notes = append(notes, s.Name+": "+n)
			}
		}
		if s.Ranked() && s.Conformance != nil {
			for _, w := range s.Conformance.Warnings {
				notes = append(notes, s.Name+": conformance warning: "+w)
			}
		}
	}
	if run.Interrupted {
		notes = append(notes, "the run was interrupted: servers after the last one listed were not benchmarked")
	}
	for _, n := range notes {
		b.WriteString("! " + n + "\n")
	}
}

func millis(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// mebibytes writes at most two decimals and no trailing zeros, as
// grpc_bench does (10.8 MiB, 26.01 MiB).
func mebibytes(bytes uint64) string {
	mib := math.Round(float64(bytes)/(1<<20)*100) / 100
	return strconv.FormatFloat(mib, 'f', -1, 64) + " MiB"
}
