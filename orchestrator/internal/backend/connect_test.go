package backend_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend/fake"
)

// memory is a backend of fake hosts: opened is the target it was last
// given; its stats files hold one sample.
var opened backend.Target

func init() {
	backend.Register("memory", backend.Backend{Open: func(_ context.Context, t backend.Target) (backend.Host, error) {
		opened = t
		return fake.New(t.Address, backend.Facts{CPUs: 3}), nil
	}, Stats: func(_ io.Reader, each func(backend.Sample)) error {
		each(backend.Sample{CPUNanos: 7})
		return nil
	}})
}

// TestConnectPicksTheBackendOfTheScheme: a registered backend serves its
// scheme with the target as given; an address no backend serves is refused,
// naming the schemes there are.
func TestConnectPicksTheBackendOfTheScheme(t *testing.T) {
	want := backend.Target{Address: "memory://a", Role: "servers", TLS: backend.TLS{Verify: true, CertPath: "/certs"}}
	h, err := backend.Connect(context.Background(), want)
	if err != nil {
		t.Fatal(err)
	}
	if opened != want || h.Address() != "memory://a" {
		t.Errorf("the backend was given %+v and opened %s, want %+v", opened, h.Address(), want)
	}
	_, err = backend.Connect(context.Background(), backend.Target{Address: "nowhere://b"})
	if err == nil || !strings.Contains(err.Error(), "no backend serves nowhere://") || !strings.Contains(err.Error(), "memory") {
		t.Errorf("Connect to an unknown scheme = %v, want it refused naming memory", err)
	}
}

// TestReadStatsUsesTheBackendOfTheAddress: a run's stats files are read by
// the backend of the host that wrote them; an unknown scheme is refused.
func TestReadStatsUsesTheBackendOfTheAddress(t *testing.T) {
	var got []backend.Sample
	if err := backend.ReadStats("memory://a", strings.NewReader(""), func(s backend.Sample) { got = append(got, s) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].CPUNanos != 7 {
		t.Errorf("ReadStats gave %+v, want the memory backend's one sample", got)
	}
	if err := backend.ReadStats("nowhere://b", strings.NewReader(""), func(backend.Sample) {}); err == nil {
		t.Error("ReadStats of an unknown scheme succeeded")
	}
}
