package baseimage

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/archive"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scratch"
)

// debianMirror is plain HTTP on purpose: it needs no CA bundle, so it works
// behind an intercepting HTTPS proxy.
const debianMirror = "http://deb.debian.org/debian"

// debootstrap builds a minimal Debian image of the given suite, trimmed as
// the official -slim images are (no documentation, no package lists).
func debootstrap(suite string) func(context.Context, Host, string, io.Writer) error {
	return func(ctx context.Context, eng Host, ref string, log io.Writer) error {
		if _, err := exec.LookPath("debootstrap"); err != nil {
			return errors.New("debootstrap is not installed (as root: apt-get install debootstrap), " +
				"and it must run on the host: run `make images` there once")
		}
		if os.Geteuid() != 0 {
			return errors.New("debootstrap needs root: run `make images` as root once")
		}
		// Removing the root unmounts the proc and sys that debootstrap
		// mounts in it and leaves there when it is stopped.
		dir, removeDir, err := scratch.Dir("grpcbench-rootfs-")
		if err != nil {
			return err
		}
		defer removeDir()
		cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", suite, dir, debianMirror)
		cmd.Stdout, cmd.Stderr = log, log
		// A cancel asks first: debootstrap's own exit trap unmounts too.
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("debootstrap %s: %w", suite, err)
		}
		sources := fmt.Sprintf("deb %[1]s %[2]s main\ndeb %[1]s %[2]s-updates main\ndeb http://deb.debian.org/debian-security %[2]s-security main\n", debianMirror, suite)
		if err := os.WriteFile(filepath.Join(dir, "etc/apt/sources.list"), []byte(sources), 0o644); err != nil {
			return err
		}
		for _, pattern := range []string{"usr/share/doc/*", "usr/share/man/*", "usr/share/info/*", "var/cache/apt/archives/*.deb", "var/lib/apt/lists/*", "var/log/*.log"} {
			matches, _ := filepath.Glob(filepath.Join(dir, pattern))
			for _, m := range matches {
				if err := os.RemoveAll(m); err != nil {
					return err
				}
			}
		}
		return importDir(ctx, eng, dir, ref, []string{
			`ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
			`CMD ["bash"]`,
		})
	}
}

// importDir turns a root file system folder into an image.
func importDir(ctx context.Context, eng Host, dir, ref string, changes []string) error {
	tarCmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "-C", dir, "-cf", "-", ".")
	out, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	tarCmd.Stderr = &stderr
	if err := tarCmd.Start(); err != nil {
		return fmt.Errorf("tar %s: %w", dir, err)
	}
	importErr := eng.Import(ctx, out, ref, changes)
	_, _ = io.Copy(io.Discard, out) // let tar finish if the import stopped reading; its error says more
	if err := tarCmd.Wait(); err != nil {
		return fmt.Errorf("tar %s: %w: %s", dir, err, stderr.String())
	}
	return importErr
}

//go:embed recipes
var recipeFiles embed.FS

// toolchain is a toolchain of this host to copy into an image: the folders
// to put in the build context, and its version for the build.
type toolchain struct {
	dirs    map[string]string // name in the context → folder on the host
	files   map[string]string // name in the context → file on the host
	version string
}

// fromHost builds an image from recipes/<dockerfile>, whose context holds
// the host's trust store (as host-trust-store.crt) and the toolchain that
// find locates. The toolchain's version must start with the one the tag
// names; the Dockerfile gets it as the build argument VERSION.
func fromHost(dockerfile, version string, find func(context.Context) (toolchain, error)) func(context.Context, Host, string, io.Writer) error {
	return func(ctx context.Context, eng Host, ref string, log io.Writer) error {
		tc, err := find(ctx)
		if err != nil {
			return err
		}
		if tc.version != version && !strings.HasPrefix(tc.version, version+".") {
			return fmt.Errorf("%s needs version %s, this host has %s", ref, version, tc.version)
		}
		df, err := recipeFiles.ReadFile("recipes/" + dockerfile)
		if err != nil {
			return err
		}
		buildContext := archive.New().
			AddBytes("Dockerfile", df, 0o644).
			AddFile(trustStore(), "host-trust-store.crt")
		for _, name := range slices.Sorted(maps.Keys(tc.dirs)) {
			buildContext.AddDir(tc.dirs[name], name)
		}
		for _, name := range slices.Sorted(maps.Keys(tc.files)) {
			buildContext.AddFile(tc.files[name], name)
		}
		ctxTar, err := buildContext.Reader()
		if err != nil {
			return err
		}
		_, err = eng.Build(ctx, ctxTar, backend.BuildOptions{Tag: ref, BuildArgs: map[string]string{"VERSION": tc.version}}, log)
		return err
	}
}

// hostGo finds the Go toolchain of the go command on PATH.
func hostGo(ctx context.Context) (toolchain, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		return toolchain{}, fmt.Errorf("no Go toolchain on this host to copy (go env GOROOT): %w", err)
	}
	goroot := strings.TrimSpace(string(out))
	have, err := os.ReadFile(filepath.Join(goroot, "VERSION"))
	if err != nil {
		return toolchain{}, fmt.Errorf("no Go toolchain to copy (GOROOT %s): %w", goroot, err)
	}
	version := strings.TrimPrefix(strings.SplitN(string(have), "\n", 2)[0], "go")
	return toolchain{dirs: map[string]string{"go": goroot}, version: version}, nil
}

// hostRust finds the Rust toolchain of the rustc on PATH (rustup's), less
// its documentation.
func hostRust(ctx context.Context) (toolchain, error) {
	out, err := exec.CommandContext(ctx, "rustc", "--print", "sysroot").Output()
	if err != nil {
		return toolchain{}, fmt.Errorf("no Rust toolchain on this host to copy (rustc --print sysroot): %w", err)
	}
	sysroot := strings.TrimSpace(string(out))
	out, err = exec.CommandContext(ctx, "rustc", "--version").Output()
	if err != nil {
		return toolchain{}, fmt.Errorf("rustc --version: %w", err)
	}
	fields := strings.Fields(string(out)) // rustc 1.95.0 (59807616e 2026-04-14)
	if len(fields) < 2 {
		return toolchain{}, fmt.Errorf("rustc --version: unexpected %q", out)
	}
	dirs := map[string]string{}
	for _, d := range []string{"bin", "lib", "libexec", "etc"} {
		dirs["rust/"+d] = filepath.Join(sysroot, d)
	}
	return toolchain{dirs: dirs, version: fields[1]}, nil
}

// hostNode finds the node binary on PATH and the npm it comes with.
func hostNode(ctx context.Context) (toolchain, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return toolchain{}, fmt.Errorf("no Node.js on this host to copy: %w", err)
	}
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return toolchain{}, fmt.Errorf("node --version: %w", err)
	}
	npm := filepath.Join(filepath.Dir(filepath.Dir(node)), "lib", "node_modules", "npm")
	if _, err := os.Stat(npm); err != nil {
		return toolchain{}, fmt.Errorf("no npm next to %s: %w", node, err)
	}
	return toolchain{
		dirs:    map[string]string{"node/npm": npm},
		files:   map[string]string{"node/node": node},
		version: strings.TrimPrefix(strings.TrimSpace(string(out)), "v"),
	}, nil
}

// debianPackages is for images made of Debian's own packages: there is no
// host toolchain to copy, only the version the tag names to state.
func debianPackages(version string) func(context.Context) (toolchain, error) {
	return func(context.Context) (toolchain, error) { return toolchain{version: version}, nil }
}

// trustStore is the host's CA bundle, which holds the intercepting proxy's
// CA where there is one.
func trustStore() string {
	if f := os.Getenv("SSL_CERT_FILE"); f != "" {
		return f
	}
	return "/etc/ssl/certs/ca-certificates.crt"
}
