package analysis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// notes lists what a reader must know beside a cell's load ranking:
// servers that failed, rows with failed calls, client-bound rows, notes of
// the load tools, which rows can be told apart, an interrupted run. Each
// is escaped here, once: reasons and warnings carry what servers and
// builds said.
func (a Run) notes(c Cell) []string {
	var out []string
	for _, s := range c.Record.Servers {
		if s.Unsupported != "" {
			out = append(out, fmt.Sprintf("%s: not supported: %s", s.Name, s.Unsupported))
			continue
		}
		if f := s.FirstFailure(); f != nil {
			out = append(out, fmt.Sprintf("%s: not ranked, %s failed: %s", s.Name, where(*f), f.Reason))
		}
	}
	for _, r := range c.Load.Rows {
		if s, _ := c.Record.Server(r.Name); s.Conformance != nil {
			for _, w := range s.Conformance.Warnings {
				out = append(out, r.Name+": conformance warning: "+w)
			}
		}
		if r.ErrorShare() > ErrorShareMark {
			out = append(out, fmt.Sprintf("%s: %.1f%% of calls failed (%s); %s counts OK calls only", r.Name, 100*r.ErrorShare(), r.Failures, c.Unit))
		}
		if r.ClientBound {
			out = append(out, fmt.Sprintf("%s: client-bound: the load client used %.0f%% CPU and its quota throttled it in %.0f%% of its periods, "+
				"at its GRPC_CLIENT_CPUS limit; this row measures the client: its %s (≥) is a lower bound of the server's, "+
				"sorted by that bound and not tested against other rows (see summary.txt for the server's capacity)",
				r.Name, r.ClientCPU, 100*r.ClientThrottled, c.Unit))
		}
		for _, n := range r.Notes {
			out = append(out, r.Name+": "+n)
		}
		out = append(out, steadyNotes(r)...)
		if r.OOMKills > 0 {
			out = append(out, fmt.Sprintf("%s: the OOM killer killed %d of its processes over the rounds (GRPC_SERVER_RAM), yet it answered", r.Name, r.OOMKills))
		}
		if r.StatsMissing > 0 {
			out = append(out, fmt.Sprintf("%s: stats incomplete: no CPU or memory reading in %d of %d rounds; CPU and memory are from the others", r.Name, r.StatsMissing, r.RPS.N))
		}
		if r.StealRounds > 0 {
			out = append(out, fmt.Sprintf("%s: the host's hypervisor took more than %.0f%% of its CPU time in %d of %d rounds", r.Name, 100*HighSteal, r.StealRounds, r.RPS.N))
		}
		if r.BusyHostRounds > 0 {
			out = append(out, fmt.Sprintf("%s: busy host: other work than the server and its client kept more than %.1f cores busy in %d of %d rounds (up to %.2f); its figures may be disturbed", r.Name, BusyHostCores, r.BusyHostRounds, r.RPS.N, r.MaxOtherCores))
		}
	}
	out = append(out, a.rateNotes(c)...)
	out = append(out, c.Load.Verdicts...)
	if run := a.Record; run.Seed != 0 {
		out = append(out, fmt.Sprintf("each round visited the servers in a random order from seed %d; GRPC_BENCHMARK_SEED=%d replays it", run.Seed, run.Seed))
	}
	switch a.Record.State {
	case record.Interrupted:
		out = append(out, "the run was interrupted: servers and rounds after the last one listed were not measured")
	case record.Running:
		out = append(out, "the run had not ended when this was written (it is still going, or was killed): servers and rounds after the last one listed are not measured yet; grpcbench bench --resume <run folder> finishes a run that was killed")
	}
	for i, n := range out {
		out[i] = escape.Text(n)
	}
	return out
}

// librariesNote lists what every server of the cell is built on, ranked
// or not, as its server.json declares it: "libraries: go_grpc grpc-go
// 1.85.0 (Go); ...". It is empty for a run recorded before servers
// declared it.
func librariesNote(c record.Cell) string {
	var parts []string
	for _, s := range c.Servers {
		if s.Library != "" {
			parts = append(parts, fmt.Sprintf("%s %s (%s)", s.Name, s.Built(), s.Stack))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return escape.Text("libraries: " + strings.Join(parts, "; "))
}

// verdicts says which rows of a ranking can be told apart, by what test,
// and what was claimed of no pair and why.
func (a Run) verdicts(rows []Row, an stats.Analysis) []string {
	if len(an.Pairs) == 0 {
		return nil
	}
	var out []string
	if n := count(an, stats.TooFewRounds); n == len(an.Pairs) {
		out = append(out, fmt.Sprintf("no two rows are told apart: fewer than %d rounds; the order of the rows is not significant", stats.MinRounds))
	} else {
		out = append(out, "groups: rows that share a letter cannot be told apart: "+groupsText(rows)+"; "+a.testText(an))
	}
	for _, p := range an.Pairs {
		switch {
		case p.Verdict == stats.TooFewRounds && count(an, stats.TooFewRounds) < len(an.Pairs):
			out = append(out, fmt.Sprintf("%s, %s: not compared, %d rounds (fewer than %d)", p.A, p.B, p.N, stats.MinRounds))
		case p.Test == stats.MannWhitney:
			out = append(out, fmt.Sprintf("%s, %s: fewer than %d rounds in common, compared by %s over the rounds of each (p = %.3f)", p.A, p.B, stats.MinRounds, stats.MannWhitney, p.P))
		}
		if p.Verdict == stats.Equivalent {
			out = append(out, fmt.Sprintf("%s, %s: equivalent: %s/%s %.3f–%.3f, within ±%s", p.A, p.B, p.B, p.A, p.Lo, p.Hi, percent(a.Design.Margin)))
		}
	}
	if d := a.Design; !d.Fixed && len(a.Record.Looks) > 0 {
		out = append(out, fmt.Sprintf("GRPC_BENCHMARK_ROUNDS=auto: looks after rounds %s at level %.4f each; %d pairs separated, %d equivalent, %d stopped as futile (under %.0f%% conditional power to be separated by the last look), %d unresolved; %s",
			intsText(a.lookRounds()), d.Levels[0], count(an, stats.Separated), count(an, stats.Equivalent), count(an, stats.Futile), 100*d.Futility,
			count(an, stats.Unresolved)+count(an, stats.TooFewRounds), a.Record.StopReason))
	}
	return out
}

// testText says how pairs were tested.
func (a Run) testText(an stats.Analysis) string {
	level := fmt.Sprintf("at %.0f%%", 100*stats.Alpha)
	if !a.Design.Fixed {
		level = "at each look's level"
	}
	pairs := fmt.Sprintf("the %d pairs", len(an.Pairs))
	if len(an.Pairs) == 1 {
		pairs = "the pair"
	}
	return fmt.Sprintf("%s, rounds as blocks; false discovery rate %s over %s (Benjamini–Hochberg)", stats.PairedT, level, pairs)
}

// groupsText lists each letter's rows: "a: x, y; b: z".
func groupsText(rows []Row) string {
	var letters []rune
	for _, r := range rows {
		for _, l := range r.Group {
			if !slices.Contains(letters, l) {
				letters = append(letters, l)
			}
		}
	}
	var parts []string
	for _, l := range letters {
		var names []string
		for _, r := range rows {
			if strings.ContainsRune(r.Group, l) {
				names = append(names, r.Name)
			}
		}
		parts = append(parts, string(l)+": "+strings.Join(names, ", "))
	}
	return strings.Join(parts, "; ")
}

func count(a stats.Analysis, verdict string) int {
	n := 0
	for _, p := range a.Pairs {
		if p.Verdict == verdict {
			n++
		}
	}
	return n
}

func (a Run) lookRounds() []int {
	var out []int
	for _, l := range a.Record.Looks {
		out = append(out, l.Rounds)
	}
	return out
}

func intsText(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', -1, 64) + "%" }

// where names the phase, and the round when there are rounds.
func where(f record.Failure) string {
	if f.Round > 0 {
		return fmt.Sprintf("round %d, %s", f.Round, f.Phase)
	}
	return f.Phase
}

// FailureText says why a server is not ranked, as bench.txt does: the
// phase (and round) that failed and the reason.
func FailureText(s record.Server) string {
	if s.Unsupported != "" {
		return escape.Text("not supported: " + s.Unsupported)
	}
	if f := s.FirstFailure(); f != nil {
		return escape.Text(fmt.Sprintf("%s failed: %s", where(*f), f.Reason))
	}
	return "not measured"
}
