package catalog

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// git runs git in dir, failing the test on an error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAt: the catalog at a ref is that commit's servers and scenarios,
// whatever the working tree has since: a server added later is not in
// it, and a file changed later reads as it was.
func TestAt(t *testing.T) {
	root := t.TempDir()
	git(t, root, "init", "-q")
	manifest := `{"stack": "test", "library": "none", "version": "0", "pinned": {"unchecked": "a test"}}`
	write(t, filepath.Join(root, "servers", "one", "Dockerfile"), "FROM scratch # before\n")
	write(t, filepath.Join(root, "servers", "one", ManifestFile), manifest)
	write(t, filepath.Join(root, "scenarios", "plain", "helloworld.proto"), "syntax = \"proto3\";\n")
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "baseline")
	base := git(t, root, "rev-parse", "HEAD")
	write(t, filepath.Join(root, "servers", "one", "Dockerfile"), "FROM scratch # after\n")
	write(t, filepath.Join(root, "servers", "two", "Dockerfile"), "FROM scratch\n")
	write(t, filepath.Join(root, "servers", "two", ManifestFile), manifest)
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "candidate")

	dir := t.TempDir()
	c, commit, err := At(context.Background(), root, "HEAD~1", dir)
	if err != nil {
		t.Fatal(err)
	}
	if commit != base || c.Root != dir || !slices.Equal(c.Servers, []string{"one"}) || !slices.Equal(c.Scenarios, []string{"plain"}) {
		t.Errorf("at HEAD~1: commit %s (want %s), root %s, servers %v, scenarios %v", commit, base, c.Root, c.Servers, c.Scenarios)
	}
	if b, err := os.ReadFile(filepath.Join(c.ServerDir("one"), "Dockerfile")); err != nil || string(b) != "FROM scratch # before\n" {
		t.Errorf("one's Dockerfile at HEAD~1: %q, %v", b, err)
	}
	if _, _, err := At(context.Background(), root, "no-such-ref", t.TempDir()); err == nil || !strings.Contains(err.Error(), `git ref "no-such-ref"`) {
		t.Errorf("an unknown ref: %v", err)
	}
}
