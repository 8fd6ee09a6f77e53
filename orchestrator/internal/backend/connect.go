package backend

import (
	"context"
	"fmt"
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

var (
	mu       sync.Mutex
	backends = map[string]Open{}
)

// Register makes open the backend of addresses scheme://…; a backend
// registers its schemes when its package is linked in.
func Register(scheme string, open Open) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := backends[scheme]; dup {
		panic("backend: scheme " + scheme + " registered twice")
	}
	backends[scheme] = open
}

// Connect opens the host at t.Address with the backend of its scheme.
func Connect(ctx context.Context, t Target) (Host, error) {
	scheme, _, _ := strings.Cut(t.Address, "://")
	mu.Lock()
	open, ok := backends[scheme]
	known := slices.Sorted(maps.Keys(backends))
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("connect to %s: no backend serves %s:// (known: %s)", t.Address, scheme, strings.Join(known, ", "))
	}
	return open(ctx, t)
}
