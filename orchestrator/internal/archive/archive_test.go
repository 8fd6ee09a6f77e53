package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// entries reads an archive back: names in order, and the content of files.
func entries(t *testing.T, r io.Reader) ([]string, map[string]string) {
	t.Helper()
	tr := tar.NewReader(r)
	var names []string
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, files
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(fileTime) || h.Uid != 0 || h.Uname != "" {
			t.Errorf("%s carries its own time or an owner (%v, %d, %q): the layer cache would miss", h.Name, h.ModTime, h.Uid, h.Uname)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = string(b)
		}
	}
}

func TestArchiveFollowsDockerignore(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\n")
	testfiles.Write(t, filepath.Join(dir, ".dockerignore"), "target/\n*.log\n!keep.log\n")
	testfiles.Write(t, filepath.Join(dir, "src", "main.rs"), "fn main() {}\n")
	testfiles.Write(t, filepath.Join(dir, "target", "release", "server"), "binary")
	testfiles.Write(t, filepath.Join(dir, "build.log"), "noise")
	testfiles.Write(t, filepath.Join(dir, "keep.log"), "kept")

	r, err := New().AddDir(dir, "").AddBytes("scenario/payload.json", []byte(`{}`), 0o644).Reader()
	if err != nil {
		t.Fatal(err)
	}
	names, files := entries(t, r)
	want := []string{".dockerignore", "Dockerfile", "keep.log", "src/", "src/main.rs", "scenario/payload.json"}
	if !slices.Equal(names, want) {
		t.Errorf("archive holds %v, want %v", names, want)
	}
	if files["scenario/payload.json"] != "{}" || files["src/main.rs"] != "fn main() {}\n" {
		t.Errorf("contents: %v", files)
	}
}

func TestArchiveIsReproducible(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, filepath.Join(dir, "a", "b.txt"), "b")
	read := func() []byte {
		r, err := New().AddDir(dir, "ctx").Reader()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		return b
	}
	first := read()
	if err := os.Chtimes(filepath.Join(dir, "a", "b.txt"), time0, time0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, read()) {
		t.Error("the same files made two different archives")
	}
}

func TestArchiveReportsAMissingFile(t *testing.T) {
	_, err := New().AddFile(filepath.Join(t.TempDir(), "nope"), "x").AddBytes("y", nil, 0o644).Reader()
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Reader() = %v, want the missing file's error", err)
	}
}

var time0 = time.Unix(0, 0)
