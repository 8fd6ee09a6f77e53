package report_test

import (
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// TestBenchShowsTheTLSCost: bench.txt ends with the TLS cost section,
// naming the server left out; a run without a TLS twin has none.
func TestBenchShowsTheTLSCost(t *testing.T) {
	bench := writeBench(t, fixture(t, "tls"))
	i := strings.Index(bench, "== TLS cost: ")
	if i < 0 || i < strings.LastIndex(bench, "Benchmark Execution Parameters:") {
		t.Fatalf("no TLS cost section after the cells:\n%s", bench)
	}
	section := bench[i:]
	for _, want := range []string{"| a ", "|  0.800 |", "|  1.250 |", stats.PairedT, "not compared (not ranked in both cells): b"} {
		if !strings.Contains(section, want) {
			t.Errorf("TLS section lacks %q:\n%s", want, section)
		}
	}
	if strings.Contains(writeBench(t, seedRun()), "TLS cost") {
		t.Error("a run without TLS cells has a TLS cost section")
	}
}

// TestReportShowsTheTLSCost: report.html has the TLS cost table, with
// req/s per core beside CPU per call.
func TestReportShowsTheTLSCost(t *testing.T) {
	var b strings.Builder
	if err := writeHTML(&b, fixture(t, "tls"), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	i := strings.Index(page, `<section class="cell" id="tls">`)
	if i < 0 {
		t.Fatalf("no TLS section in report.html")
	}
	section := page[i:]
	for _, want := range []string{"What TLS costs", `<td class="name">a</td><td>10100</td><td>8080</td><td>0.800</td>`, "req/s per core off", "not compared (not ranked in both cells): b"} {
		if !strings.Contains(section, want) {
			t.Errorf("TLS section lacks %q", want)
		}
	}
}
