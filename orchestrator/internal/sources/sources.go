// Package sources provides the third-party sources a server builds from
// when no package registry serves them. A server declares them in its
// folder's sources.json, each a repository URL and an exact commit; before
// the build each is checked out into the build context under a folder of
// its own. Nothing of those sources is kept in this repository.
//
// A repository comes from a cache of bare clones when that holds the
// commit, else from its URL, else from a mirror folder of git bundles.
// Whatever the origin, the commit must be there: git names objects by the
// hash of their content and checks it as it receives them, so the pin holds.
package sources

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scratch"
)

// File is the declaration's name in a server's folder.
const File = "sources.json"

// Source is one repository at one commit, to be checked out under Dir of
// the build context.
type Source struct {
	URL    string `json:"url"`
	Commit string `json:"commit"`
	Dir    string `json:"dir"`
}

func (s Source) String() string { return s.URL + " at commit " + s.Commit }

// fullCommit is a whole SHA-1 object name: a tag or a branch can move, an
// abbreviation can become ambiguous, this cannot.
var fullCommit = regexp.MustCompile(`^[0-9a-f]{40}$`)

// reservedDirs are the build context's folders the orchestrator fills itself.
var reservedDirs = map[string]bool{"scenario": true}

// Read returns the sources declared in dir's sources.json, or none when
// there is no such file. A declaration it refuses is a *config.Error naming
// the file and the entry: a server folder is input, checked before anything
// is built.
func Read(dir string) ([]Source, error) {
	path := filepath.Join(dir, File)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var list []Source
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, &config.Error{Var: path, Reason: err.Error(),
			Allowed: `a JSON list of {"url", "commit", "dir"}`}
	}
	seen := map[string]bool{}
	for i, s := range list {
		field, value, problem, allowed := "url", s.URL, checkURL(s.URL), urlsAllowed
		switch {
		case problem != "":
		case !fullCommit.MatchString(s.Commit):
			field, value, problem, allowed = "commit", s.Commit, "not a full commit id (a tag or a short id is not a pin)", "40 hexadecimal digits"
		case s.Dir == "" || !filepath.IsLocal(s.Dir) || filepath.Clean(s.Dir) != s.Dir:
			field, value, problem, allowed = "dir", s.Dir, "not a plain relative folder name", "a relative folder name, clean"
		case reservedDirs[s.Dir]:
			field, value, problem, allowed = "dir", s.Dir, "it is where the scenario goes", "any other folder name"
		case seen[s.Dir]:
			field, value, problem, allowed = "dir", s.Dir, "used twice", "a folder of its own for each entry"
		}
		if problem != "" {
			return nil, &config.Error{Var: fmt.Sprintf("%s: entry %d: %s", path, i+1, field), Value: value, Reason: problem, Allowed: allowed}
		}
		seen[s.Dir] = true
	}
	return list, nil
}

// urlsAllowed are the URLs a source may have: git fetches them with the
// https and ssh protocols alone (urlProtocols). A local path or file:// URL
// would read any repository of the machine into a build that has network
// access; the mirror's bundles are the one local origin, and they come
// from GRPC_SOURCE_MIRROR, not from a server folder.
const urlsAllowed = "https://host/path, ssh://[user@]host[:port]/path or user@host:path"

// urlProtocols and mirrorProtocols are the only transports git may use
// (GIT_ALLOW_PROTOCOL) to fetch a source's URL and a mirror's bundle: not
// ext:: (which runs a command), not a local path from a server folder.
const (
	urlProtocols    = "https:ssh"
	mirrorProtocols = "file"
)

// scpLike is git's other syntax of ssh, user@host:path, with a user and a
// host that cannot be taken for options and a path not starting with "-".
var scpLike = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*@[A-Za-z0-9][A-Za-z0-9.-]*:[^-:]`)

// checkURL says what is wrong with a source's URL, "" when nothing is.
// Whatever it lets through, git runs with "--" before the URL and with
// urlProtocols only.
func checkURL(raw string) string {
	switch {
	case raw == "":
		return "no url"
	case strings.HasPrefix(raw, "-"):
		return "it starts with \"-\", which git takes for an option"
	case strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "it holds a space or a control character"
	case strings.Contains(raw, "::"):
		return "it names a git remote helper (<transport>::<address>)"
	case scpLike.MatchString(raw):
		return ""
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return err.Error()
	case u.Scheme != "https" && u.Scheme != "ssh":
		return "neither an https nor an ssh URL (a local path or file:// is only for the bundles of GRPC_SOURCE_MIRROR)"
	case u.Hostname() == "" || strings.HasPrefix(u.Hostname(), "-") || strings.HasPrefix(u.User.Username(), "-"):
		return "its host or user is empty or starts with \"-\""
	case strings.Trim(u.Path, "/") == "":
		return "it names no repository"
	}
	return ""
}

// Fetcher checks sources out.
type Fetcher struct {
	// Cache is a folder of bare clones, one per URL, kept between runs.
	Cache string
	// Mirror is a folder of git bundles named <repository>.bundle (the
	// URL's last path element), tried after the URL; "" means none.
	Mirror string
	// Stall is how long a fetch over HTTP may go with less than
	// lowSpeed bytes a second before git gives it up; 0 means never.
	Stall time.Duration
	// Timeout is how long a checkout may take in all, however fast the
	// origin dribbles data; 0 means no limit.
	Timeout time.Duration
}

// lowSpeed is the rate below which a fetch counts as stalled.
const lowSpeed = 1000

// stallEnv is git's own stall detector for HTTP transfers, set to f.Stall.
func (f Fetcher) stallEnv() []string {
	if f.Stall <= 0 {
		return nil
	}
	return []string{fmt.Sprintf("GIT_HTTP_LOW_SPEED_LIMIT=%d", lowSpeed), fmt.Sprintf("GIT_HTTP_LOW_SPEED_TIME=%d", int(f.Stall.Seconds()))}
}

// DefaultCache is the user's cache folder's grpcbench/sources (usually
// ~/.cache/grpcbench/sources), else one under the temporary folder.
func DefaultCache() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "grpcbench", "sources")
	}
	return filepath.Join(os.TempDir(), "grpcbench-sources")
}

// Checkout writes the tree of src's commit into dst, a folder that must
// not exist yet, without git's own files. log is told where it came from.
func (f Fetcher) Checkout(ctx context.Context, src Source, dst string, log io.Writer) error {
	if f.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, f.Timeout, fmt.Errorf("still fetching after %s (GRPC_BUILD_TIMEOUT)", f.Timeout))
		defer cancel()
	}
	repo, err := f.repository(ctx, src, log)
	if err == nil {
		err = checkout(ctx, repo, src.Commit, dst)
	}
	if err != nil && ctx.Err() != nil {
		err = context.Cause(ctx) // git killed says only "signal: killed"
	}
	if err != nil {
		return fmt.Errorf("source %s: %w", src, err)
	}
	return nil
}

// repository returns the cached bare clone of src's URL, once it holds the
// commit: at once when it did already, else after fetching from the URL,
// then from the mirror.
func (f Fetcher) repository(ctx context.Context, src Source, log io.Writer) (string, error) {
	if err := os.MkdirAll(f.Cache, 0o755); err != nil {
		return "", fmt.Errorf("create the sources cache: %w", err)
	}
	repo := filepath.Join(f.Cache, cacheName(src.URL))
	if _, err := os.Stat(repo); errors.Is(err, fs.ErrNotExist) {
		if err := git(ctx, "init", "--quiet", "--bare", repo); err != nil {
			return "", fmt.Errorf("create its cache: %w", err)
		}
	}
	if hasCommit(ctx, repo, src.Commit) {
		fmt.Fprintf(log, "source %s: from the cache %s\n", src, repo)
		return repo, nil
	}
	origins, err := f.origins(src.URL)
	if err != nil {
		return "", err
	}
	var tried []string
	for _, o := range origins {
		// Branches and tags: a pinned commit is reachable from one of them.
		err := gitEnv(ctx, append(f.stallEnv(), "GIT_ALLOW_PROTOCOL="+o.protocols), "-C", repo, "fetch", "--quiet", "--no-tags", "--", o.where,
			"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
		switch {
		case err != nil:
			tried = append(tried, fmt.Sprintf("fetch from %s failed: %v", o.where, err))
		case !hasCommit(ctx, repo, src.Commit):
			tried = append(tried, fmt.Sprintf("%s has no such commit", o.where))
		default:
			fmt.Fprintf(log, "source %s: fetched from %s into the cache %s\n", src, o.where, repo)
			return repo, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	if f.Mirror == "" {
		tried = append(tried, "no mirror of git bundles is set (GRPC_SOURCE_MIRROR)")
	}
	return "", fmt.Errorf("commit not found: %s", strings.Join(tried, "; "))
}

// origin is where a repository is fetched from, and the git protocols
// that fetch may use.
type origin struct {
	where, protocols string
}

// origins are where src's URL can be fetched from, in order: the URL, then
// the mirror's bundle of the same repository name.
func (f Fetcher) origins(url string) ([]origin, error) {
	origins := []origin{{url, urlProtocols}}
	if f.Mirror == "" {
		return origins, nil
	}
	mirror, err := filepath.Abs(f.Mirror)
	if err != nil {
		return nil, err
	}
	return append(origins, origin{filepath.Join(mirror, repoName(url)+".bundle"), mirrorProtocols}), nil
}

// repoName is a URL's last path element without ".git": grpcxx for
// https://github.com/uatuko/grpcxx and for git@github.com:uatuko/grpcxx.git.
func repoName(url string) string {
	url = strings.TrimSuffix(strings.TrimRight(url, "/"), ".git")
	return url[strings.LastIndexAny(url, "/:")+1:]
}

// cacheName is the cache folder of a URL: the repository's name, for
// people, and a hash of the whole URL, so that two URLs never share one.
func cacheName(url string) string {
	sum := sha256.Sum256([]byte(url))
	return repoName(url) + "-" + hex.EncodeToString(sum[:6]) + ".git"
}

func hasCommit(ctx context.Context, repo, commit string) bool {
	return git(ctx, "-C", repo, "cat-file", "-e", commit+"^{commit}") == nil
}

// checkout writes commit's tree into dst through an index of its own, so
// the cached repository is only read.
func checkout(ctx context.Context, repo, commit, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	tmp, removeTmp, err := scratch.Dir("grpcbench-index-")
	if err != nil {
		return err
	}
	defer removeTmp()
	env := "GIT_INDEX_FILE=" + filepath.Join(tmp, "index")
	for _, args := range [][]string{{"read-tree", commit}, {"checkout-index", "--all", "--force"}} {
		if err := gitEnv(ctx, []string{env}, append([]string{"--git-dir", repo, "--work-tree", dst}, args...)...); err != nil {
			return fmt.Errorf("check out into %s: %w", dst, err)
		}
	}
	return nil
}

func git(ctx context.Context, args ...string) error { return gitEnv(ctx, nil, args...) }

// gitEnv runs git; its error names the git command and carries what git
// said was wrong.
func gitEnv(ctx context.Context, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	// Never wait for a password nobody will type.
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0"), env...)
	// git fetches through helpers of its own (git-remote-https): the end of
	// ctx kills them all, not git alone, else a helper still reading from
	// its origin holds stderr open and Run never returns.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w%s", subcommand(args), err, complaints(stderr.String()))
	}
	return nil
}

// subcommand is the first argument that is not a global option or its value.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-C", "-c", "--git-dir", "--work-tree":
			i++
		default:
			return args[i]
		}
	}
	return ""
}

// complaints are git's "fatal:" and "error:" lines, or all it said when it
// said none of those.
func complaints(stderr string) string {
	var all, bad []string
	for _, line := range strings.Split(stderr, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		all = append(all, line)
		if strings.HasPrefix(line, "fatal:") || strings.HasPrefix(line, "error:") {
			bad = append(bad, line)
		}
	}
	if len(bad) == 0 {
		bad = all
	}
	if len(bad) == 0 {
		return ""
	}
	return " (" + strings.Join(bad, "; ") + ")"
}
