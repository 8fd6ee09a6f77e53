package report_test

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

// hostile is what a server may put in a grpc-message or its build output:
// terminal escapes (a title change, a screen clear), a bidi override, line
// breaks that forge a ranking row, a Markdown row and list item, HTML, an
// entity for a cell border, and a spreadsheet formula.
const hostile = "=HYPERLINK(\"http://evil\")\x1b]0;pwned\x07\x1b[2J\u202e" +
	"\n| fake_server |   999999 |        0.01 ms | forged row |\r\n" +
	"| 1 | fake_server | h2 | 999999 | forged | md |\n- forged item <script>alert(1)</script> `code` [link](http://evil) &#124; ~~x~~"

// TestServerTextStaysInItsPlace renders a run whose failure reason,
// conformance warning, capacity failure and commit line are hostile: no
// output carries a control character or a forged line, Markdown stays one
// table cell or list item, the CSV stays one cell, and the page stays
// template-escaped.
func TestServerTextStaysInItsPlace(t *testing.T) {
	run := recorded(t)
	run.Commit = hostile // a commit's subject is anyone's text too
	c := &run.Cells[0]
	var failed, warned, capacity bool
	for i := range c.Servers {
		s := &c.Servers[i]
		switch {
		case !failed && s.Failure != nil:
			s.Failure.Reason, failed = hostile, true
		case !capacity && s.Ranked() && s.Rounds[len(s.Rounds)-1].Capacity != nil:
			last := &s.Rounds[len(s.Rounds)-1]
			last.Capacity, last.CapacityFailure, capacity = nil, hostile, true
		case !warned && s.Ranked():
			s.Conformance, warned = &record.Conformance{Passed: true, Warnings: []string{hostile}}, true
		}
	}
	if !failed || !warned || !capacity {
		t.Fatal("the recorded run has no failed, ranked and capacity-measured server to give the text to")
	}
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "run"), dir)
	if err := report.Render(record.Folder{Dir: dir}, run); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, name := range []string{"bench.txt", "summary.txt", "results.md", "results.csv", "report.html"} {
		out := read(name)
		hidden := func(r rune) bool {
			return r < 0x20 && r != '\n' && (r != '\t' || name != "report.html") || r == 0x7f || r == '\u202e' // the SVG is indented with tabs
		}
		if i := strings.IndexFunc(out, hidden); i >= 0 {
			t.Errorf("%s holds control character %q at %d: %q", name, out[i], i, out[max(0, i-40):min(len(out), i+40)])
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "fake_server") && !strings.Contains(line, "pwned") {
				t.Errorf("%s: the server's text made a line of its own: %q", name, line)
			}
		}
	}
	for _, name := range []string{"bench.txt", "summary.txt"} {
		if out := read(name); !strings.Contains(out, `\x1b]0;pwned\a\x1b[2J\u202e\n| fake_server`) {
			t.Errorf("%s does not show the escapes as text:\n%s", name, out)
		}
	}

	md := read("results.md")
	for _, want := range []string{`\<script\>`, "\\`code\\`", `\[link\](http://evil)`, `\&#124;`, `\~\~x\~\~`, `\| fake_server \|`} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks the escaped %s", want)
		}
	}
	if strings.Contains(md, "<script>") {
		t.Error("results.md holds raw HTML")
	}

	records, err := csv.NewReader(strings.NewReader(read("results.csv"))).ReadAll()
	if err != nil {
		t.Fatalf("results.csv does not read back: %v", err)
	}
	if want := 1 + len(c.Servers); len(records) != want {
		t.Errorf("results.csv has %d records, want %d: the text broke out of its cell", len(records), want)
	}
	failure := -1
	for i, col := range report.CSVColumns {
		if col == "failure" {
			failure = i
		}
	}
	for _, r := range records[1:] {
		if f := r[failure]; f != "" && strings.IndexByte("=+-@", f[0]) >= 0 {
			t.Errorf("a failure cell starts a formula: %q", f)
		}
	}

	page := read("report.html")
	if strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;") {
		t.Error("report.html does not escape the server's HTML")
	}
}
