// Package catalog is the repository as a run sees it: the servers of
// servers/, the scenarios of scenarios/, the Dockerfiles of the client and
// its tools, and the commit they are at.
package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// Catalog lists what the repository at Root holds.
type Catalog struct {
	Root      string
	Servers   []string // folders of servers/ with a Dockerfile
	Scenarios []string // folders of scenarios/ with a proto
}

// Open lists the servers and scenarios of the repository at root.
func Open(root string) (Catalog, error) {
	c := Catalog{Root: root}
	var err error
	if c.Servers, err = subdirs(filepath.Join(root, "servers"), "Dockerfile"); err != nil {
		return c, err
	}
	c.Scenarios, err = subdirs(filepath.Join(root, "scenarios"), scenario.ProtoFile)
	return c, err
}

// ServerDir is the build context of a server.
func (c Catalog) ServerDir(name string) string { return filepath.Join(c.Root, "servers", name) }

// ToolDir is the build context of a tool image (tools/<name>).
func (c Catalog) ToolDir(name string) string { return filepath.Join(c.Root, "tools", name) }

// Scenario reads and compiles a scenario.
func (c Catalog) Scenario(ctx context.Context, name string) (*scenario.Scenario, error) {
	return scenario.Load(ctx, filepath.Join(c.Root, "scenarios", name))
}

// subdirs lists the folders of dir that hold the file marker.
func subdirs(dir, marker string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), marker)); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Commit is the footer's line on the code that ran, as grpc_bench writes
// it: from git when there is a history, else from the COMMIT file the
// client image carries.
func (c Catalog) Commit(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "-C", c.Root, "log", "-1", "--pretty=format:%h %cD %cn %s").Output()
	if err == nil && len(out) > 0 {
		line := strings.TrimSpace(string(out))
		if dirty, _ := exec.CommandContext(ctx, "git", "-C", c.Root, "status", "--porcelain", "--untracked-files=no").Output(); len(dirty) > 0 {
			line += " (with uncommitted changes)"
		}
		return line
	}
	if b, ferr := os.ReadFile(filepath.Join(c.Root, "COMMIT")); ferr == nil {
		return strings.TrimSpace(string(b))
	}
	slog.Debug("no commit line", "err", err)
	return "unknown commit (no git history here)"
}
