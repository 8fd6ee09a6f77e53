// Package scratch makes the temporary folders of a run (source checkouts,
// build contexts, debootstrap roots) and removes them: each when its user
// is done, and every one still there when the process must leave at once
// (a second Ctrl-C), so that none outlives the run.
package scratch

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

var (
	mu   sync.Mutex
	dirs = map[string]bool{}
)

// Dir makes a temporary folder named after pattern, as os.MkdirTemp does,
// and returns it with the function that removes it, which logs what it
// could not remove: the run goes on.
func Dir(pattern string) (dir string, remove func(), err error) {
	dir, err = os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, fmt.Errorf("make a temporary folder: %w", err)
	}
	mu.Lock()
	dirs[dir] = true
	mu.Unlock()
	return dir, func() {
		mu.Lock()
		delete(dirs, dir)
		mu.Unlock()
		if err := removeDir(dir); err != nil {
			slog.Warn("temporary folder left", "err", err)
		}
	}, nil
}

// RemoveAll removes every folder Dir made that is still there.
func RemoveAll() error {
	mu.Lock()
	list := slices.Collect(maps.Keys(dirs))
	clear(dirs)
	mu.Unlock()
	var errs []error
	for _, d := range list {
		errs = append(errs, removeDir(d))
	}
	return errors.Join(errs...)
}

// removeDir removes dir after unmounting what is mounted inside it (the proc
// and sys of a debootstrap root a cancel cut short): removing files through
// a mount would reach the host's.
func removeDir(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		// Lazily: a process still inside lets go of it when it exits.
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("unmount %s: %w", m, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the temporary folder %s: %w", dir, err)
	}
	return nil
}

// mountsUnder lists the mount points inside dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // no mounts to see, none to undo
	}
	if err != nil {
		return nil, fmt.Errorf("list the mounts: %w", err)
	}
	defer f.Close()
	prefix := filepath.Clean(dir) + "/"
	var list []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		// The kernel writes a space, tab, newline or backslash as an octal escape.
		point := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(fields[4])
		if strings.HasPrefix(point, prefix) {
			list = append(list, point)
		}
	}
	// Deepest first: target/proc/sys/fs/binfmt_misc before target/proc.
	slices.SortFunc(list, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return list, sc.Err()
}
