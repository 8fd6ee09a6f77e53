package sources

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"

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
const unreachable = "https://127.0.0.1:1/uatuko/grpcxx"

// serve publishes the upstream over HTTPS, as a forge does (git's own
// http-backend behind a test server whose certificate git is told to
// trust), and returns its URL.
func (u upstream) serve(t *testing.T) string {
	t.Helper()
	return serveTLS(t, &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend",
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(u.dir), "GIT_HTTP_EXPORT_ALL=1"}}) + "/" + filepath.Base(u.dir)
}

// serveTLS serves h over HTTPS with a certificate git is told to trust,
// and returns the server's URL.
func serveTLS(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	write(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	t.Setenv("GIT_SSL_CAINFO", ca)
	return srv.URL
}

// TestDribblingOriginIsCutOff: an origin that sends a byte now and then,
// enough for any stall detector, is cut off at the fetch's total limit,
// and the error says so.
func TestDribblingOriginIsCutOff(t *testing.T) {
	url := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		for r.Context().Err() == nil {
			w.Write([]byte("0"))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	}))
	src := Source{URL: url + "/uatuko/grpcxx", Commit: strings.Repeat("ab", 20), Dir: "grpcxx"}
	start := time.Now()
	err := Fetcher{Cache: t.TempDir(), Timeout: time.Second}.Checkout(context.Background(), src, filepath.Join(t.TempDir(), "grpcxx"), new(strings.Builder))
	if err == nil || !strings.Contains(err.Error(), "still fetching after 1s (GRPC_BUILD_TIMEOUT)") {
		t.Errorf("checkout from a dribbling origin: %v; want it cut off at its limit", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the checkout took %s", took)
	}
}

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
	if err := f.Checkout(context.Background(), Source{URL: u.serve(t), Commit: u.second, Dir: "grpcxx"}, dst, new(strings.Builder)); err != nil {
		t.Fatal(err)
	}
	if got := testfiles.Read(t, filepath.Join(dst, "src", "lib.h")); got != "version 2\n" {
		t.Errorf("lib.h = %q: not the pinned commit's", got)
	}
}

// TestLocalURLIsNotFetched: a file:// URL or a local path that got past
// Read is still not fetched: git may use https and ssh alone for a URL.
func TestLocalURLIsNotFetched(t *testing.T) {
	u := newUpstream(t)
	for _, url := range []string{"file://" + u.dir, u.dir} {
		err := Fetcher{Cache: t.TempDir()}.Checkout(context.Background(), Source{URL: url, Commit: u.first, Dir: "grpcxx"}, filepath.Join(t.TempDir(), "grpcxx"), new(strings.Builder))
		if err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("checkout of %s: %v; want git's refusal of the transport", url, err)
		}
	}
}

// TestOptionURLRunsNothing: a URL that git would take for an option
// (--upload-pack runs a command) is passed after "--", so git takes it for
// a repository, finds none, and runs nothing.
func TestOptionURLRunsNothing(t *testing.T) {
	pwned := filepath.Join(t.TempDir(), "pwned")
	src := Source{URL: "--upload-pack=touch " + pwned + ";:", Commit: strings.Repeat("ab", 20), Dir: "grpcxx"}
	err := Fetcher{Cache: t.TempDir()}.Checkout(context.Background(), src, filepath.Join(t.TempDir(), "grpcxx"), new(strings.Builder))
	if err == nil {
		t.Error("a URL that is an option was checked out")
	}
	if _, statErr := os.Stat(pwned); statErr == nil {
		t.Errorf("the URL ran its command: %s exists (checkout: %v)", pwned, err)
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
		"a tag":             `[{"url": "https://h/u", "commit": "v0.6.3", "dir": "grpcxx"}]`,
		"a short commit":    `[{"url": "https://h/u", "commit": "87945aa", "dir": "grpcxx"}]`,
		"no url":            `[{"commit": "` + commit + `", "dir": "grpcxx"}]`,
		"a dir outside":     `[{"url": "https://h/u", "commit": "` + commit + `", "dir": "../grpcxx"}]`,
		"an absolute dir":   `[{"url": "https://h/u", "commit": "` + commit + `", "dir": "/grpcxx"}]`,
		"the scenario":      `[{"url": "https://h/u", "commit": "` + commit + `", "dir": "scenario"}]`,
		"a dir twice":       `[{"url": "https://h/u", "commit": "` + commit + `", "dir": "a"}, {"url": "https://h/v", "commit": "` + commit + `", "dir": "a"}]`,
		"an unknown field":  `[{"url": "https://h/u", "commit": "` + commit + `", "dir": "a", "tag": "v1"}]`,
		"not a list":        `{"url": "https://h/u"}`,
		"an unclean folder": `[{"url": "https://h/u", "commit": "` + commit + `", "dir": "a/"}]`,
	}
	entry := func(url string) string {
		return `[{"url": "https://h/a", "commit": "` + commit + `", "dir": "a"}, {"url": "` + url + `", "commit": "` + commit + `", "dir": "b"}]`
	}
	for name, url := range map[string]string{
		"an option":           "--upload-pack=touch pwned;:",
		"a file URL":          "file:///srv/git/grpcxx",
		"a local path":        "/srv/git/grpcxx",
		"a relative path":     "../grpcxx",
		"plain HTTP":          "http://github.com/uatuko/grpcxx",
		"the git protocol":    "git://github.com/uatuko/grpcxx",
		"a remote helper":     "ext::sh -c touch% pwned",
		"a helper, scp-like":  "git@ext::sh",
		"an ssh option host":  "ssh://-oProxyCommand=touch%20pwned/x",
		"an ssh option user":  "ssh://-oProxyCommand=x@host/x",
		"an scp option host":  "git@-oProxyCommand=x:path",
		"an scp option path":  "git@host:-x",
		"a space":             "https://github.com/a b",
		"an escape":           `https://github.com/\u001b[2J`,
		"no repository":       "https://github.com/",
		"a host without path": "https://github.com",
	} {
		bad[name] = entry(url)
	}
	for name, content := range bad {
		dir := t.TempDir()
		write(t, filepath.Join(dir, File), content)
		_, err := Read(dir)
		var cfgErr *config.Error
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, File)) || !errors.As(err, &cfgErr) {
			t.Errorf("%s: Read error %v; want bad input naming the file", name, err)
		}
		if strings.Contains(content, `"dir": "b"`) && (err == nil || !strings.Contains(err.Error(), "entry 2: url")) {
			t.Errorf("%s: Read error %v; want one naming the entry and its url", name, err)
		}
	}
	for _, url := range []string{"https://github.com/uatuko/grpcxx", "ssh://git@github.com/uatuko/grpcxx.git", "ssh://github.com:2222/uatuko/grpcxx", "git@github.com:uatuko/grpcxx.git"} {
		dir := t.TempDir()
		write(t, filepath.Join(dir, File), entry(url))
		if _, err := Read(dir); err != nil {
			t.Errorf("Read of the URL %s: %v", url, err)
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
