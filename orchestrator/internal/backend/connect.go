package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Target is a host to connect to.
type Target struct {
	// Address is scheme://…: the scheme picks the backend.
	Address string
	// Role names what the host is for in messages ("servers", "clients",
	// or "" when one host runs both).
	Role string
	TLS  TLS
}

// TLS is how a tcp:// host is reached: with the client certificates of
// CertPath (ca.pem, cert.pem, key.pem) when it is set, verifying the
// host's certificate when Verify is set, as the Docker CLI does.
type TLS struct {
	Verify   bool
	CertPath string
}

// Open connects to a target of a backend and checks that it answers.
type Open func(ctx context.Context, t Target) (Host, error)

// StatsReader reads a raw stats file back, in the format of the backend
// that wrote it.
type StatsReader func(r io.Reader, each func(Sample)) error

// Backend is what a backend registers for its schemes.
type Backend struct {
	Open Open
	// Check says why an address of the backend's schemes cannot name a
	// host, "" when it can: the settings' checks ask it before anything
	// connects.
	Check func(address string) string
	// Canonical writes an address the one way that names its host, so
	// that two spellings of one host compare equal; nil keeps it as
	// written.
	Canonical func(address string) string
	// Stats reads the raw stats files of runs recorded before samples were
	// kept in the record's own form.
	Stats StatsReader
}

var (
	mu       sync.Mutex
	backends = map[string]Backend{}
)

// Register makes b the backend of addresses scheme://…; a backend
// registers its schemes when its package is linked in.
func Register(scheme string, b Backend) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := backends[scheme]; dup {
		panic("backend: scheme " + scheme + " registered twice")
	}
	backends[scheme] = b
}

// Connect opens the host at t.Address with the backend of its scheme.
func Connect(ctx context.Context, t Target) (Host, error) {
	b, err := of(t.Address)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.Address, err)
	}
	return b.Open(ctx, t)
}

// ReadStats reads a stats file written by the host at address.
func ReadStats(address string, r io.Reader, each func(Sample)) error {
	b, err := of(address)
	if err != nil {
		return fmt.Errorf("read the stats of %s: %w", address, err)
	}
	return b.Stats(r, each)
}

// Check says why address names no host: no backend serves its scheme, or
// the backend refuses it.
func Check(address string) error {
	b, err := of(address)
	if err != nil {
		return err
	}
	if b.Check != nil {
		if why := b.Check(address); why != "" {
			return errors.New(why)
		}
	}
	return nil
}

// Same says two addresses name one host, as their backend writes them.
func Same(a, b string) bool { return canonical(a) == canonical(b) }

func canonical(address string) string {
	if b, err := of(address); err == nil && b.Canonical != nil {
		return b.Canonical(address)
	}
	return address
}

func of(address string) (Backend, error) {
	scheme, _, _ := strings.Cut(address, "://")
	mu.Lock()
	defer mu.Unlock()
	b, ok := backends[scheme]
	if !ok {
		return Backend{}, fmt.Errorf("no backend serves %s:// (known: %s)", scheme, strings.Join(slices.Sorted(maps.Keys(backends)), ", "))
	}
	return b, nil
}
