package suite

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/config"
)

// The agreement the h2 engine must reach with h2load, the reference, when
// neither client is saturated: req/s within ±5%, mean latency within ±10%.
const (
	rpsTolerance     = 0.05
	latencyTolerance = 0.10
)

// Verdicts of an accuracy comparison.
const (
	Agrees      = "agrees"
	Differs     = "differs"
	ClientBound = "client-bound" // a client set the pace: says nothing about accuracy
	Failing     = "failing calls"
	NotMeasured = "not measured"
)

// AccuracyRow compares h2 with h2load on one server under one load shape.
// The rounds run the two engines one after the other, in alternating order,
// so that a machine slowly getting faster or slower favours neither.
type AccuracyRow struct {
	Server  string `json:"server"`
	Profile string `json:"profile"`
	// Connections and Concurrency are the profile's shape, as the engines ran it.
	Connections int             `json:"connections"`
	Concurrency int             `json:"concurrency"`
	Rounds      []AccuracyRound `json:"rounds"`
	// ClientCPUs is the client's CPU limit, against which saturation is judged.
	ClientCPUs float64 `json:"client_cpus"`
	Failure    string  `json:"failure,omitempty"`
}

// AccuracyRound is one measurement by each engine of the same server.
type AccuracyRound struct {
	H2     Measurement `json:"h2"`
	H2Load Measurement `json:"h2load"`
}

// Agreement sums up a row: medians over the rounds, so that one disturbed
// round does not decide the verdict, and the range of the rounds' own
// req/s differences, to show how much the comparison moves from round to
// round.
type Agreement struct {
	H2RPS, H2LoadRPS             float64
	RPSDiff                      float64 // h2's median req/s relative to h2load's
	RoundDiffMin                 float64
	RoundDiffMax                 float64
	H2Mean, H2LoadMean           time.Duration
	LatencyDiff                  float64
	H2ClientCPU, H2LoadClientCPU float64 // highest client CPU of any round, in percent
	ServerCPU                    float64 // median server CPU, in percent
	Verdict                      string
}

// Agreement computes the summary of the row's rounds.
func (a AccuracyRow) Agreement() Agreement {
	if a.Failure != "" || len(a.Rounds) == 0 {
		return Agreement{Verdict: NotMeasured}
	}
	var g Agreement
	var h2RPS, refRPS, h2Mean, refMean, server, diffs []float64
	failing := false
	for _, r := range a.Rounds {
		h2RPS = append(h2RPS, r.H2.Load.RPS)
		refRPS = append(refRPS, r.H2Load.Load.RPS)
		h2Mean = append(h2Mean, float64(r.H2.Load.Latency.Mean))
		refMean = append(refMean, float64(r.H2Load.Load.Latency.Mean))
		server = append(server, r.H2.Server.CPUAvgPercent, r.H2Load.Server.CPUAvgPercent)
		diffs = append(diffs, relative(r.H2.Load.RPS, r.H2Load.Load.RPS))
		g.H2ClientCPU = max(g.H2ClientCPU, r.H2.Client.CPUAvgPercent)
		g.H2LoadClientCPU = max(g.H2LoadClientCPU, r.H2Load.Client.CPUAvgPercent)
		failing = failing || r.H2.Load.ErrorShare() > 0 || r.H2Load.Load.ErrorShare() > 0
	}
	g.H2RPS, g.H2LoadRPS = median(h2RPS), median(refRPS)
	g.RPSDiff = relative(g.H2RPS, g.H2LoadRPS)
	g.RoundDiffMin, g.RoundDiffMax = slices.Min(diffs), slices.Max(diffs)
	g.H2Mean, g.H2LoadMean = time.Duration(median(h2Mean)), time.Duration(median(refMean))
	g.LatencyDiff = relative(float64(g.H2Mean), float64(g.H2LoadMean))
	g.ServerCPU = median(server)
	saturated := clientBoundShare * 100 * a.ClientCPUs
	switch {
	case failing:
		g.Verdict = Failing
	case g.H2ClientCPU >= saturated || g.H2LoadClientCPU >= saturated:
		g.Verdict = ClientBound
	case math.Abs(g.RPSDiff) <= rpsTolerance && math.Abs(g.LatencyDiff) <= latencyTolerance:
		g.Verdict = Agrees
	default:
		g.Verdict = Differs
	}
	return g
}

// CompareAccuracy starts one server and, for each profile, loads it in
// turn with h2 and h2load for the given number of rounds. A server that
// cannot be brought up gives rows with the failure; an engine that fails
// ends the server's comparison with what it measured so far.
func (s *Suite) CompareAccuracy(ctx context.Context, server string, profiles []string, rounds int) ([]AccuracyRow, error) {
	images, err := s.buildEngineImages(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]AccuracyRow, len(profiles))
	configs := make([]config.Config, len(profiles))
	for i, p := range profiles {
		if configs[i], err = s.Config.WithProfile(p); err != nil {
			return nil, err
		}
		rows[i] = AccuracyRow{Server: server, Profile: p, Connections: configs[i].Connections,
			Concurrency: configs[i].Concurrency, ClientCPUs: float64(s.Config.ClientCPUs)}
	}
	fail := func(from int, reason string) []AccuracyRow {
		fmt.Fprintf(s.Out, "%s: %s\n", server, reason)
		for i := from; i < len(rows); i++ {
			rows[i].Failure = reason
		}
		return rows
	}
	r := s.newServerRun(server)
	defer r.removeContainers(ctx)
	srv, phase, err := r.bringUp(ctx, images.client)
	if srv != nil {
		defer r.saveServerLogs(ctx, srv)
	}
	if err != nil {
		return fail(0, fmt.Sprintf("%s failed: %v", phase, err)), ctx.Err()
	}
	for i, p := range profiles {
		r.Config = configs[i]
		for round := range rounds {
			fmt.Fprintf(s.Out, "%s: shape %s, round %d of %d\n", server, p, round+1, rounds)
			var got AccuracyRound
			for _, engine := range accuracyOrder(round) {
				m, err := r.loadWith(ctx, srv, images, engine, fmt.Sprintf("%s-%d-%s-", p, round+1, engine))
				if err != nil {
					return fail(i, fmt.Sprintf("shape %s, round %d, %s: %v", p, round+1, engine, err)), ctx.Err()
				}
				if engine == "h2" {
					got.H2 = m
				} else {
					got.H2Load = m
				}
			}
			rows[i].Rounds = append(rows[i].Rounds, got)
		}
	}
	return rows, nil
}

// accuracyOrder alternates which engine goes first.
func accuracyOrder(round int) []string {
	if round%2 == 0 {
		return []string{"h2", "h2load"}
	}
	return []string{"h2load", "h2"}
}

// WriteAccuracyTable prints one line per server and shape, then a count of
// the verdicts.
func WriteAccuracyTable(w io.Writer, rows []AccuracyRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tshape\trounds\th2 req/s\th2load req/s\treq/s diff\tround diffs\th2 mean\th2load mean\tlatency diff\tclient cpu h2/h2load\tserver cpu\tverdict\t")
	count := map[string]int{}
	var failures []string
	for _, row := range rows {
		g := row.Agreement()
		count[g.Verdict]++
		if g.Verdict == NotMeasured {
			fmt.Fprintf(tw, "%s\t%s\t%d\t\t\t\t\t\t\t\t\t\t%s\t\n", row.Server, row.Profile, len(row.Rounds), g.Verdict)
			failures = append(failures, fmt.Sprintf("%s %s: %s", row.Server, row.Profile, row.Failure))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%s\t%s..%s\t%.3f ms\t%.3f ms\t%s\t%.0f%%/%.0f%%\t%.0f%%\t%s\t\n",
			row.Server, row.Profile, len(row.Rounds), g.H2RPS, g.H2LoadRPS, percent(g.RPSDiff),
			percent(g.RoundDiffMin), percent(g.RoundDiffMax),
			float64(g.H2Mean)/1e6, float64(g.H2LoadMean)/1e6, percent(g.LatencyDiff),
			g.H2ClientCPU, g.H2LoadClientCPU, g.ServerCPU, g.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range failures {
		fmt.Fprintln(w, "! "+f)
	}
	var parts []string
	for _, v := range []string{Agrees, Differs, ClientBound, Failing, NotMeasured} {
		if count[v] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, count[v]))
		}
	}
	_, err := fmt.Fprintf(w, "h2 vs h2load (req/s within ±%.0f%%, mean latency within ±%.0f%%, medians of the rounds): %s of %d\n",
		100*rpsTolerance, 100*latencyTolerance, strings.Join(parts, ", "), len(rows))
	return err
}

func relative(x, ref float64) float64 {
	if ref == 0 {
		return math.NaN()
	}
	return x/ref - 1
}

func percent(f float64) string { return fmt.Sprintf("%+.1f%%", 100*f) }

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
