package report_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

// TestLegacyRunRenders ranks and renders a run of the older layout, as
// record.Load reads it from the record package's test data: an old folder
// still renders, saying which stats are missing.
func TestLegacyRunRenders(t *testing.T) {
	dir := filepath.Join("..", "record", "testdata", "legacy")
	run, err := record.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(analysis.LoadRanking(run.Cells[0])); !slices.Equal(got, []string{"go_grpc", "python_grpc"}) {
		t.Errorf("ranking = %v", got)
	}
	var b bytes.Buffer
	if err := writeHTML(&b, run, dir); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"go_grpc", "python_grpc", "java_grpc", "No stats for round 1: no samples file", "build failed: exit status 1"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report.html of the old run lacks %q", s)
		}
	}
}

// TestEveryFileSaysWhatEachServerRan: the library and version each server
// declared is in bench.txt (a ! line, seed 001's columns kept), summary.txt
// and report.html, for ranked servers and the others; a run recorded
// before servers declared them renders without.
func TestEveryFileSaysWhatEachServerRan(t *testing.T) {
	run, err := record.Load(filepath.Join("testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	bench, summary, page := render(t, run, filepath.Join("testdata", "run"))
	if want := "! libraries: go_grpc grpc-go 1.85.0 (Go); cpp_grpc_mt gRPC C++ 1.51.1 (C++); python_grpc grpcio 1.85.1 (Python); " +
		"node_grpcjs_st @grpc/grpc-js 1.14.7 (Node.js); java_grpc grpc-java 1.85.1 (Java); rust_grpcio grpcio 0.13.0 on gRPC C core 1.56.2 (Rust)\n" +
		"Benchmark Execution Parameters:"; !strings.Contains(bench, want) {
		t.Errorf("bench.txt lacks\n%s\n%s", want, bench)
	}
	if !regexp.MustCompile(`(?m)^ +b +python_grpc +Python +grpcio 1\.85\.1 +ghz +3120 `).MatchString(summary) {
		t.Errorf("summary.txt's row of python_grpc does not say grpcio 1.85.1:\n%s", summary)
	}
	if want := `<td class="name">go_grpc</td><td class="text" title="Go">grpc-go 1.85.0</td>`; strings.Count(page, want) != 2 {
		t.Errorf("report.html's two rankings do not both say go_grpc's library %q", want)
	}

	legacy := filepath.Join("..", "record", "testdata", "legacy")
	if run, err = record.Load(legacy); err != nil {
		t.Fatal(err)
	}
	bench, summary, page = render(t, run, legacy)
	if strings.Contains(bench, "libraries:") || !regexp.MustCompile(`(?m)^ +\S* +go_grpc +- +- +`).MatchString(summary) ||
		!strings.Contains(page, `<td class="name">go_grpc</td><td class="text" title="-">-</td>`) {
		t.Errorf("a run without libraries recorded:\n%s\n%s", bench, summary)
	}
}

// render writes a run's bench.txt, summary.txt and report.html.
func render(t *testing.T, run record.Run, dir string) (bench, summary, page string) {
	t.Helper()
	var b, s, p bytes.Buffer
	if err := report.WriteBench(&b, analysis.Of(run)); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteSummary(&s, analysis.Of(run)); err != nil {
		t.Fatal(err)
	}
	if err := writeHTML(&p, run, dir); err != nil {
		t.Fatal(err)
	}
	return b.String(), s.String(), p.String()
}

// svgSize reads the width and height, in points, of the SVG elements of a
// page, in order.
var svgSize = regexp.MustCompile(`<svg role="img" aria-label="([^"]*)" width="([0-9.]+)pt" height="([0-9.]+)pt"`)

func TestWriteHTMLGrowsWithServers(t *testing.T) {
	heights := map[int]float64{}
	for _, n := range []int{4, 20} {
		var servers []record.Server
		for i := range n {
			r := seedRows[i%len(seedRows)]
			r.name = fmt.Sprintf("%s_with_a_rather_long_name_%02d", r.name, i)
			servers = append(servers, r.server())
		}
		var b bytes.Buffer
		if err := writeHTML(&b, runOf(servers...), t.TempDir()); err != nil {
			t.Fatal(err)
		}
		m := svgSize.FindStringSubmatch(b.String())
		if m == nil || !strings.HasPrefix(m[1], "req/s per server") {
			t.Fatalf("no req/s chart first in the page of %d servers", n)
		}
		heights[n], _ = strconv.ParseFloat(m[3], 64)
		for _, s := range servers {
			if !strings.Contains(b.String(), ">"+s.Name+"</text>") {
				t.Errorf("%d servers: the name %s is not drawn whole in a chart", n, s.Name)
			}
		}
	}
	if heights[20] < heights[4]+16*12 {
		t.Errorf("the req/s chart is %.0f pt high for 4 servers and %.0f pt for 20: it must grow by a row per server", heights[4], heights[20])
	}
}

func TestWriteHTMLMatrix(t *testing.T) {
	run, err := record.Load(filepath.Join("testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	second := run.Cells[0]
	second.ServerCPUs, second.Profile, second.Connections, second.Concurrency = 2, "3b", 100, 1000
	run.Cells = append(run.Cells, second)
	var b bytes.Buffer
	if err := writeHTML(&b, run, filepath.Join("testdata", "run")); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, s := range []string{
		`<section class="cell" id="cell-1">`, `<section class="cell" id="cell-2">`, `<a href="#cell-2">`,
		"complex_proto, server 2 CPU, client 1 CPU, shape 3b (100×1000)",
		// A matrix run keeps each cell's rounds in a folder of its own.
		"No stats for rounds 1, 2, 3: no samples file (go_grpc/complex_proto_cpu2_3b/round-N/load-server-samples.jsonl)",
	} {
		if !strings.Contains(page, s) {
			t.Errorf("the page of two cells lacks %q", s)
		}
	}
	if n := strings.Count(page, `data-chart="rps"`); n != 2 {
		t.Errorf("%d req/s charts, want one per cell", n)
	}
}

func TestServerWithoutStats(t *testing.T) {
	run, err := record.Load(filepath.Join("testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range run.Cells[0].Servers {
		if s.Name == "python_grpc" {
			for j := range s.Rounds {
				run.Cells[0].Servers[i].Rounds[j].Server = record.Usage{}
			}
		}
	}
	var csvOut, md, page bytes.Buffer
	if err := report.WriteCSV(&csvOut, analysis.Of(run)); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteMarkdown(&md, analysis.Of(run)); err != nil {
		t.Fatal(err)
	}
	if err := writeHTML(&page, run, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records[1:] {
		if r[slices.Index(report.CSVColumns, "server")] != "python_grpc" {
			continue
		}
		for _, col := range []string{"server_cpu_percent", "rps_per_server_core", "memory_mib", "server_throttled"} {
			if v := r[slices.Index(report.CSVColumns, col)]; v != "" {
				t.Errorf("python_grpc had no server stats, yet %s = %q", col, v)
			}
		}
	}
	if !strings.Contains(md.String(), "| b | python_grpc | Python | grpcio 1.85.1 | ghz | 3120 | 3088–3161 (min–max, 75%) | 1.2% | n/a | n/a |") {
		t.Errorf("results.md does not show python_grpc's CPU as n/a:\n%s", md.String())
	}
	perCore := page.String()[strings.Index(page.String(), `data-chart="per-core"`):]
	perCore = perCore[:strings.Index(perCore, "</figure>")]
	if strings.Contains(perCore, "python_grpc") {
		t.Error("the req/s per core chart has a bar for python_grpc, which had no CPU reading")
	}
}

func TestWriteHTMLTwoMachines(t *testing.T) {
	run := recorded(t)
	client := run.Hardware
	client.CPUModel, client.CPUs = "AMD EPYC 9654", 96
	rtt := 180 * time.Microsecond
	run.ClientHardware, run.RoundTrip = &client, &rtt
	var md bytes.Buffer
	if err := report.WriteMarkdown(&md, analysis.Of(run)); err != nil {
		t.Fatal(err)
	}
	if want := "Servers' machine: AMD EPYC 7B13, 2 cores, 24.0 GiB, Docker 20.10.24+dfsg1  \nClients' machine: AMD EPYC 9654, 96 cores"; !strings.Contains(md.String(), want) {
		t.Errorf("results.md does not name both machines:\n%s", md.String())
	}
	var b bytes.Buffer
	if err := writeHTML(&b, run, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"servers&#39; machine", "AMD EPYC 7B13, 2 cores", "clients&#39; machine", "AMD EPYC 9654, 96 cores", "round trip between the clients' machine and the servers': 180µs"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the page of a run on two machines lacks %q", s)
		}
	}
}

// writeHTML writes report.html of run, whose rounds' samples are in dir.
func writeHTML(w io.Writer, run record.Run, dir string) error {
	run.Dir = dir
	return report.WriteHTML(w, analysis.Of(run))
}

// TestWriteHTMLSaysWhereRoundsRan: rounds whose host read back other cores
// than the cell's placement (Kubernetes' CPU manager picks them) are said
// beside it, with how many; rounds on the placement's cores are not.
func TestWriteHTMLSaysWhereRoundsRan(t *testing.T) {
	run := seedRun()
	c := &run.Cells[0]
	c.Placement = record.Placement{ServerCPUSet: "0", ClientCPUSet: "1"}
	c.Servers[0].Rounds[0].ServerCPUSet, c.Servers[0].Rounds[0].ClientCPUSet = "1", "0"
	c.Servers[1].Rounds[0].ServerCPUSet, c.Servers[1].Rounds[0].ClientCPUSet = "0", "1"
	var b bytes.Buffer
	if err := writeHTML(&b, run, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	want := "server on CPUs 0, client on CPUs 1; the host ran them elsewhere: server on CPUs 1, client on CPUs 0 in 1 round</td>"
	if !strings.Contains(b.String(), want) {
		t.Errorf("the page does not say where the rounds ran, want %q", want)
	}
}
