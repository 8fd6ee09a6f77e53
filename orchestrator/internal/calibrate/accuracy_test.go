package calibrate

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// measured is a measurement with the figures the verdict reads.
func measured(rps float64, mean time.Duration, clientCPU float64) record.Measurement {
	return record.Measurement{
		Load:   &record.Result{RPS: rps, Requests: 100, OK: 100, Latency: record.Latency{Mean: mean}},
		Client: record.Usage{CPUAvgPercent: clientCPU},
		Server: record.Usage{CPUAvgPercent: 100},
	}
}

func TestAgreementTakesMediansAndJudges(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name   string
		rounds []AccuracyRound
		want   string
		diff   float64
	}{
		{"within both tolerances", []AccuracyRound{
			{measured(1040, ms, 20), measured(1000, ms, 30)},
		}, Agrees, 0.04},
		{"one disturbed round does not decide", []AccuracyRound{
			{measured(1000, ms, 20), measured(1000, ms, 30)},
			{measured(700, 2*ms, 20), measured(1000, ms, 30)},
			{measured(1010, ms, 20), measured(1000, ms, 30)},
		}, Agrees, 0},
		{"req/s outside", []AccuracyRound{
			{measured(1060, ms, 20), measured(1000, ms, 30)},
		}, Differs, 0.06},
		{"latency outside", []AccuracyRound{
			{measured(1000, 1120*time.Microsecond, 20), measured(1000, ms, 30)},
		}, Differs, 0},
		{"a saturated client voids the comparison", []AccuracyRound{
			{measured(1300, ms, 20), measured(1000, ms, 95)},
		}, ClientBound, 0.3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := AccuracyRow{Server: "s", Profile: "2b", Reference: "h2load", Rounds: tc.rounds, ClientCPUs: 1}.Agreement()
			if g.Verdict != tc.want {
				t.Errorf("verdict %q, want %q (%+v)", g.Verdict, tc.want, g)
			}
			if math.Abs(g.RPSDiff-tc.diff) > 1e-9 {
				t.Errorf("req/s diff %.4f, want %.4f", g.RPSDiff, tc.diff)
			}
		})
	}
}

func TestAgreementOfFailures(t *testing.T) {
	failing := measured(1000, time.Millisecond, 20)
	failing.Load.OK = 90
	if v := (AccuracyRow{Rounds: []AccuracyRound{{failing, measured(1000, time.Millisecond, 20)}}, ClientCPUs: 1}).Agreement().Verdict; v != Failing {
		t.Errorf("failed calls: verdict %q", v)
	}
	if v := (AccuracyRow{Failure: "readiness failed"}).Agreement().Verdict; v != NotMeasured {
		t.Errorf("server down: verdict %q", v)
	}
}

func TestAccuracyTableCountsVerdicts(t *testing.T) {
	ms := time.Millisecond
	rows := []AccuracyRow{
		{Server: "a", Profile: "1a", Reference: "h2load", ClientCPUs: 1, Rounds: []AccuracyRound{{measured(1000, ms, 20), measured(1010, ms, 30)}}},
		{Server: "a", Profile: "2b", ClientCPUs: 1, Rounds: []AccuracyRound{{measured(1200, ms, 20), measured(1000, ms, 30)}}},
		{Server: "b", Profile: "1a", ClientCPUs: 1, Failure: "build failed: compile error"},
	}
	var b bytes.Buffer
	if err := WriteAccuracyTable(&b, "h2", "req/s", rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"-1.0%", "+20.0%", "! b 1a: build failed: compile error",
		"medians of the rounds): agrees 1, differs 1, not measured 1 of 3\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestAccuracyOrderAlternates(t *testing.T) {
	var got AccuracyRound
	for round, want := range [][]string{{"h2", "ref-h2"}, {"ref-h2", "h2"}, {"h2", "ref-h2"}} {
		sides := accuracyOrder(round, &got, "h2", "h2")
		if sides[0].name != want[0] || sides[1].name != want[1] {
			t.Errorf("round %d runs %s then %s, want %v", round+1, sides[0].name, sides[1].name, want)
		}
		for _, side := range sides {
			if side.tool != "h2" || (side.into == &got.Subject) != (side.name == "h2") {
				t.Errorf("round %d: %s runs %s into the wrong measurement", round+1, side.name, side.tool)
			}
		}
	}
}

func TestWriteTableHasARatioPerShape(t *testing.T) {
	row := func(tool, profile string, rps, clientCPU float64) ToolRun {
		return ToolRun{Tool: tool, Profile: profile, Measurement: measured(rps, time.Millisecond, clientCPU)}
	}
	rows := []ToolRun{
		row("h2", "1a", 12000, 60), row("ghz", "1a", 6000, 100), row("h2load", "1a", 14000, 50),
		row("h2", "2b", 60000, 20), row("ghz", "2b", 25000, 100), row("h2load", "2b", 60000, 30),
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rows, "req/s"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"shape 1a:\n", "per-core ratio in 1a: h2/ghz=3.33 h2/h2load=0.71\n",
		"shape 2b:\n", "per-core ratio in 2b: h2/ghz=12.00 h2/h2load=1.50\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := WriteTable(&b, []ToolRun{row("h2", "", 1000, 10), row("ghz", "", 500, 10), row("h2load", "", 1000, 10)}, "req/s"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "\nper-core ratio: h2/ghz=2.00 h2/h2load=1.00\n") || strings.Contains(b.String(), "shape") {
		t.Errorf("the settings' own shape is not printed as before:\n%s", b.String())
	}
}
