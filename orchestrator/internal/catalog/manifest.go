package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ManifestFile declares what a server is built on: its stack, library and
// version, read by every run and recorded with every server.
const ManifestFile = "server.json"

// Manifest is a server folder's server.json. A variant has its base's.
type Manifest struct {
	// Stack is the language or platform: Go, Rust, C++, Java, ...
	Stack string `json:"stack"`
	Library
	// GRPC is the gRPC implementation under Library, when Library is a
	// framework over another project's (Micronaut over grpc-java, grpcio
	// over gRPC's C core); nil when Library is the gRPC implementation.
	GRPC *Library `json:"grpc,omitempty"`
	// Unsupported names the scenarios (or "tls") the server's stack cannot
	// serve, each with why: such a cell is listed as not supported, never
	// built, run or failed.
	Unsupported map[string]string `json:"unsupported,omitempty"`
	// WarmupMin is the least warm-up of the server's rounds under
	// GRPC_BENCHMARK_WARMUP=auto (a Go duration, "20s"): a JIT that
	// compiles in stages has flat stretches the steady-state rule would
	// stop in. "" leaves the rule's own least.
	WarmupMin string `json:"warmup_min,omitempty"`
}

// LeastWarmup is WarmupMin read, 0 when none is declared (readManifest
// has refused one that does not parse).
func (m Manifest) LeastWarmup() time.Duration {
	d, _ := time.ParseDuration(m.WarmupMin)
	return d
}

// UnsupportedTLS is the key of Manifest.Unsupported that stands for TLS
// rather than a scenario.
const UnsupportedTLS = "tls"

// Unsupported says why a server does not serve a scenario, or does not
// serve it over TLS when tls is set; "" when it does.
func (c Catalog) Unsupported(server, scenario string, tls bool) string {
	why := c.Manifest(server).Unsupported
	if tls && why[scenario] == "" && why[UnsupportedTLS] != "" {
		return "TLS: " + why[UnsupportedTLS]
	}
	return why[scenario]
}

// checkUnsupported refuses an unsupported entry that names no scenario of
// the catalog or gives no reason.
func (c Catalog) checkUnsupported(base string) error {
	for key, why := range c.manifests[base].Unsupported {
		if key != UnsupportedTLS && !slices.Contains(c.Scenarios, key) {
			return fmt.Errorf("servers/%s/%s: unsupported: %q is neither a scenario of scenarios/ nor %q", base, ManifestFile, key, UnsupportedTLS)
		}
		if strings.TrimSpace(why) == "" {
			return fmt.Errorf("servers/%s/%s: unsupported: %s gives no reason", base, ManifestFile, key)
		}
	}
	return nil
}

// Library is a library at a version, and where the server pins it.
type Library struct {
	Name    string `json:"library"`
	Version string `json:"version"`
	Pinned  Pin    `json:"pinned"`
}

// Pin says where a server folder fixes a library's version, so that a
// unit test can compare it with the declared one (see
// TestManifestsMatchTheirPins for the files it reads).
type Pin struct {
	// File is the folder's file that holds the version: go.mod,
	// Cargo.lock, package-lock.json, requirements.txt, pom.xml,
	// sources.json or Dockerfile.
	File string `json:"file,omitempty"`
	// Name is the library's name in that file: a Go module, a crate, an
	// npm or PyPI package, a Maven groupId:artifactId or property, a
	// source's URL, a Debian package or a Dockerfile ARG.
	Name string `json:"name,omitempty"`
	// As is what the file says when it is not the version itself: a
	// source's commit, a crate version with build metadata.
	As string `json:"as,omitempty"`
	// Unchecked says why no file of the folder holds the version, when
	// it is only known at build time (a BOM resolved by Maven, say).
	Unchecked string `json:"unchecked,omitempty"`
}

// Manifest is what a server (or a variant's base) declares it is built on.
func (c Catalog) Manifest(name string) Manifest { return c.manifests[c.Base(name)] }

// readManifest reads and checks a server folder's server.json.
func (c Catalog) readManifest(base string) (Manifest, error) {
	path := filepath.Join("servers", base, ManifestFile)
	var m Manifest
	js, err := os.ReadFile(filepath.Join(c.Root, path))
	if errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("%s is missing: every server declares its stack, library and version there, "+
			`e.g. {"stack": "Go", "library": "grpc-go", "version": "1.85.0", "pinned": {"file": "go.mod", "name": "google.golang.org/grpc"}} `+
			"(docs/adding-a-server.md)", path)
	}
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if m.Stack == "" {
		return m, fmt.Errorf("%s: no stack (the language or platform, e.g. \"Go\")", path)
	}
	if err := m.check(); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if d, err := time.ParseDuration(m.WarmupMin); m.WarmupMin != "" && (err != nil || d <= 0) {
		return m, fmt.Errorf("%s: warmup_min %q is not a positive Go duration such as \"20s\"", path, m.WarmupMin)
	}
	if m.GRPC != nil {
		if err := m.GRPC.check(); err != nil {
			return m, fmt.Errorf("%s: grpc: %w", path, err)
		}
	}
	return m, nil
}

func (l Library) check() error {
	switch {
	case l.Name == "" || l.Version == "":
		return errors.New(`"library" and "version" are required`)
	case (l.Pinned.File == "") == (l.Pinned.Unchecked == ""):
		return fmt.Errorf("%s: \"pinned\" needs a file and a name, or \"unchecked\" with the reason no file holds the version", l.Name)
	case l.Pinned.File != "" && l.Pinned.Name == "":
		return fmt.Errorf("%s: \"pinned\" names no library in %s", l.Name, l.Pinned.File)
	}
	return nil
}
