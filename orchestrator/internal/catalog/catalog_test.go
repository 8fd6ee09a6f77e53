package catalog

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// TestEveryServerFolderIsComplete keeps a new server folder from skipping
// what every server has: a Dockerfile, a README that says how it is built
// and how it sizes its threads, and a .dockerignore that keeps build
// outputs out of the build context.
func TestEveryServerFolderIsComplete(t *testing.T) {
	cat, err := Open(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Servers) < 15 {
		t.Fatalf("only %d servers found: %v", len(cat.Servers), cat.Servers)
	}
	for _, name := range cat.Servers {
		for _, f := range []string{"Dockerfile", "README.md", ".dockerignore"} {
			if _, err := os.Stat(filepath.Join(cat.ServerDir(name), f)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// TestEveryServerPinsItsVersions keeps a server from building against
// whatever is newest on the day: a lock file, exact versions, commits, or
// Debian packages of a fixed version.
func TestEveryServerPinsItsVersions(t *testing.T) {
	cat, err := Open(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range cat.Servers {
		dir := cat.ServerDir(name)
		pins := 0
		for _, lock := range []string{"go.sum", "Cargo.lock", "package-lock.json"} {
			if _, err := os.Stat(filepath.Join(dir, lock)); err == nil {
				pins++
			}
		}
		reqs, _ := filepath.Glob(filepath.Join(dir, "requirements*.txt"))
		for _, r := range reqs {
			pins++
			for _, line := range lines(t, r) {
				if !strings.Contains(line, "==") && !strings.HasPrefix(line, "-r ") { // -r includes another file, itself checked
					t.Errorf("%s: %s: %q is not an exact version", name, filepath.Base(r), line)
				}
			}
		}
		if pom, err := os.ReadFile(filepath.Join(dir, "pom.xml")); err == nil {
			pins++
			if m := loosePom.Find(pom); m != nil {
				t.Errorf("%s: pom.xml has a version that is not exact: %s", name, m)
			}
		}
		if js, err := os.ReadFile(filepath.Join(dir, "sources.json")); err == nil {
			pins++
			for _, c := range sourceCommit.FindAllSubmatch(js, -1) {
				if !fullCommit.Match(c[1]) {
					t.Errorf("%s: sources.json pins %q, not a full commit", name, c[1])
				}
			}
		}
		dockerfile, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		if pinnedPackage.Match(dockerfile) {
			pins++
		}
		if pins == 0 {
			t.Errorf("%s pins no version: no lock file, exact requirements, pom.xml, sources.json or Debian package=version", name)
		}
	}
}

var (
	// A range, or a version that moves: [1.0,2.0), 1.0-SNAPSHOT, LATEST.
	loosePom      = regexp.MustCompile(`<version>\s*([\[(][^<]*|[^<]*SNAPSHOT|LATEST|RELEASE)\s*</version>`)
	sourceCommit  = regexp.MustCompile(`"commit"\s*:\s*"([^"]*)"`)
	fullCommit    = regexp.MustCompile(`^[0-9a-f]{40}$`)
	pinnedPackage = regexp.MustCompile(`apt-get install[^&]*\s[a-z0-9.+-]+=[0-9]`)
)

// lines are a file's lines that are not blank or comments.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func TestVariantsRunTheirBase(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"servers/jvm/Dockerfile", "servers/other/Dockerfile", "scenarios/s/helloworld.proto"} {
		testfiles.Write(t, filepath.Join(root, f), "")
	}
	testfiles.Write(t, filepath.Join(root, "servers", "jvm", ManifestFile),
		`{"stack": "Java", "library": "grpc-java", "version": "1.85.1", "pinned": {"file": "pom.xml", "name": "io.grpc:grpc-bom"}}`)
	testfiles.Write(t, filepath.Join(root, "servers", "other", ManifestFile), testfiles.Manifest)
	variants := `{"jvm_zgc": {"JAVA_TOOL_OPTIONS": "-XX:+UseZGC", "A": "1"}, "jvm_g1gc": {"JAVA_TOOL_OPTIONS": "-XX:+UseG1GC"}}`
	if err := os.WriteFile(filepath.Join(root, "servers", "jvm", VariantsFile), []byte(variants), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"jvm", "jvm_g1gc", "jvm_zgc", "other"}; !slices.Equal(cat.Servers, want) {
		t.Errorf("servers %v, want %v", cat.Servers, want)
	}
	if cat.Base("jvm_zgc") != "jvm" || cat.Base("other") != "other" || cat.ServerDir("jvm_zgc") != filepath.Join(root, "servers", "jvm") {
		t.Errorf("bases: %s %s %s", cat.Base("jvm_zgc"), cat.Base("other"), cat.ServerDir("jvm_zgc"))
	}
	if m := cat.Manifest("jvm_zgc"); m.Stack != "Java" || m.Name != "grpc-java" || m.Version != "1.85.1" {
		t.Errorf("a variant's manifest: %+v, want its base's", m)
	}
	if env := cat.Env("jvm_zgc"); !slices.Equal(env, []string{"A=1", "JAVA_TOOL_OPTIONS=-XX:+UseZGC"}) || cat.Env("jvm") != nil {
		t.Errorf("env %v, base env %v", env, cat.Env("jvm"))
	}
	// Nor may two servers declare the same variant.
	if err := os.WriteFile(filepath.Join(root, "servers", "other", VariantsFile), []byte(`{"jvm_zgc": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err == nil || !strings.Contains(err.Error(), "the variant jvm_zgc is declared by servers/jvm too") {
		t.Errorf("a variant declared twice: %v", err)
	}
	if err := os.Remove(filepath.Join(root, "servers", "other", VariantsFile)); err != nil {
		t.Fatal(err)
	}
	if got := cat.Bases([]string{"jvm_zgc", "other", "jvm", "jvm_g1gc"}); !slices.Equal(got, []string{"jvm", "other"}) {
		t.Errorf("bases %v", got)
	}
	// A variant may not take a folder's name.
	if err := os.WriteFile(filepath.Join(root, "servers", "jvm", VariantsFile), []byte(`{"other": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err == nil {
		t.Error("a variant named as a server folder was taken")
	}
}

// TestServerWithoutManifestIsRefused: a server folder must say what it is
// built on, and say it completely, or no run starts.
func TestServerWithoutManifestIsRefused(t *testing.T) {
	root := t.TempDir()
	testfiles.Write(t, filepath.Join(root, "servers", "x", "Dockerfile"), "FROM scratch\n")
	testfiles.Write(t, filepath.Join(root, "scenarios", "s", "helloworld.proto"), "")
	manifest := filepath.Join(root, "servers", "x", ManifestFile)
	if _, err := Open(root); err == nil || !strings.Contains(err.Error(), "servers/x/server.json is missing: every server declares its stack, library and version there") {
		t.Errorf("no manifest: %v", err)
	}
	for content, want := range map[string]string{
		`{"library": "a", "version": "1", "pinned": {"unchecked": "why"}}`:                                                "servers/x/server.json: no stack",
		`{"stack": "Go", "library": "a", "pinned": {"unchecked": "why"}}`:                                                 `"library" and "version" are required`,
		`{"stack": "Go", "library": "a", "version": "1", "pinned": {}}`:                                                   `a: "pinned" needs a file and a name, or "unchecked"`,
		`{"stack": "Go", "library": "a", "version": "1", "pinned": {"file": "go.mod"}}`:                                   `a: "pinned" names no library in go.mod`,
		`{"stack": "Go", "library": "a", "version": "1", "pinned": {"unchecked": "why"}, "grpc": {}}`:                     `grpc: "library" and "version" are required`,
		`{"stack": "Go", "library": "a", "version": "1", "pinned": {"unchecked": "why"}, "threads": "2"}`:                 `unknown field "threads"`,
		`{"stack": "Go", "library": "a", "version": "1", "pinned": {"unchecked": "why"}, "unsupported": {"nope": "why"}}`: `unsupported: "nope" is neither a scenario of scenarios/ nor "tls"`,
		`{"stack": "Go", "library": "a", "version": "1", "pinned": {"unchecked": "why"}, "unsupported": {"s": " "}}`:      `unsupported: s gives no reason`,
		`{"stack": "Go", "library": "a", "version": "1", "pinned": {"unchecked": "why"}, "warmup_min": "20"}`:             `warmup_min "20" is not a positive Go duration such as "20s"`,
		`{"stack": "Go", "library": "a", "version": "1", "pinned": {"unchecked": "why"}, "warmup_min": "-1s"}`:            `warmup_min "-1s" is not a positive Go duration`,
	} {
		testfiles.Write(t, manifest, content)
		if _, err := Open(root); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", content, err, want)
		}
	}
	testfiles.Write(t, manifest, testfiles.Manifest)
	cat, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if m := cat.Manifest("x"); m.Stack != "test" || m.Name != "none" || m.Version != "0" || m.GRPC != nil || m.LeastWarmup() != 0 {
		t.Errorf("manifest %+v", m)
	}
	testfiles.Write(t, manifest, `{"stack": "Java", "library": "a", "version": "1", "pinned": {"unchecked": "why"}, "warmup_min": "20s"}`)
	if cat, err = Open(root); err != nil || cat.Manifest("x").LeastWarmup() != 20*time.Second {
		t.Errorf("warmup_min 20s: %v, %v", err, cat.Manifest("x").LeastWarmup())
	}
	testfiles.Write(t, manifest, `{"stack": "Go", "library": "a", "version": "1", "pinned": {"unchecked": "why"}, "unsupported": {"s": "no streams", "tls": "no TLS"}}`)
	if cat, err = Open(root); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scenario string
		tls      bool
		want     string
	}{{"s", false, "no streams"}, {"s", true, "no streams"}, {"u", false, ""}, {"u", true, "TLS: no TLS"}} {
		if got := cat.Unsupported("x", tc.scenario, tc.tls); got != tc.want {
			t.Errorf("Unsupported(x, %s, tls %t) = %q, want %q", tc.scenario, tc.tls, got, tc.want)
		}
	}
}

// TestCommitTellsUncommittedChangesApart: a tree with uncommitted changes
// says so with a hash of them, so that two trees of one commit with other
// changes have other commit lines (a resume compares them).
func TestCommitTellsUncommittedChangesApart(t *testing.T) {
	root := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	testfiles.Write(t, filepath.Join(root, "a.txt"), "one\n")
	git("add", "a.txt")
	git("commit", "-q", "-m", "first")
	c := Catalog{Root: root}
	clean := c.Commit(context.Background())
	testfiles.Write(t, filepath.Join(root, "a.txt"), "two\n")
	one := c.Commit(context.Background())
	testfiles.Write(t, filepath.Join(root, "a.txt"), "three\n")
	other := c.Commit(context.Background())
	if strings.Contains(clean, "uncommitted") || !strings.Contains(one, "(with uncommitted changes ") || one == other ||
		!strings.HasPrefix(one, strings.Fields(clean)[0]) {
		t.Errorf("commit lines: clean %q, changed %q, changed otherwise %q", clean, one, other)
	}
}
