//go:build root

package report_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

// TestFullDiskKeepsTheLastCompleteResults saves a run's results on a small
// tmpfs, fills it, and saves again with more servers: the error says the
// disk is full, the files of the first save are whole and readable, and no
// temporary file is left.
func TestFullDiskKeepsTheLastCompleteResults(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts a small tmpfs to fill it, which needs root: run it as CI does, as root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })

	seed := seedRun()
	seed.ID = "2026-11-30_12-00-00"
	first := runOf(seed.Cells[0].Servers[0])
	first.ID = seed.ID
	folder := record.Folder{Dir: dir}
	if err := report.Save(folder, first); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, name := range []string{"results.json", "bench.txt", "summary.txt", "results.csv", "results.md", "report.html"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		before[name] = data
	}
	fill(t, filepath.Join(dir, "filler"))

	err := report.Save(folder, seed)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("saving on a full disk = %v, want an error that says so", err)
	}
	for name, want := range before {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != string(want) {
			t.Errorf("%s changed or unreadable after the failed save (%v)", name, err)
		}
	}
	run, err := record.Load(dir)
	if err != nil || len(run.Cells) != 1 || len(run.Cells[0].Servers) != 1 {
		t.Errorf("results.json after the failed save: %v, %+v", err, run.Cells)
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

// fill writes to path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// A tmpfs may take a partial page; make sure not even one byte fits.
	for {
		if _, err := f.Write(block[:1]); err != nil {
			return
		}
	}
}
