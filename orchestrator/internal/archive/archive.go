// Package archive puts tar streams together from folders and files of
// several places: build contexts, and files to copy into containers.
package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// Archive is a tar stream put together from folders and files of several
// places: a build context, or files to copy into a container. Headers carry
// one fixed time and no owners, so the same files make the same build
// context and the builder's layer cache holds.
type Archive struct {
	buf bytes.Buffer
	tw  *tar.Writer
	err error
}

// fileTime is the time of every file: fixed, for the layer cache, and not
// 0, which Java's File.lastModified reports for a missing file, so that
// Maven's resources plugins take a file of 1970 for none and skip it.
var fileTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// New starts an empty archive.
func New() *Archive {
	c := &Archive{}
	c.tw = tar.NewWriter(&c.buf)
	return c
}

// AddDir adds the tree under dir at prefix ("" for the root), leaving out
// what dir's .dockerignore excludes.
func (c *Archive) AddDir(dir, prefix string) *Archive {
	if c.err != nil {
		return c
	}
	excludes, err := readDockerignore(dir)
	if err != nil {
		c.err = err
		return c
	}
	pm, err := patternmatcher.New(excludes)
	if err != nil {
		c.err = fmt.Errorf("%s/.dockerignore: %w", dir, err)
		return c
	}
	c.err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip, err := pm.MatchesOrParentMatches(rel); err != nil {
			return err
		} else if skip && !pm.Exclusions() {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		} else if skip {
			return nil
		}
		return c.addPath(p, path.Join(prefix, rel), d)
	})
	return c
}

// AddFile adds the file at src under the name dst.
func (c *Archive) AddFile(src, dst string) *Archive {
	if c.err != nil {
		return c
	}
	info, err := os.Stat(src)
	if err != nil {
		c.err = err
		return c
	}
	c.err = c.addPath(src, dst, fs.FileInfoToDirEntry(info))
	return c
}

// AddBytes adds a file with the given content.
func (c *Archive) AddBytes(dst string, content []byte, mode int64) *Archive {
	if c.err != nil {
		return c
	}
	if err := c.tw.WriteHeader(&tar.Header{Name: dst, Mode: mode, Size: int64(len(content)), Typeflag: tar.TypeReg, ModTime: fileTime, Format: tar.FormatPAX}); err != nil {
		c.err = err
		return c
	}
	_, c.err = c.tw.Write(content)
	return c
}

// Reader closes the archive and returns it.
func (c *Archive) Reader() (io.Reader, error) {
	if c.err != nil {
		return nil, fmt.Errorf("archive: %w", c.err)
	}
	if err := c.tw.Close(); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return &c.buf, nil
}

func (c *Archive) addPath(src, dst string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	h := &tar.Header{Name: dst, Mode: int64(info.Mode().Perm()), ModTime: fileTime, Format: tar.FormatPAX}
	switch {
	case info.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, dst+"/"
		return c.tw.WriteHeader(h)
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
		return c.tw.WriteHeader(h)
	case info.Mode().IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
		if err := c.tw.WriteHeader(h); err != nil {
			return err
		}
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		// Room for the file and its padding at once: a large file (the
		// client image's binary) would otherwise grow the buffer by
		// doubling, through copies of itself.
		c.buf.Grow(int(info.Size()) + 512)
		_, err = io.Copy(c.tw, f)
		return err
	default:
		return nil // sockets and devices have no place in a build context
	}
}

func readDockerignore(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, ".dockerignore"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ignorefile.ReadAll(f)
}
