package calibrate

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// The agreement the subject must reach with the reference tool when
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

// AccuracyRow compares the subject with a reference tool on one server
// under one load shape. The rounds run the two tools one after the other,
// in alternating order, so that a machine slowly getting faster or slower
// favours neither. With the subject as its own reference the row measures
// the noise of the comparison itself: how far apart two identical clients
// land.
type AccuracyRow struct {
	Server  string `json:"server"`
	Profile string `json:"profile"`
	// Subject and Reference are the two tools.
	Subject   string `json:"subject"`
	Reference string `json:"reference"`
	// Connections and Concurrency are the profile's shape, as the tools ran it.
	Connections int             `json:"connections"`
	Concurrency int             `json:"concurrency"`
	Rounds      []AccuracyRound `json:"rounds"`
	// ClientCPUs is the client's CPU limit, against which saturation is judged.
	ClientCPUs float64 `json:"client_cpus"`
	Failure    string  `json:"failure,omitempty"`
}

// AccuracyRound is one measurement by each tool of the same server.
type AccuracyRound struct {
	Subject   record.Measurement `json:"subject"`
	Reference record.Measurement `json:"reference"`
}

// Agreement sums up a row: medians over the rounds, so that one disturbed
// round does not decide the verdict, and the range of the rounds' own
// req/s differences, to show how much the comparison moves from round to
// round.
type Agreement struct {
	SubjectRPS, RefRPS float64
	RPSDiff            float64 // the subject's median req/s relative to the reference's
	RoundDiffMin       float64
	RoundDiffMax       float64
	// SubjectSpread and RefSpread are each tool's own req/s range over the
	// rounds relative to its median: the noise a difference is set against.
	SubjectSpread, RefSpread       float64
	SubjectMean, RefMean           time.Duration
	LatencyDiff                    float64
	SubjectClientCPU, RefClientCPU float64 // highest client CPU of any round, in percent
	ServerCPU                      float64 // median server CPU, in percent
	Verdict                        string
}

// Agreement computes the summary of the row's rounds.
func (a AccuracyRow) Agreement() Agreement {
	if a.Failure != "" || len(a.Rounds) == 0 {
		return Agreement{Verdict: NotMeasured}
	}
	var g Agreement
	var subjectRPS, refRPS, subjectMean, refMean, server, diffs []float64
	failing, saturated := false, false
	for _, r := range a.Rounds {
		subjectRPS = append(subjectRPS, r.Subject.Load.RPS)
		refRPS = append(refRPS, r.Reference.Load.RPS)
		subjectMean = append(subjectMean, float64(r.Subject.Load.Latency.Mean))
		refMean = append(refMean, float64(r.Reference.Load.Latency.Mean))
		server = append(server, r.Subject.Server.CPUAvgPercent, r.Reference.Server.CPUAvgPercent)
		diffs = append(diffs, relative(r.Subject.Load.RPS, r.Reference.Load.RPS))
		g.SubjectClientCPU = max(g.SubjectClientCPU, r.Subject.Client.CPUAvgPercent)
		g.RefClientCPU = max(g.RefClientCPU, r.Reference.Client.CPUAvgPercent)
		saturated = saturated || r.Subject.ClientSaturated(a.ClientCPUs) || r.Reference.ClientSaturated(a.ClientCPUs)
		failing = failing || r.Subject.Load.ErrorShare() > 0 || r.Reference.Load.ErrorShare() > 0
	}
	g.SubjectRPS, g.RefRPS = stats.Median(subjectRPS), stats.Median(refRPS)
	g.RPSDiff = relative(g.SubjectRPS, g.RefRPS)
	g.RoundDiffMin, g.RoundDiffMax = slices.Min(diffs), slices.Max(diffs)
	g.SubjectSpread, g.RefSpread = spread(subjectRPS), spread(refRPS)
	g.SubjectMean, g.RefMean = time.Duration(stats.Median(subjectMean)), time.Duration(stats.Median(refMean))
	g.LatencyDiff = relative(float64(g.SubjectMean), float64(g.RefMean))
	g.ServerCPU = stats.Median(server)
	switch {
	case failing:
		g.Verdict = Failing
	case saturated:
		g.Verdict = ClientBound
	case math.Abs(g.RPSDiff) <= rpsTolerance && math.Abs(g.LatencyDiff) <= latencyTolerance:
		g.Verdict = Agrees
	default:
		g.Verdict = Differs
	}
	return g
}

// Accuracy compares the subject with the reference tool on each server in
// turn and calls saved with every row so far after each server, so that a
// run that dies keeps what it finished.
func (c *Comparison) Accuracy(ctx context.Context, servers []string, reference string, profiles []string, rounds int,
	saved func([]AccuracyRow) error) ([]AccuracyRow, error) {
	shapes, err := c.shapes(profiles)
	if err != nil {
		return nil, err
	}
	if _, err := c.tool("--tool", c.Subject); err != nil {
		return nil, err
	}
	if _, err := c.tool("--against", reference); err != nil {
		return nil, err
	}
	var all []AccuracyRow
	for _, server := range servers {
		rows, err := c.accuracy(ctx, server, reference, shapes, rounds)
		all = append(all, rows...)
		if serr := saved(all); serr != nil {
			return all, serr
		}
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

// accuracy starts one server and, under each shape, loads it in turn with
// the subject and the reference tool, rounds times. A server that cannot
// be brought up gives rows with the failure; a tool that fails
// ends the server's comparison with what it measured so far.
func (c *Comparison) accuracy(ctx context.Context, server, reference string, shapes []record.Cell, rounds int) ([]AccuracyRow, error) {
	rows := make([]AccuracyRow, len(shapes))
	for i, shape := range shapes {
		rows[i] = AccuracyRow{Server: server, Profile: shape.Profile, Subject: c.Subject, Reference: reference, Connections: shape.Connections,
			Concurrency: shape.Concurrency, ClientCPUs: shape.ClientCPUs}
	}
	fail := func(from int, reason string) []AccuracyRow {
		c.Out.Printf("%s: %s", server, reason)
		for i := from; i < len(rows); i++ {
			rows[i].Failure = reason
		}
		return rows
	}
	srv, err := c.up(ctx, server)
	if srv != nil {
		defer srv.Down(ctx)
	}
	if err != nil {
		return fail(0, err.Error()), ctx.Err()
	}
	for i, shape := range shapes {
		p := shape.Profile
		for round := range rounds {
			c.Out.Printf("%s: shape %s, round %d of %d", server, p, round+1, rounds)
			var got AccuracyRound
			for _, side := range accuracyOrder(round, &got, c.Subject, reference) {
				tool, _ := load.Lookup(side.tool)
				m, err := srv.Measure(ctx, tool, plan.LoadSpec(c.Kit.Config, shape, c.Scenario, c.Kit.Config.Duration, tool), fmt.Sprintf("%s-%d-%s", p, round+1, side.name))
				if err != nil {
					return fail(i, fmt.Sprintf("shape %s, round %d, %s: %v", p, round+1, side.name, err)), ctx.Err()
				}
				*side.into = m
			}
			rows[i].Rounds = append(rows[i].Rounds, got)
		}
	}
	return rows, nil
}

// accuracySide is one tool's part of a round: what runs, the name of its
// files, and where its measurement goes.
type accuracySide struct {
	tool, name string
	into       *record.Measurement
}

// accuracyOrder alternates which tool goes first.
func accuracyOrder(round int, got *AccuracyRound, subject, reference string) []accuracySide {
	sides := []accuracySide{{subject, subject, &got.Subject}, {reference, "ref-" + reference, &got.Reference}}
	if round%2 == 1 {
		slices.Reverse(sides)
	}
	return sides
}

// WriteAccuracyTable prints one line per server and shape, subject's
// figures against the reference's, then a count of the verdicts; rates
// count unit (req/s, or msg/s for streams).
func WriteAccuracyTable(w io.Writer, subject, unit string, rows []AccuracyRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	ref := "reference"
	if len(rows) > 0 {
		ref = rows[0].Reference
	}
	if ref == subject {
		ref = subject + " again" // the columns must still tell the two sides apart
	}
	fmt.Fprintf(tw, "server\tshape\trounds\t%[2]s %[3]s\t%[1]s %[3]s\t%[3]s diff\tround diffs\tspread %[2]s/%[1]s\t%[2]s mean\t%[1]s mean\tlatency diff\tclient cpu %[2]s/%[1]s\tserver cpu\tverdict\t\n", ref, subject, unit)
	count := map[string]int{}
	var failures []string
	for _, row := range rows {
		g := row.Agreement()
		count[g.Verdict]++
		if g.Verdict == NotMeasured {
			fmt.Fprintf(tw, "%s\t%s\t%d\t\t\t\t\t\t\t\t\t\t\t%s\t\n", row.Server, row.Profile, len(row.Rounds), g.Verdict)
			failures = append(failures, fmt.Sprintf("%s %s: %s", row.Server, row.Profile, row.Failure))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%s\t%s..%s\t%.0f%%/%.0f%%\t%.3f ms\t%.3f ms\t%s\t%.0f%%/%.0f%%\t%.0f%%\t%s\t\n",
			row.Server, row.Profile, len(row.Rounds), g.SubjectRPS, g.RefRPS, percent(g.RPSDiff),
			percent(g.RoundDiffMin), percent(g.RoundDiffMax), 100*g.SubjectSpread, 100*g.RefSpread,
			float64(g.SubjectMean)/1e6, float64(g.RefMean)/1e6, percent(g.LatencyDiff),
			g.SubjectClientCPU, g.RefClientCPU, g.ServerCPU, g.Verdict)
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
	_, err := fmt.Fprintf(w, "%s vs %s (%s within ±%.0f%%, mean latency within ±%.0f%%, medians of the rounds): %s of %d\n",
		subject, ref, unit, 100*rpsTolerance, 100*latencyTolerance, strings.Join(parts, ", "), len(rows))
	return err
}

func relative(x, ref float64) float64 {
	if ref == 0 {
		return math.NaN()
	}
	return x/ref - 1
}

func percent(f float64) string { return fmt.Sprintf("%+.1f%%", 100*f) }

// spread is the range of xs relative to their median.
func spread(xs []float64) float64 {
	return (slices.Max(xs) - slices.Min(xs)) / stats.Median(xs)
}
