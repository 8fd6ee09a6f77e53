package catalog

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// At is the catalog of the repository at root as git ref had it, for a
// gate that measures a baseline beside the working tree: ref resolved to
// its commit, and its servers/ and scenarios/ (nothing else builds a
// server) written under dir, from which the catalog is read. The load
// client and tools are the run's own, not ref's.
func At(ctx context.Context, root, ref, dir string) (Catalog, string, error) {
	commit, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--verify", "--end-of-options", ref+"^{commit}").Output()
	if err != nil {
		return Catalog{}, "", fmt.Errorf("git ref %q: not a commit of the repository at %s: %w", ref, root, gitError(err))
	}
	sha := strings.TrimSpace(string(commit))
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", sha, "--", "servers", "scenarios")
	out, err := archive.StdoutPipe()
	if err != nil {
		return Catalog{}, "", err
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Start(); err != nil {
		return Catalog{}, "", fmt.Errorf("git archive %s: %w", sha, err)
	}
	extractErr := extract(out, dir)
	if err := archive.Wait(); err != nil {
		return Catalog{}, "", fmt.Errorf("git archive %s servers scenarios: %w: %s", sha, err, strings.TrimSpace(stderr.String()))
	}
	if extractErr != nil {
		return Catalog{}, "", fmt.Errorf("extract %s's servers and scenarios: %w", ref, extractErr)
	}
	c, err := Open(dir)
	if err != nil {
		return Catalog{}, "", fmt.Errorf("the catalog at %s: %w", ref, err)
	}
	return c, sha, nil
}

// gitError is git's own message, when it said one.
func gitError(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return errors.New(strings.TrimSpace(string(exit.Stderr)))
	}
	return err
}

// extract writes a tar of git archive's under dir: folders, files with
// their modes, symbolic links; an entry that would land outside dir is
// refused.
func extract(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if rel, err := filepath.Rel(dir, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s: outside the folder", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			err = writeFile(path, tr, h.FileInfo().Mode().Perm())
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				err = os.Symlink(h.Linkname, path)
			}
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}
