package baseimage

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/docker"
)

// debianMirror is plain HTTP on purpose: it needs no CA bundle, so it works
// behind an intercepting HTTPS proxy.
const debianMirror = "http://deb.debian.org/debian"

// debootstrap builds a minimal Debian image of the given suite, trimmed as
// the official -slim images are (no documentation, no package lists).
func debootstrap(suite string) func(context.Context, Engine, string, io.Writer) error {
	return func(ctx context.Context, eng Engine, ref string, log io.Writer) error {
		if _, err := exec.LookPath("debootstrap"); err != nil {
			return errors.New("debootstrap is not installed (as root: apt-get install debootstrap), " +
				"and it must run on the host: run `make images` there once")
		}
		if os.Geteuid() != 0 {
			return errors.New("debootstrap needs root: run `make images` as root once")
		}
		dir, err := os.MkdirTemp("", "grpcbench-rootfs-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", suite, dir, debianMirror)
		cmd.Stdout, cmd.Stderr = log, log
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
func importDir(ctx context.Context, eng Engine, dir, ref string, changes []string) error {
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
	io.Copy(io.Discard, out) // let tar finish if the import stopped reading
	if err := tarCmd.Wait(); err != nil {
		return fmt.Errorf("tar %s: %w: %s", dir, err, stderr.String())
	}
	return importErr
}

//go:embed recipes/golang.Dockerfile
var golangDockerfile []byte

// hostGo builds a golang image from the Go toolchain running this process,
// which must be of the version the image's tag names.
func hostGo(version string) func(context.Context, Engine, string, io.Writer) error {
	return func(ctx context.Context, eng Engine, ref string, log io.Writer) error {
		out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
		if err != nil {
			return fmt.Errorf("no Go toolchain on this host to copy (go env GOROOT): %w", err)
		}
		goroot := strings.TrimSpace(string(out))
		have, err := os.ReadFile(filepath.Join(goroot, "VERSION"))
		if err != nil {
			return fmt.Errorf("no Go toolchain to copy (GOROOT %s): %w", goroot, err)
		}
		goVersion := strings.TrimPrefix(strings.SplitN(string(have), "\n", 2)[0], "go")
		if goVersion != version && !strings.HasPrefix(goVersion, version+".") {
			return fmt.Errorf("%s needs Go %s, the host has Go %s in %s", ref, version, goVersion, goroot)
		}
		ctxTar, err := docker.NewArchive().
			AddBytes("Dockerfile", golangDockerfile, 0o644).
			AddFile(trustStore(), "host-trust-store.crt").
			AddDir(goroot, "go").
			Reader()
		if err != nil {
			return err
		}
		_, err = eng.Build(ctx, ctxTar, docker.BuildOptions{Tag: ref, BuildArgs: map[string]string{"GOLANG_VERSION": goVersion}}, log)
		return err
	}
}

// trustStore is the host's CA bundle, which holds the intercepting proxy's
// CA where there is one.
func trustStore() string {
	if f := os.Getenv("SSL_CERT_FILE"); f != "" {
		return f
	}
	return "/etc/ssl/certs/ca-certificates.crt"
}
