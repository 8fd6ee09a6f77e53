package report_test

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

// A 1a cell, one call in flight on one connection, measures the servers'
// floor latency: its ranking reads as latency, its heading says so and
// p50, p99 and p99.9 come before req/s in summary.txt, results.md and
// report.html; another shape's cell keeps req/s first.
func TestFloorLatencyCellReadsAsLatency(t *testing.T) {
	run, err := record.Load(filepath.Join("testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	floor := run.Cells[0]
	floor.Profile, floor.Connections, floor.Concurrency = "1a", 1, 1
	run.Cells = append(run.Cells, floor)
	var summary, md, page bytes.Buffer
	if err := report.WriteSummary(&summary, analysis.Of(run)); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteMarkdown(&md, analysis.Of(run)); err != nil {
		t.Fatal(err)
	}
	if err := writeHTML(&page, run, filepath.Join("testdata", "run")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []struct {
		name, text, heading string
		header              *regexp.Regexp
	}{
		{"summary.txt", summary.String(), "floor latency, one call in flight", regexp.MustCompile(`group +server .*\n`)},
		{"results.md", md.String(), "**floor latency, one call in flight", regexp.MustCompile(`\| # \| group .*\n`)},
		{"report.html", page.String(), "<h3>Ranking: floor latency, one call in flight", regexp.MustCompile(`<tr><th>#</th>.*\n`)},
	} {
		if n := strings.Count(out.text, out.heading); n != 1 {
			t.Errorf("%s has %d headings %q, want the 1a cell's", out.name, n, out.heading)
		}
		// The first header of all is the other cell's, the first after
		// the heading the 1a cell's load ranking.
		before, after, _ := strings.Cut(out.text, out.heading)
		other, first := out.header.FindString(before), out.header.FindString(after)
		if rps := strings.Index(first, "req/s"); strings.Index(first, "p50") > rps || strings.Index(first, "p99.9") > rps {
			t.Errorf("%s: the 1a cell's header does not put the latencies first: %s", out.name, first)
		}
		if strings.Index(other, "p50") < strings.Index(other, "req/s") {
			t.Errorf("%s: the other cell's header puts the latencies first: %s", out.name, other)
		}
	}
}
