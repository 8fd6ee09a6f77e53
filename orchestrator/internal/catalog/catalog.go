// Package catalog is the repository as a run sees it: the servers of
// servers/, the scenarios of scenarios/, the Dockerfiles of the client and
// its tools, and the commit they are at.
package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sources"
)

// Catalog lists what the repository at Root holds.
type Catalog struct {
	Root string
	// Servers are the folders of servers/ with a Dockerfile, each followed
	// by its variants.
	Servers   []string
	Scenarios []string // folders of scenarios/ with a proto
	// variants are the servers that run another's image with settings of
	// their own, by name.
	variants map[string]Variant
	// manifests are the server folders' server.json, by folder.
	manifests map[string]Manifest
}

// VariantsFile declares a server's variants: JSON, an object whose keys
// name the variants and whose values are the environment each adds.
const VariantsFile = "variants.json"

// Variant is a server run from another's image with its own environment:
// a JVM with another garbage collector, say. It is built once, with its
// base, and ranked under its own name.
type Variant struct {
	Base string
	Env  map[string]string
}

// Open lists the servers and scenarios of the repository at root, and
// reads each server's manifest: a server folder without one is refused.
func Open(root string) (Catalog, error) {
	c := Catalog{Root: root, variants: map[string]Variant{}, manifests: map[string]Manifest{}}
	folders, err := subdirs(filepath.Join(root, "servers"), "Dockerfile")
	if err != nil {
		return c, err
	}
	for _, base := range folders {
		c.Servers = append(c.Servers, base)
		if c.manifests[base], err = c.readManifest(base); err != nil {
			return c, err
		}
		// A source's URL reaches git on this machine: refused here, before
		// anything is built, when it could be taken for anything but a
		// remote repository.
		if _, err := sources.Read(filepath.Join(root, "servers", base)); err != nil {
			return c, err
		}
		names, err := c.readVariants(base)
		if err != nil {
			return c, err
		}
		c.Servers = append(c.Servers, names...)
	}
	if c.Scenarios, err = subdirs(filepath.Join(root, "scenarios"), scenario.ProtoFile); err != nil {
		return c, err
	}
	for _, base := range folders {
		if err := c.checkUnsupported(base); err != nil {
			return c, err
		}
	}
	return c, nil
}

// readVariants reads a server's variants, in name order.
func (c Catalog) readVariants(base string) ([]string, error) {
	js, err := os.ReadFile(filepath.Join(c.Root, "servers", base, VariantsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var decl map[string]map[string]string
	if err := json.Unmarshal(js, &decl); err != nil {
		return nil, fmt.Errorf("servers/%s/%s: %w", base, VariantsFile, err)
	}
	names := slices.Sorted(maps.Keys(decl))
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(c.Root, "servers", name)); err == nil {
			return nil, fmt.Errorf("servers/%s/%s: the variant %s has the name of a server folder", base, VariantsFile, name)
		}
		if v, dup := c.variants[name]; dup {
			return nil, fmt.Errorf("servers/%s/%s: the variant %s is declared by servers/%s too", base, VariantsFile, name, v.Base)
		}
		c.variants[name] = Variant{Base: base, Env: decl[name]}
	}
	return names, nil
}

// Base is the server whose folder and image a server runs: itself, or a
// variant's base.
func (c Catalog) Base(name string) string {
	if v, ok := c.variants[name]; ok {
		return v.Base
	}
	return name
}

// Bases lists the images the servers run, once each, in order: a variant
// runs its base's.
func (c Catalog) Bases(servers []string) []string {
	var bases []string
	for _, name := range servers {
		if base := c.Base(name); !slices.Contains(bases, base) {
			bases = append(bases, base)
		}
	}
	return bases
}

// Env is the environment a server adds to its base's: a variant's, as
// NAME=value in name order; none for the others.
func (c Catalog) Env(name string) []string {
	v := c.variants[name]
	var env []string
	for _, k := range slices.Sorted(maps.Keys(v.Env)) {
		env = append(env, k+"="+v.Env[k])
	}
	return env
}

// ServerDir is the build context of a server, or of a variant's base.
func (c Catalog) ServerDir(name string) string {
	return filepath.Join(c.Root, "servers", c.Base(name))
}

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
		// Two trees of one commit with other changes are other code.
		if diff, _ := exec.CommandContext(ctx, "git", "-C", c.Root, "diff", "HEAD", "--binary").Output(); len(diff) > 0 {
			sum := sha256.Sum256(diff)
			line += " (with uncommitted changes " + hex.EncodeToString(sum[:4]) + ")"
		}
		return line
	}
	if b, ferr := os.ReadFile(filepath.Join(c.Root, "COMMIT")); ferr == nil {
		return strings.TrimSpace(string(b))
	}
	slog.Debug("no commit line", "err", err)
	return "unknown commit (no git history here)"
}

// Fingerprint is a hash of what a server's images are built from: its
// folder (or its base's) and the folders of the scenarios, every file's
// path, mode and content.
func (c Catalog) Fingerprint(server string, scenarios []string) (string, error) {
	dirs := []string{c.ServerDir(server)}
	for _, sc := range scenarios {
		dirs = append(dirs, filepath.Join(c.Root, "scenarios", sc))
	}
	fp, err := c.hash(dirs)
	if err != nil {
		return "", fmt.Errorf("read the build context of %s: %w", server, err)
	}
	return fp, nil
}

// ToolsFingerprint is a hash of tools/, which the images of the load tools
// that have their own are built from; "" when the repository has none.
func (c Catalog) ToolsFingerprint() (string, error) {
	dir := filepath.Join(c.Root, "tools")
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	fp, err := c.hash([]string{dir})
	if err != nil {
		return "", fmt.Errorf("read tools/: %w", err)
	}
	return fp, nil
}

// hash is a hash of the folders' every file's path, mode and content.
func (c Catalog) hash(dirs []string) (string, error) {
	h := sha256.New()
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(c.Root, path)
			fmt.Fprintf(h, "%s\x00%o\x00", rel, info.Mode())
			switch {
			case info.Mode().IsRegular():
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				fmt.Fprintf(h, "%d\x00", len(b))
				h.Write(b)
			case info.Mode()&fs.ModeSymlink != 0:
				target, err := os.Readlink(path)
				if err != nil {
					return err
				}
				fmt.Fprintf(h, "%s\x00", target)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
