package loadtest

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/grpcbench/grpcbench/orchestrator/internal/certs"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// TLSServer is a run's certificates: the option that has a test server
// serve TLS with them, and the CA's file, for a load spec's CAFile.
func TLSServer(t *testing.T) (grpc.ServerOption, string) {
	t.Helper()
	set, err := certs.New(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(set.Cert, set.Key)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, set.CA, 0o644); err != nil {
		t.Fatal(err)
	}
	return grpc.Creds(credentials.NewServerTLSFromCert(&pair)), ca
}

// LoadsOverTLS checks a tool's TLS: with the run's CA it loads a TLS
// server with every call OK; with another run's CA, or against a server
// that serves plaintext, no call succeeds, since the chain or the
// handshake fails.
func LoadsOverTLS(t *testing.T, run func(context.Context, load.Spec) (load.Result, error)) {
	t.Helper()
	creds, ca := TLSServer(t)
	other, _ := TLSServer(t)
	spec := func(target, ca string) load.Spec {
		return load.Spec{Target: target, ScenarioDir: ScenarioDir("complex_proto"), Kind: scenario.Unary, CAFile: ca,
			// A warm-up long enough for ghz's handshakes on a busy machine:
			// one that ends before any call did is a failed load.
			Connections: 2, Concurrency: 8, Warmup: time.Second, Duration: 500 * time.Millisecond}
	}
	res, err := run(context.Background(), spec(StartServer(t, "complex_proto", Echo, creds), ca))
	if err != nil {
		t.Fatal(err)
	}
	if res.OK == 0 || res.OK != res.Requests {
		t.Errorf("over TLS: %d of %d calls OK (statuses %v, errors %v), want all and some", res.OK, res.Requests, res.Statuses, res.Errors)
	}
	for name, target := range map[string]string{
		"another run's CA": StartServer(t, "complex_proto", Echo, other),
		"plaintext server": StartServer(t, "complex_proto", Echo),
	} {
		res, err := run(context.Background(), spec(target, ca))
		if err == nil && res.OK > 0 {
			t.Errorf("%s: %d calls OK, want none", name, res.OK)
		}
	}
}
