//go:build root

package scratch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRemoveUnmountsFirst mounts a file system inside a temporary folder,
// as debootstrap mounts proc and sys in its target, and removes the
// folder: the mount is undone and nothing is left. It needs root, as
// debootstrap does.
func TestRemoveUnmountsFirst(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts, as debootstrap does: run it as root")
	}
	dir, remove, err := Dir("grpcbench-test-")
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"proc", "proc/inner"} {
		point := filepath.Join(dir, sub)
		if err := os.MkdirAll(point, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", point, "tmpfs", 0, ""); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(point, "kept"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if mounts, err := mountsUnder(dir); err != nil || len(mounts) != 2 || mounts[0] != filepath.Join(dir, "proc/inner") {
		t.Fatalf("mounts under %s: %v (%v), want the two, deepest first", dir, mounts, err)
	}
	remove()
	if mounts, _ := mountsUnder(dir); len(mounts) != 0 {
		t.Errorf("still mounted: %v", mounts)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", dir, err)
	}
}
