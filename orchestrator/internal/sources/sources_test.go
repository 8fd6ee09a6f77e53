package sources

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// upstream is a real git repository with two commits; first is the older.
type upstream struct {
	dir, first, second string
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@localhost", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func newUpstream(t *testing.T) upstream {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "grpcxx")
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "init", "--quiet")
	write(t, filepath.Join(dir, "src", "lib.h"), "version 1\n")
	write(t, filepath.Join(dir, "build.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(dir, "build.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "add", ".")
	run(t, dir, "commit", "--quiet", "-m", "first")
	run(t, dir, "tag", "v1")
	first := run(t, dir, "rev-parse", "HEAD")
	write(t, filepath.Join(dir, "src", "lib.h"), "version 2\n")
	run(t, dir, "commit", "--quiet", "-am", "second")
	return upstream{dir: dir, first: first, second: run(t, dir, "rev-parse", "HEAD")}
}

// bundle writes the upstream's branches and tags as <mirror>/grpcxx.bundle.
func (u upstream) bundle(t *testing.T) string {
	t.Helper()
	mirror := t.TempDir()
	run(t, u.dir, "bundle", "create", "--quiet", filepath.Join(mirror, "grpcxx.bundle"), "--all")
	return mirror
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// unreachable is a URL that fails at once, as github.com does here.
const unreachable = "file:///nonexistent/uatuko/grpcxx"

func TestCheckoutFromBundleMirror(t *testing.T) {
	u := newUpstream(t)
	f := Fetcher{Cache: t.TempDir(), Mirror: u.bundle(t)}
	dst := filepath.Join(t.TempDir(), "grpcxx")
	var log strings.Builder
	if err := f.Checkout(context.Background(), Source{URL: unreachable, Commit: u.first, Dir: "grpcxx"}, dst, &log); err != nil {
		t.Fatal(err)
	}
	if got := testfiles.Read(t, filepath.Join(dst, "src", "lib.h")); got != "version 1\n" {
		t.Errorf("lib.h = %q: not the pinned commit's", got)
	}
	if info, err := os.Stat(filepath.Join(dst, "build.sh")); err != nil || info.Mode().Perm()&0o100 == 0 {
		t.Errorf("build.sh lost its executable bit: %v, %v", info, err)
	}
	if _, err := os.Stat(filepath.Join(dst, ".git")); err == nil {
		t.Error("the checkout carries a .git")
	}
	if !strings.Contains(log.String(), "grpcxx.bundle") {
		t.Errorf("log does not say the source came from the mirror:\n%s", log.String())
	}
}

func TestCheckoutFromURL(t *testing.T) {
	u := newUpstream(t)
	f := Fetcher{Cache: t.TempDir()}
	dst := filepath.Join(t.TempDir(), "grpcxx")
	if err := f.Checkout(context.Background(), Source{URL: "file://" + u.dir, Commit: u.second, Dir: "grpcxx"}, dst, new(strings.Builder)); err != nil {
		t.Fatal(err)
	}
	if got := testfiles.Read(t, filepath.Join(dst, "src", "lib.h")); got != "version 2\n" {
		t.Errorf("lib.h = %q: not the pinned commit's", got)
	}
}

func TestMissingCommitFailsNamingURLAndCommit(t *testing.T) {
	u := newUpstream(t)
	f := Fetcher{Cache: t.TempDir(), Mirror: u.bundle(t)}
	missing := strings.Repeat("ab", 20)
	err := f.Checkout(context.Background(), Source{URL: unreachable, Commit: missing, Dir: "grpcxx"}, filepath.Join(t.TempDir(), "grpcxx"), new(strings.Builder))
	if err == nil {
		t.Fatal("a commit that no origin has was checked out")
	}
	t.Log(err)
	for _, want := range []string{unreachable, missing, "commit not found", "grpcxx.bundle has no such commit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestNoOriginAndNoMirrorSaysSo(t *testing.T) {
	u := newUpstream(t)
	err := Fetcher{Cache: t.TempDir()}.Checkout(context.Background(), Source{URL: unreachable, Commit: u.first, Dir: "grpcxx"}, filepath.Join(t.TempDir(), "grpcxx"), new(strings.Builder))
	if err == nil || !strings.Contains(err.Error(), "GRPC_SOURCE_MIRROR") || !strings.Contains(err.Error(), u.first) {
		t.Errorf("error %v: want one naming the commit and the unset mirror", err)
	}
}

func TestCorruptBundleFails(t *testing.T) {
	u := newUpstream(t)
	mirror := u.bundle(t)
	path := filepath.Join(mirror, "grpcxx.bundle")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Flip every byte of the pack's second half: objects, then the pack's
	// own checksum.
	for i := len(b) / 2; i < len(b); i++ {
		b[i] ^= 0xff
	}
	write(t, path, string(b))
	f := Fetcher{Cache: t.TempDir(), Mirror: mirror}
	dst := filepath.Join(t.TempDir(), "grpcxx")
	err = f.Checkout(context.Background(), Source{URL: unreachable, Commit: u.first, Dir: "grpcxx"}, dst, new(strings.Builder))
	if err == nil {
		t.Fatal("a corrupt bundle was accepted")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "fetch from "+path+" failed") || !strings.Contains(err.Error(), u.first) {
		t.Errorf("error %q does not name the bundle and the commit", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "src", "lib.h")); err == nil {
		t.Error("files were checked out from a corrupt bundle")
	}
}

// TestCacheHitFetchesNothing proves the second checkout comes from the
// cache alone: by then the mirror is gone and the URL never answered.
func TestCacheHitFetchesNothing(t *testing.T) {
	u := newUpstream(t)
	mirror := u.bundle(t)
	f := Fetcher{Cache: t.TempDir(), Mirror: mirror}
	src := Source{URL: unreachable, Commit: u.first, Dir: "grpcxx"}
	var first strings.Builder
	if err := f.Checkout(context.Background(), src, filepath.Join(t.TempDir(), "grpcxx"), &first); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(mirror); err != nil {
		t.Fatal(err)
	}
	var second strings.Builder
	dst := filepath.Join(t.TempDir(), "grpcxx")
	if err := f.Checkout(context.Background(), src, dst, &second); err != nil {
		t.Fatalf("second checkout, with no origin left: %v", err)
	}
	if got := testfiles.Read(t, filepath.Join(dst, "src", "lib.h")); got != "version 1\n" {
		t.Errorf("lib.h = %q from the cache", got)
	}
	if !strings.Contains(first.String(), "fetched from") || !strings.Contains(second.String(), "from the cache") || strings.Contains(second.String(), "fetched") {
		t.Errorf("logs: first %q, second %q", first.String(), second.String())
	}
	entries, err := os.ReadDir(f.Cache)
	if err != nil || len(entries) != 1 {
		t.Errorf("cache holds %v (%v), want one clone", entries, err)
	}
}

func TestRead(t *testing.T) {
	commit := strings.Repeat("0123456789", 4)
	good := `[{"url": "https://github.com/uatuko/grpcxx", "commit": "` + commit + `", "dir": "grpcxx"}]`
	dir := t.TempDir()
	write(t, filepath.Join(dir, File), good)
	got, err := Read(dir)
	if err != nil || len(got) != 1 || got[0] != (Source{URL: "https://github.com/uatuko/grpcxx", Commit: commit, Dir: "grpcxx"}) {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	if got, err := Read(t.TempDir()); got != nil || err != nil {
		t.Errorf("Read of a folder without %s = %+v, %v; want none", File, got, err)
	}
	bad := map[string]string{
		"a tag":             `[{"url": "u", "commit": "v0.6.3", "dir": "grpcxx"}]`,
		"a short commit":    `[{"url": "u", "commit": "87945aa", "dir": "grpcxx"}]`,
		"no url":            `[{"commit": "` + commit + `", "dir": "grpcxx"}]`,
		"a dir outside":     `[{"url": "u", "commit": "` + commit + `", "dir": "../grpcxx"}]`,
		"an absolute dir":   `[{"url": "u", "commit": "` + commit + `", "dir": "/grpcxx"}]`,
		"the scenario":      `[{"url": "u", "commit": "` + commit + `", "dir": "scenario"}]`,
		"a dir twice":       `[{"url": "u", "commit": "` + commit + `", "dir": "a"}, {"url": "v", "commit": "` + commit + `", "dir": "a"}]`,
		"an unknown field":  `[{"url": "u", "commit": "` + commit + `", "dir": "a", "tag": "v1"}]`,
		"not a list":        `{"url": "u"}`,
		"an unclean folder": `[{"url": "u", "commit": "` + commit + `", "dir": "a/"}]`,
	}
	for name, content := range bad {
		dir := t.TempDir()
		write(t, filepath.Join(dir, File), content)
		if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, File)) {
			t.Errorf("%s: Read error %v; want one naming the file", name, err)
		}
	}
}

func TestRepoName(t *testing.T) {
	for url, want := range map[string]string{
		"https://github.com/uatuko/grpcxx":      "grpcxx",
		"https://github.com/Tradias/asio-grpc/": "asio-grpc",
		"git@github.com:uatuko/grpcxx.git":      "grpcxx",
		"file:///srv/git/grpcxx.git":            "grpcxx",
	} {
		if got := repoName(url); got != want {
			t.Errorf("repoName(%q) = %q, want %q", url, got, want)
		}
	}
	if cacheName("https://a/x") == cacheName("https://b/x") {
		t.Error("two URLs of the same name share a cache folder")
	}
}
