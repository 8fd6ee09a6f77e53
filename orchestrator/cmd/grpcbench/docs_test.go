package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/build"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// repoRoot is the repository, from this package's folder.
const repoRoot = "../../.."

// printedSettings runs `grpcbench env` and returns its text and the
// settings it prints, name to default, in order.
func printedSettings(t *testing.T) (string, []string, map[string]string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"env"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("grpcbench env exited %d: %s", code, stderr.String())
	}
	var names []string
	defaults := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^#(GRPC_[A-Z0-9_]+)=(.*)$`).FindAllStringSubmatch(stdout.String(), -1) {
		names = append(names, m[1])
		defaults[m[1]] = m[2]
	}
	if len(names) == 0 {
		t.Fatalf("grpcbench env printed no setting:\n%s", stdout.String())
	}
	return stdout.String(), names, defaults
}

// TestEnvExampleIsWhatEnvPrints: .env.example is `grpcbench env`'s output,
// byte for byte, so it lists every setting with its default and meaning.
func TestEnvExampleIsWhatEnvPrints(t *testing.T) {
	printed, _, _ := printedSettings(t)
	file := testfiles.Read(t, filepath.Join(repoRoot, ".env.example"))
	if file != printed {
		t.Errorf(".env.example differs from `grpcbench env`; rewrite it with `./bin/grpcbench env > .env.example`.\n.env.example:\n%s\ngrpcbench env:\n%s", file, printed)
	}
}

// TestReadmeSettingsTable: README's settings table names exactly the
// settings `grpcbench env` prints, each once, and a default written as
// code is the one printed; a setting without a default is described in
// words, not given one.
func TestReadmeSettingsTable(t *testing.T) {
	_, names, defaults := printedSettings(t)
	rows := settingsRows(t, testfiles.Read(t, filepath.Join(repoRoot, "README.md")))
	var listed []string
	for _, r := range rows {
		def, ok := defaults[r.name]
		switch {
		case !ok:
			t.Errorf("README's settings table has %s, which grpcbench env does not print", r.name)
		case def != "" && r.def != "`"+def+"`":
			t.Errorf("README gives %s the default %s, grpcbench env `%s`", r.name, r.def, def)
		case def == "" && regexp.MustCompile("^`[^`]*`$").MatchString(r.def):
			t.Errorf("README gives %s the default %s, grpcbench env none", r.name, r.def)
		}
		if slices.Contains(listed, r.name) {
			t.Errorf("README's settings table has %s twice", r.name)
		}
		listed = append(listed, r.name)
	}
	for _, n := range names {
		if !slices.Contains(listed, n) {
			t.Errorf("README's settings table lacks %s", n)
		}
	}
}

type settingRow struct{ name, def string }

// settingsRows reads the table under README's `| variable | default |`
// header: its first column names one setting in backticks.
func settingsRows(t *testing.T, readme string) []settingRow {
	t.Helper()
	_, table, found := strings.Cut(readme, "\n| variable | default | meaning |\n|---|---|---|\n")
	if !found {
		t.Fatal("README has no settings table (| variable | default | meaning |)")
	}
	var rows []settingRow
	for line := range strings.Lines(table) {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		name := strings.TrimSpace(cells[0])
		if len(cells) < 3 || !regexp.MustCompile("^`GRPC_[A-Z0-9_]+`$").MatchString(name) {
			t.Errorf("a row of README's settings table does not name one setting in its first column: %s", line)
			continue
		}
		rows = append(rows, settingRow{strings.Trim(name, "`"), strings.TrimSpace(cells[1])})
	}
	return rows
}

// TestDocLinksResolve: every relative link of README.md, docs/ and the
// scenarios' and servers' READMEs names a file of the repository, and a #fragment a
// heading of the page it points to.
func TestDocLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range docPages(t) {
		rel, _ := filepath.Rel(repoRoot, page)
		for _, m := range link.FindAllStringSubmatch(testfiles.Read(t, page), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, fragment, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s links to %s, which does not exist", rel, target)
					continue
				}
			}
			if fragment != "" && !slices.Contains(anchors(t, dest), fragment) {
				t.Errorf("%s links to %s, which has no heading #%s", rel, target, fragment)
			}
		}
	}
}

// anchors are the fragments GitHub gives a Markdown page's headings: lower
// case, punctuation dropped, spaces as hyphens.
func anchors(t *testing.T, page string) []string {
	t.Helper()
	var out []string
	inCode := false
	for line := range strings.Lines(testfiles.Read(t, page)) {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		slug := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				return r
			}
			return -1
		}, title)
		out = append(out, slug)
	}
	return out
}

// TestServerReadmesSayStackVersionsThreads: each server's README names the
// server and has the lines a reader looks for, as docs/adding-a-server.md
// asks of a new one.
func TestServerReadmesSayStackVersionsThreads(t *testing.T) {
	readmes, err := filepath.Glob(filepath.Join(repoRoot, "servers", "*", "README.md"))
	if err != nil || len(readmes) == 0 {
		t.Fatalf("no server README (%v)", err)
	}
	for _, p := range readmes {
		text := testfiles.Read(t, p)
		name := filepath.Base(filepath.Dir(p))
		for _, want := range []string{"# " + name + "\n", "\n- **Stack**: ", "\n- **Versions**: ", "\n- **Threads**: "} {
			if !strings.Contains(text, want) {
				t.Errorf("servers/%s/README.md lacks %q", name, want)
			}
		}
	}
}

// TestPackageLayers: docs/architecture.md's table of layers names every
// package once, each package imports only its own layer or lower ones, and
// an implementation (layer 3) is imported by main alone, so the rest of
// the code sees only the interfaces.
func TestPackageLayers(t *testing.T) {
	layer, implementations := docLayers(t)
	pkgs := packageImports(t)
	for pkg, imports := range pkgs {
		l, ok := layer[pkg]
		if !ok {
			t.Errorf("package %s is in no layer of docs/architecture.md", pkg)
			continue
		}
		for _, imp := range imports {
			switch {
			case layer[imp] > l:
				t.Errorf("%s (layer %d) imports %s (layer %d), a higher layer", pkg, l, imp, layer[imp])
			case slices.Contains(implementations, imp) && pkg != "cmd/grpcbench":
				t.Errorf("%s imports the implementation %s, which only main links in", pkg, imp)
			}
		}
	}
	for pkg := range layer {
		if _, ok := pkgs[pkg]; !ok {
			t.Errorf("docs/architecture.md names %s, which is no package", pkg)
		}
	}
}

// TestNoKeyCallsALoadToolAnEngine: a load tool is a "tool" and a host a
// "host" in every key of every JSON document and in every container
// label the code writes; "engine" is the Docker engine's word only, in
// prose. The JSON tags and labels of every non-test source are read.
func TestNoKeyCallsALoadToolAnEngine(t *testing.T) {
	tag := regexp.MustCompile(`json:"([^"]*)"`)
	label := regexp.MustCompile(`"(io\.grpcbench\.[a-z._]+)"`)
	root := filepath.Join(repoRoot, "orchestrator")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src := testfiles.Read(t, path)
		for _, re := range []*regexp.Regexp{tag, label} {
			for _, m := range re.FindAllStringSubmatch(src, -1) {
				if strings.Contains(m[1], "engine") {
					t.Errorf("%s: %q says engine", strings.TrimPrefix(path, repoRoot+"/"), m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var architecturePage = filepath.Join(repoRoot, "docs", "architecture.md")

// docLayers reads docs/architecture.md's table of layers: each package's
// layer, and the packages of the implementations' layer.
func docLayers(t *testing.T) (map[string]int, []string) {
	t.Helper()
	layer := map[string]int{}
	var implementations []string
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) ([a-z' ]+) \| (.+) \|$`).FindAllStringSubmatch(testfiles.Read(t, architecturePage), -1) {
		n, _ := strconv.Atoi(m[1])
		for _, pkg := range strings.Fields(strings.ReplaceAll(m[3], "`", "")) {
			if _, dup := layer[pkg]; dup {
				t.Errorf("docs/architecture.md names %s twice", pkg)
			}
			layer[pkg] = n
			if strings.TrimSpace(m[2]) == "implementations" {
				implementations = append(implementations, pkg)
			}
		}
	}
	if len(layer) == 0 || len(implementations) == 0 {
		t.Fatal("docs/architecture.md has no table of layers with implementations")
	}
	return layer, implementations
}

// packageImports is what `go list` says of the orchestrator's packages:
// each one (named without orchestrator/ and internal/) to the packages of
// the module its non-test files import, in order.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	const module = "github.com/grpcbench/grpcbench/orchestrator/"
	pkgs := map[string][]string{}
	root := filepath.Join(repoRoot, "orchestrator")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || !d.IsDir():
			return err
		case d.Name() == "testdata" || path == filepath.Join(root, "e2e"):
			return filepath.SkipDir // test servers and the e2e tests are no layer
		}
		p, err := build.ImportDir(path, 0)
		var none *build.NoGoError
		if errors.As(err, &none) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		name := strings.TrimPrefix(filepath.ToSlash(rel), "internal/")
		imports := []string{}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				imports = append(imports, strings.TrimPrefix(strings.TrimPrefix(imp, module), "internal/"))
			}
		}
		slices.Sort(imports)
		pkgs[name] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

var update = flag.Bool("update", false, "rewrite docs/architecture.md's import listing from the code")

// importListingIntro is the line of docs/architecture.md whose code block
// is the import listing.
const importListingIntro = "The import lines, from the non-test files"

// TestArchitectureImports: docs/architecture.md's listing of the import
// lines is the code's, as `go list` gives them; -update rewrites it.
func TestArchitectureImports(t *testing.T) {
	layer, _ := docLayers(t)
	want := importListing(packageImports(t), layer)
	page := testfiles.Read(t, architecturePage)
	start, end := codeBlockAfter(t, page, importListingIntro)
	if got := page[start:end]; got != want {
		if *update {
			testfiles.Write(t, architecturePage, page[:start]+want+page[end:])
			return
		}
		t.Errorf("docs/architecture.md's import listing is not the code's; rewrite it with "+
			"`go test ./orchestrator/cmd/grpcbench -run TestArchitectureImports -update`.\n%s", lineDiff(got, want))
	}
}

// importListing writes the import lines one line per set of imports,
// highest layer first: the packages that import exactly that set, then
// the set, wrapped under it.
func importListing(pkgs map[string][]string, layer map[string]int) string {
	names := slices.Collect(maps.Keys(pkgs))
	slices.SortFunc(names, func(a, b string) int {
		if layer[a] != layer[b] {
			return layer[b] - layer[a]
		}
		return strings.Compare(a, b)
	})
	var keys []string
	importers := map[string][]string{}
	for _, n := range names {
		key := strings.Join(pkgs[n], " ")
		if key == "" {
			key = "(nothing)"
		}
		if _, seen := importers[key]; !seen {
			keys = append(keys, key)
		}
		importers[key] = append(importers[key], n)
	}
	// The set of no imports comes last, whatever its layers.
	if i := slices.Index(keys, "(nothing)"); i >= 0 {
		keys = append(slices.Delete(keys, i, i+1), "(nothing)")
	}
	column := 0
	for _, n := range names {
		column = max(column, len(n)+2)
	}
	const width = 96
	var b strings.Builder
	for _, key := range keys {
		left := strings.Join(slices.Sorted(slices.Values(importers[key])), " ")
		indent := max(column, len(left)+2)
		line := left + strings.Repeat(" ", indent-len(left))
		for i, imp := range strings.Fields(key) {
			if i > 0 && len(line)+1+len(imp) > width {
				b.WriteString(strings.TrimRight(line, " ") + "\n")
				line = strings.Repeat(" ", indent)
			} else if i > 0 {
				line += " "
			}
			line += imp
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// codeBlockAfter finds the first ``` block after the line that starts with
// intro: the offsets of its text, between the fences.
func codeBlockAfter(t *testing.T, page, intro string) (start, end int) {
	t.Helper()
	at := strings.Index(page, "\n"+intro)
	if at < 0 {
		t.Fatalf("docs/architecture.md has no line %q", intro)
	}
	open := strings.Index(page[at:], "\n```\n")
	if open < 0 {
		t.Fatalf("docs/architecture.md has no code block after %q", intro)
	}
	start = at + open + len("\n```\n")
	closing := strings.Index(page[start:], "```\n")
	if closing < 0 {
		t.Fatalf("docs/architecture.md's code block after %q does not end", intro)
	}
	return start, start + closing
}

// lineDiff names the lines only one of two texts has.
func lineDiff(got, want string) string {
	var b strings.Builder
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
	for _, l := range gotLines {
		if !slices.Contains(wantLines, l) {
			fmt.Fprintf(&b, "- the page: %s\n", l)
		}
	}
	for _, l := range wantLines {
		if !slices.Contains(gotLines, l) {
			fmt.Fprintf(&b, "+ the code: %s\n", l)
		}
	}
	return b.String()
}

// docPages are the pages a reader reads: the README, docs/, the scenarios'
// and the servers' READMEs.
func docPages(t *testing.T) []string {
	t.Helper()
	var pages []string
	for _, pattern := range []string{"README.md", "docs/*.md", "scenarios/README.md", "servers/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, m...)
	}
	return pages
}

// TestDocsCiteNoStops: no page dates a measurement by the project's
// "stop" it was made in, which means nothing to a reader; the date and
// the command do.
func TestDocsCiteNoStops(t *testing.T) {
	stop := regexp.MustCompile(`(?i)\bstops? \d+`)
	for _, page := range docPages(t) {
		rel, _ := filepath.Rel(repoRoot, page)
		n := 0
		for line := range strings.Lines(testfiles.Read(t, page)) {
			n++
			if m := stop.FindString(line); m != "" {
				t.Errorf("%s:%d says %q: a reader cannot tell when that was; give the measurement's date and command", rel, n, m)
			}
		}
	}
}

// TestReadmeMatchesTheCatalog: the README's table of scenarios names the
// folders of scenarios/, its table of servers every server of the catalog
// (variants included, as `grpcbench bench` lists them), each once, and its
// count of servers is the catalog's.
func TestReadmeMatchesTheCatalog(t *testing.T) {
	cat, err := catalog.Open(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	readme := testfiles.Read(t, filepath.Join(repoRoot, "README.md"))
	sameNames(t, "README's scenario table", "the folders of scenarios/",
		tableNames(t, readme, "| scenario | call | request |", 1), cat.Scenarios)
	sameNames(t, "README's server table", "the catalog's servers",
		tableNames(t, readme, "| stack | servers |", 2), cat.Servers)
	folders := cat.Bases(cat.Servers)
	want := fmt.Sprintf("%d servers: %d folders of `servers/` and %d variants", len(cat.Servers), len(folders), len(cat.Servers)-len(folders))
	counts := regexp.MustCompile("\\d+ servers: \\d+ folders of `servers/` and \\d+ variants").FindAllString(readme, -1)
	switch {
	case len(counts) != 1:
		t.Errorf("README counts the servers %d times, want once: %q", len(counts), want)
	case counts[0] != want:
		t.Errorf("README says %q, the catalog has %q", counts[0], want)
	}
}

// tableNames lists the names in backticks in a column (1 the first) of
// the table under header.
func tableNames(t *testing.T, page, header string, column int) []string {
	t.Helper()
	_, table, found := strings.Cut(page, "\n"+header+"\n")
	if !found {
		t.Fatalf("README has no table %s", header)
	}
	var names []string
	for i, line := range slices.Collect(strings.Lines(table)) {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if i == 0 || len(cells) < column+2 {
			continue // the separator row
		}
		for _, m := range regexp.MustCompile("`([A-Za-z0-9_]+)`").FindAllStringSubmatch(cells[column], -1) {
			names = append(names, m[1])
		}
	}
	return names
}

// sameNames reports the names only one of listed and want holds, and
// those listed twice.
func sameNames(t *testing.T, what, against string, listed, want []string) {
	t.Helper()
	for i, n := range listed {
		if !slices.Contains(want, n) {
			t.Errorf("%s names %s, which is not one of %s", what, n, against)
		}
		if slices.Contains(listed[:i], n) {
			t.Errorf("%s names %s twice", what, n)
		}
	}
	for _, n := range want {
		if !slices.Contains(listed, n) {
			t.Errorf("%s lacks %s, one of %s", what, n, against)
		}
	}
}
