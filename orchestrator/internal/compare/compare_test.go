package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// srv is a server measured once per value of rps by ghz (the p99 of a
// server that keeps its calls in flight), with options applied.
func srv(name string, rps []float64, opts ...func(*record.Server)) record.Server {
	s := record.Server{Name: name, ImageID: "sha256:" + name}
	for i, v := range rps {
		s.Rounds = append(s.Rounds, record.Round{Round: i + 1, Measurement: measurement("ghz", v)})
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func measurement(engine string, rps float64) record.Measurement {
	return record.Measurement{
		Load:   &record.Result{Tool: engine, RPS: rps, Requests: 10, OK: 10, Latency: record.Latency{P99: time.Duration(float64(time.Second) * 10 / rps)}},
		Client: record.Usage{Samples: 1, CPUAvgPercent: 50},
		Server: record.Usage{Samples: 1, CPUAvgPercent: 90},
	}
}

// clientBound makes the load tool client-bound in every round.
func clientBound(s *record.Server) {
	for i := range s.Rounds {
		s.Rounds[i].ClientBound = true
		s.Rounds[i].Client.CPUAvgPercent = 99
	}
}

// capacity gives each round a capacity measurement by h2.
func capacity(rps ...float64) func(*record.Server) {
	return func(s *record.Server) {
		for i := range s.Rounds {
			m := measurement("h2", rps[i])
			s.Rounds[i].Capacity = &m
		}
	}
}

func fails(s *record.Server) {
	s.Rounds[len(s.Rounds)-1].Failure = &record.Failure{Phase: "load", Round: len(s.Rounds), Reason: "server exited with code 137"}
}

func run(cpus config.CPUs, servers ...record.Server) record.Run {
	cell := record.Cell{Scenario: "complex_proto", ServerCPUs: float64(cpus), ClientCPUs: 1, Connections: 50, Concurrency: 1000,
		Servers: servers, Settings: []record.Setting{{Name: "GRPC_SERVER_CPUS", Value: cpus.String()}}}
	return record.Run{ID: "x", Cells: []record.Cell{cell}, Hardware: record.Hardware{CPUs: 2, Kernel: "6.1"}}
}

func text(t *testing.T, c Comparison) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func byName(c Comparison, name string) Change {
	for _, cell := range c.Cells {
		for _, ch := range cell.Servers {
			if ch.Server == name {
				return ch
			}
		}
	}
	return Change{}
}

func TestARunAgainstItselfShowsNoChange(t *testing.T) {
	a := run(1, srv("go_grpc", []float64{100, 104, 98}), srv("rust_tonic_st", []float64{200, 190, 210}))
	c := Runs(a, a, DefaultThreshold)
	if len(c.Cells) != 1 || len(c.Cells[0].Servers) != 2 || c.Regressions != 0 || len(c.Settings)+len(c.Hardware) != 0 {
		t.Fatalf("comparison %+v", c)
	}
	for _, ch := range c.Cells[0].Servers {
		if ch.Status != Compared || ch.RPS.Diff.Significant || ch.RPS.Diff.Change != 0 || ch.P99.Diff.Significant || ch.P99.Diff.Change != 0 {
			t.Errorf("%s changed against itself: %+v", ch.Server, ch)
		}
	}
	out := text(t, c)
	if strings.Count(out, "~ (+0.0%)") != 4 || !strings.Contains(out, "fewer than 4 rounds a side") || !strings.Contains(out, "regressions: none") {
		t.Errorf("table:\n%s", out)
	}
}

func TestASignificantChange(t *testing.T) {
	six := []float64{100, 101, 99, 102, 98, 100}
	faster := []float64{150, 152, 149, 151, 148, 150}
	a := run(1, srv("rust_tonic_mt", six))
	b := run(1, srv("rust_tonic_mt", faster))
	c := Runs(a, b, DefaultThreshold)
	ch := byName(c, "rust_tonic_mt")
	if !ch.RPS.Diff.Significant || ch.RPS.Diff.Change != 0.5 || ch.Regression != "" {
		t.Fatalf("change %+v", ch)
	}
	if p99 := ch.P99; !p99.Diff.Significant || math.Abs(p99.Diff.Change-(100.0/150-1)) > 1e-6 || p99.A.Median != float64(100*time.Millisecond) {
		t.Errorf("p99 %+v", p99)
	}
	c.A, c.B = "one", "two"
	out := text(t, c)
	if !strings.Contains(out, "+50.0%") || !strings.Contains(out, "100.00 ms ±2%  66.67 ms ±1%  -33.3%") || strings.Contains(out, "fewer than 4") {
		t.Errorf("table:\n%s", out)
	}
	// Runs of one cell each are compared whatever their settings, and say
	// which differ.
	a.Cells[0].Settings = []record.Setting{{Name: "GRPC_SERVER_CPUS", Value: "1"}, {Name: "GRPC_BENCHMARK_ROUNDS", Value: "6"}, {Name: "GRPC_RESULTS_DIR", Value: "one"}}
	two := run(2, srv("rust_tonic_mt", faster))
	two.Cells[0].Settings = []record.Setting{{Name: "GRPC_SERVER_CPUS", Value: "2"}, {Name: "GRPC_BENCHMARK_ROUNDS", Value: "6"}, {Name: "GRPC_RESULTS_DIR", Value: "two"}}
	got := Runs(a, two, DefaultThreshold)
	if s := got.Cells[0].Settings; len(s) != 1 || s[0] != (ChangedSetting{"GRPC_SERVER_CPUS", "1", "2"}) || !byName(got, "rust_tonic_mt").RPS.Diff.Significant {
		t.Errorf("1 CPU against 2: %+v", got)
	}
	if out := text(t, got); !strings.Contains(out, "settings that differ: GRPC_SERVER_CPUS=1→2\n") {
		t.Errorf("table:\n%s", out)
	}
	// In a matrix, cells of other settings are not compared, but shown.
	a.Cells = append(a.Cells, run(4, srv("rust_tonic_mt", []float64{1})).Cells[0])
	got = Runs(a, two, DefaultThreshold)
	var in []string
	for _, cell := range got.Cells {
		in = append(in, cell.In)
	}
	if !slices.Equal(in, []string{"a", "a", "b"}) {
		t.Errorf("cells of a matrix against a run of other settings: %v, want a's two and b's one, each alone", in)
	}
	if out := text(t, got); strings.Count(out, "only x has this cell (servers: 1), none compared") != 3 {
		t.Errorf("table:\n%s", out)
	}
}

// TestRegressionNeedsTheThresholdAndSignificance: 3 rounds a side whose
// ranges do not overlap are a one-sided p of 0.05; a slowdown counts when
// it is that significant and beyond the threshold. (One server a run: no
// drift is taken out.)
func TestRegressionNeedsTheThresholdAndSignificance(t *testing.T) {
	before := []float64{1000, 1010, 990}
	for _, tc := range []struct {
		name      string
		after     []float64
		regressed bool
	}{
		{"20% slower, ranges apart", []float64{800, 810, 790}, true},
		{"5% slower, ranges apart: within the threshold", []float64{950, 960, 940}, false},
		{"24% slower, ranges overlap: not significant", []float64{700, 1020, 760}, false},
		{"30% faster", []float64{1300, 1310, 1290}, false},
	} {
		c := Runs(run(1, srv("s", before)), run(1, srv("s", tc.after)), DefaultThreshold)
		ch := byName(c, "s")
		if (ch.Regression != "") != tc.regressed || (c.Regressions == 1) != tc.regressed {
			t.Errorf("%s: regression %q (req/s %+.3f, slower p=%.3f), want %v", tc.name, ch.Regression, ch.RPS.Adjusted, ch.RPS.SlowerP, tc.regressed)
		}
		out := text(t, c)
		if tc.regressed && (!strings.Contains(out, "regressions: 1\n- s: slower by more than 10%: req/s -20.0% (p=0.050, one-sided)") || !strings.Contains(out, "  REGRESSION")) {
			t.Errorf("%s: table:\n%s", tc.name, out)
		}
	}
}

// TestDriftIsTakenOut: a machine 15% slower for every server is drift, not
// a regression; one server 25% slower among unchanged ones is.
func TestDriftIsTakenOut(t *testing.T) {
	base := []float64{1000, 1010, 990}
	scaled := func(f float64) []float64 { return []float64{1000 * f, 1010 * f, 990 * f} }
	names := []string{"s1", "s2", "s3", "s4"}
	var a, slowMachine, oneSlow []record.Server
	for i, n := range names {
		a = append(a, srv(n, base))
		slowMachine = append(slowMachine, srv(n, scaled(0.85)))
		if i == 0 {
			oneSlow = append(oneSlow, srv(n, scaled(0.75)))
		} else {
			oneSlow = append(oneSlow, srv(n, base))
		}
	}
	c := Runs(run(1, a...), run(1, slowMachine...), DefaultThreshold)
	if d := c.Cells[0].RPSDrift; d == nil || math.Abs(d.Change+0.15) > 1e-9 || c.Regressions != 0 {
		t.Errorf("a machine 15%% slower: drift %+v, %d regressions, want -15%% and none", d, c.Regressions)
	}
	if out := text(t, c); !strings.Contains(out, "drift of the machine: req/s -15.0% (median shift of 4 servers)") {
		t.Errorf("table:\n%s", out)
	}
	c = Runs(run(1, a...), run(1, oneSlow...), DefaultThreshold)
	if d := c.Cells[0].RPSDrift; d == nil || d.Change != 0 || c.Regressions != 1 || byName(c, "s1").Regression == "" {
		t.Errorf("one server 25%% slower: drift %+v, %d regressions", d, c.Regressions)
	}
	// Two servers are too few to tell drift from change: the threshold
	// alone covers it.
	c = Runs(run(1, a[:2]...), run(1, slowMachine[:2]...), DefaultThreshold)
	if c.Cells[0].RPSDrift != nil || c.Regressions != 2 {
		t.Errorf("two servers 15%% slower: drift %+v, %d regressions, want none and 2", c.Cells[0].RPSDrift, c.Regressions)
	}
}

// TestClientBoundIsJudgedByCapacity: a row client-bound in either run
// measures the load client; it is marked and judged by the capacity
// engine's figures instead.
func TestClientBoundIsJudgedByCapacity(t *testing.T) {
	a := run(1, srv("bound", []float64{20000, 20100, 19900}, clientBound, capacity(80000, 81000, 79000)))
	b := run(1, srv("bound", []float64{20000, 20100, 19900}, capacity(60000, 61000, 59000))) // only a was client-bound
	c := Runs(a, b, DefaultThreshold)
	ch := byName(c, "bound")
	if !slices.Equal(ch.ClientBound, []string{"a"}) || ch.RPS.Judged || !ch.Capacity.Judged || !ch.Capacity.Regressed || c.Regressions != 1 {
		t.Fatalf("change %+v, capacity %+v", ch, ch.Capacity)
	}
	out := text(t, c)
	for _, want := range []string{"client-bound in a, not judged", "capacity req/s", "REGRESSION", "capacity req/s -25.0%"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Without capacity figures a client-bound row is not judged at all.
	c = Runs(run(1, srv("bound", []float64{20000, 20100, 19900}, clientBound)), run(1, srv("bound", []float64{10000, 10100, 9900}, clientBound)), DefaultThreshold)
	if c.Regressions != 0 || byName(c, "bound").Capacity != nil {
		t.Errorf("client-bound in both without capacity: %+v", c)
	}
}

// TestEveryServerAppears: failing, vanished and new servers are changes,
// and one that was ranked and fails now is a regression; images and
// hardware that differ are listed.
func TestEveryServerAppears(t *testing.T) {
	a := run(1, srv("kept", []float64{100, 101, 99}), srv("breaks", []float64{100, 101, 99}),
		srv("gone", []float64{100, 101, 99}), srv("broken", []float64{100}, fails), srv("mended", []float64{100}, fails))
	b := run(1, srv("kept", []float64{100, 101, 99}, func(s *record.Server) { s.ImageID = "sha256:new" }), srv("breaks", []float64{100, 101}, fails),
		srv("broken", []float64{100}, fails), srv("mended", []float64{100, 101, 99}), srv("new", []float64{100, 101, 99}))
	b.Hardware.Kernel = "6.12"
	c := Runs(a, b, DefaultThreshold)
	status := map[string]string{}
	for _, ch := range c.Cells[0].Servers {
		status[ch.Server] = ch.Status
	}
	want := map[string]string{"kept": Compared, "breaks": NowFails, "gone": OnlyInA, "broken": FailsInBoth, "mended": NowRanked, "new": OnlyInB}
	for name, st := range want {
		if status[name] != st {
			t.Errorf("%s: status %q, want %q", name, status[name], st)
		}
	}
	if c.Regressions != 1 || !strings.Contains(byName(c, "breaks").Regression, "round 2, load failed: server exited with code 137") {
		t.Errorf("regressions %d, breaks: %+v", c.Regressions, byName(c, "breaks"))
	}
	if ch := byName(c, "kept"); ch.ImageA != "sha256:kept" || ch.ImageB != "sha256:new" {
		t.Errorf("kept's images: %+v", ch)
	}
	if len(c.Hardware) != 1 || c.Hardware[0] != (ChangedSetting{"kernel", "6.1", "6.12"}) {
		t.Errorf("hardware differences %+v", c.Hardware)
	}
	c.A, c.B = "a", "b"
	out := text(t, c)
	for _, line := range []string{
		"hardware that differs: kernel=6.1→6.12",
		"breaks: ranked in a, fails in b (round 2, load failed: server exited with code 137): REGRESSION",
		"gone: only in a (not run in b)",
		"broken: fails in both (round 1, load failed: server exited with code 137)",
		"mended: failed in a, ranked in b (round 1, load failed: server exited with code 137)",
		"new: new in b",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("no line %q:\n%s", line, out)
		}
	}
	if !strings.Contains(out, "image changed") {
		t.Errorf("kept's new image is not marked:\n%s", out)
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Comparison
	if err := json.Unmarshal(js, &back); err != nil || back.Regressions != 1 || len(back.Cells[0].Servers) != 6 || back.Threshold != DefaultThreshold {
		t.Errorf("JSON %s: %v", js, err)
	}
}

// TestOldSettingNamesCompareAsTheNew: a run recorded when the load tool
// settings had their old names differs from a newer one only in values.
func TestOldSettingNamesCompareAsTheNew(t *testing.T) {
	old := []record.Setting{{Name: "GRPC_LOAD_ENGINE", Value: "ghz"}, {Name: "GRPC_CAPACITY_ENGINE", Value: "h2"}}
	current := []record.Setting{{Name: "GRPC_LOAD_TOOL", Value: "ghz"}, {Name: "GRPC_CAPACITY_TOOL", Value: "off"}}
	got := differences(old, current)
	if len(got) != 1 || got[0] != (ChangedSetting{Name: "GRPC_CAPACITY_TOOL", A: "h2", B: "off"}) {
		t.Errorf("differences = %+v, want only GRPC_CAPACITY_TOOL h2 → off", got)
	}
}

// TestForeignTextIsShownEscaped: names, reasons, settings and hardware of
// records that may be anyone's reach the text escaped, each on its own
// line, and the comparison itself (its JSON) keeps them as they were.
func TestForeignTextIsShownEscaped(t *testing.T) {
	const evil = "evil\x1b]0;pwned\a\x1b[2J\n| forged | 999999 |"
	failing := func(s *record.Server) { fails(s); s.Rounds[len(s.Rounds)-1].Failure.Reason = evil }
	a := run(1, srv(evil, []float64{100, 101, 99}), srv("breaks", []float64{100, 101, 99}))
	b := run(1, srv(evil, []float64{90, 91, 89}), srv("breaks", []float64{100, 101}, failing))
	a.Cells[0].Settings = append(a.Cells[0].Settings, record.Setting{Name: "GRPC_" + evil, Value: evil})
	b.Hardware.Kernel = evil
	c := Runs(a, b, DefaultThreshold)
	c.A = "run\x1b[31m"
	out := text(t, c)
	if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }); i >= 0 {
		t.Errorf("the text holds control character %q: %q", out[i], out[max(0, i-30):min(len(out), i+30)])
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "| forged") {
			t.Errorf("a record's text made a line of its own: %q", line)
		}
	}
	for _, want := range []string{`evil\x1b]0;pwned\a\x1b[2J\n| forged | 999999 |`, `kernel=6.1→evil\x1b]0;pwned`, `run\x1b[31m`} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	if byName(c, evil).Server != evil || c.Hardware[0].B != evil || c.A != "run\x1b[31m" {
		t.Error("printing changed the comparison")
	}
}
