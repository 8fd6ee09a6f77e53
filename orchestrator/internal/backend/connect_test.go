package backend_test

import (
	"context"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend/fake"
)

// TestConnectPicksTheBackendOfTheScheme: a registered backend serves its
// scheme with the target as given; an address no backend serves is refused,
// naming the schemes there are.
func TestConnectPicksTheBackendOfTheScheme(t *testing.T) {
	var got backend.Target
	backend.Register("memory", func(_ context.Context, t backend.Target) (backend.Host, error) {
		got = t
		return fake.New(t.Address, backend.Facts{CPUs: 3}), nil
	})
	want := backend.Target{Address: "memory://a", Role: "servers", TLS: backend.TLS{Verify: true, CertPath: "/certs"}}
	h, err := backend.Connect(context.Background(), want)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || h.Address() != "memory://a" {
		t.Errorf("the backend was given %+v and opened %s, want %+v", got, h.Address(), want)
	}
	_, err = backend.Connect(context.Background(), backend.Target{Address: "nowhere://b"})
	if err == nil || !strings.Contains(err.Error(), "no backend serves nowhere://") || !strings.Contains(err.Error(), "memory") {
		t.Errorf("Connect to an unknown scheme = %v, want it refused naming memory", err)
	}
}
