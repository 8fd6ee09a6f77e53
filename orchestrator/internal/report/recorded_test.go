package report_test

import (
	"bytes"
	"encoding/csv"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden from the current output")

// recorded is the run recorded in testdata/run: a real run's record, cut
// down to a few servers, with the stats streams of some of their rounds.
func recorded(t *testing.T) record.Run {
	t.Helper()
	return runIn(t, filepath.Join("testdata", "run"))
}

// fixture is a run that package analysis's tests build and keep in its
// testdata/runs: "sweep" (the recorded run swept), "tls" (a cell and its
// TLS twin), "capacity" (a cell of capacity measurements).
func fixture(t *testing.T, name string) record.Run {
	t.Helper()
	return runIn(t, filepath.Join("..", "analysis", "testdata", "runs", name))
}

func runIn(t *testing.T, dir string) record.Run {
	t.Helper()
	run, err := record.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// golden compares got with testdata/golden/name, or rewrites it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	testfiles.Golden(t, filepath.Join("testdata", "golden", name), got, *update)
}

func TestWriteCSVGolden(t *testing.T) {
	var b bytes.Buffer
	if err := report.WriteCSV(&b, analysis.Of(recorded(t))); err != nil {
		t.Fatal(err)
	}
	golden(t, "results.csv", b.String())
	records, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("results.csv does not read back: %v", err)
	}
	if !slices.Equal(records[0], report.CSVColumns) {
		t.Errorf("header = %v, want CSVColumns", records[0])
	}
	for _, r := range records[1:] {
		if len(r) != len(report.CSVColumns) {
			t.Errorf("row %v has %d fields, want %d", r, len(r), len(report.CSVColumns))
		}
	}
}

func TestWriteMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := report.WriteMarkdown(&b, analysis.Of(recorded(t))); err != nil {
		t.Fatal(err)
	}
	golden(t, "results.md", b.String())
}

func TestWriteCSVMatrix(t *testing.T) {
	run := recorded(t)
	second := run.Cells[0]
	second.ServerCPUs, second.Profile, second.Connections, second.Concurrency = 2, "3b", 100, 1000
	run.Cells = append(run.Cells, second)
	var b bytes.Buffer
	if err := report.WriteCSV(&b, analysis.Of(run)); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	perCell := len(run.Cells[0].Servers)
	if len(records) != 1+2*perCell {
		t.Fatalf("%d rows, want a header and %d per cell", len(records), perCell)
	}
	last := records[len(records)-1]
	if last[2] != "2" || last[4] != "3b" || last[5] != "100" {
		t.Errorf("a row of the second cell = %v, want server_cpus 2, profile 3b, 100 connections", last)
	}
}

// TestReportRequestsNothing renders the recorded run and parses the page:
// nothing in it would make a browser fetch (TestReportOpensOffline, under
// the root tag, then opens it in Chromium).
func TestReportRequestsNothing(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "run"), dir)
	if err := report.Render(record.Folder{Dir: dir}, recorded(t)); err != nil {
		t.Fatal(err)
	}
	checkNoResources(t, filepath.Join(dir, "report.html"))
}

// checkNoResources parses the page and fails on anything that would make
// a browser fetch: scripts, links, images, frames, a src or href that is
// not a fragment, url() or @import in CSS, and any http(s) address in an
// attribute but the SVG namespace names.
func checkNoResources(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "link", "img", "iframe", "object", "embed", "audio", "video", "source", "image", "use", "base":
				t.Errorf("the page has a <%s> element", n.Data)
			case "style":
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					if strings.Contains(c.Data, "url(") || strings.Contains(c.Data, "@import") {
						t.Errorf("the page's CSS refers to a resource: %s", c.Data)
					}
				}
			}
			for _, a := range n.Attr {
				key := strings.ToLower(a.Key)
				switch {
				case a.Namespace == "xmlns" || key == "xmlns":
					continue
				case key == "src" || key == "srcset" || key == "action" || key == "poster" ||
					(key == "href" && !strings.HasPrefix(a.Val, "#")):
					t.Errorf("<%s %s=%q> refers to a resource", n.Data, a.Key, a.Val)
				case strings.Contains(a.Val, "http://") || strings.Contains(a.Val, "https://") || strings.Contains(a.Val, "url("):
					t.Errorf("<%s %s=%q> holds an address", n.Data, a.Key, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(to, rel))
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWritersLeaveTheRunAlone renders every file of the recorded run, and
// its hardware.txt, into a folder holding its stats streams: the run the
// writers were given is the run read, field for field.
func TestWritersLeaveTheRunAlone(t *testing.T) {
	run, want := recorded(t), recorded(t)
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "run"), dir)
	f := record.Folder{Dir: dir}
	if err := report.Render(f, run); err != nil {
		t.Fatal(err)
	}
	if err := report.SaveHardware(f, run); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(run, want) {
		t.Errorf("the writers changed the run:\n got %+v\nwant %+v", run, want)
	}
}
