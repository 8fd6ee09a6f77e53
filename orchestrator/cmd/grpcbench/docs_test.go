package main

import (
	"bytes"
	"context"
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

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
// servers' READMEs names a file of the repository, and a #fragment a
// heading of the page it points to.
func TestDocLinksResolve(t *testing.T) {
	var pages []string
	for _, pattern := range []string{"README.md", "docs/*.md", "servers/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, m...)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
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
	const module = "github.com/grpcbench/grpcbench/orchestrator/"
	layer := map[string]int{}
	var implementations []string
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) ([a-z' ]+) \| (.+) \|$`).FindAllStringSubmatch(testfiles.Read(t, filepath.Join(repoRoot, "docs", "architecture.md")), -1) {
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
	pkgs := map[string][]string{} // package to the packages it imports
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
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				pkgs[name] = append(pkgs[name], strings.TrimPrefix(strings.TrimPrefix(imp, module), "internal/"))
			}
		}
		if _, ok := pkgs[name]; !ok {
			pkgs[name] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
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
