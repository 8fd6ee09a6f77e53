//go:build e2e

package e2e_test

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileTextStaysInItsPlace checks every output of a run in which the
// hostile_text server answered with escapes, line breaks, a forged table
// row, HTML and a formula: the terminal and the text files show them as
// text on the reason's own line, results.md keeps them inside one list
// item, results.csv inside one cell, and report.html escaped.
func hostileTextStaysInItsPlace(t *testing.T, dir string, res runResult) {
	t.Helper()
	outputs := map[string]string{"stdout": res.stdout, "stderr": res.stderr}
	for _, name := range []string{"bench.txt", "summary.txt", "results.md", "results.csv", "report.html"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		outputs[name] = string(b)
	}
	for name, out := range outputs {
		if strings.ContainsAny(out, "\x1b\x07\r") {
			t.Errorf("%s holds the server's control characters", name)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "fake_server") && !strings.Contains(line, "pwned") {
				t.Errorf("%s: the server's text made a line of its own: %q", name, line)
			}
		}
	}
	if !strings.Contains(outputs["stdout"], `\x1b]0;pwned\a\x1b[2J\n| fake_server |`) {
		t.Errorf("the terminal does not show the server's text escaped:\n%s", outputs["stdout"])
	}
	if md := outputs["results.md"]; strings.Contains(md, "<script>") || !strings.Contains(md, `\<script\>`) {
		t.Errorf("results.md does not escape the server's HTML:\n%s", md)
	}
	records, err := csv.NewReader(strings.NewReader(outputs["results.csv"])).ReadAll()
	if err != nil {
		t.Fatalf("results.csv does not read back: %v", err)
	}
	found := false
	for _, r := range records {
		for _, cell := range r {
			found = found || strings.Contains(cell, "pwned")
			if strings.Contains(cell, "fake_server") && !strings.Contains(cell, "pwned") {
				t.Errorf("results.csv: the server's text made a cell of its own: %q", r)
			}
		}
	}
	if !found {
		t.Error("results.csv does not give the reason")
	}
	if page := outputs["report.html"]; strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;") {
		t.Error("report.html does not escape the server's HTML")
	}
}
