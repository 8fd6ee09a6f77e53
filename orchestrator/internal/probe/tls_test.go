package probe

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/grpcbench/grpcbench/orchestrator/internal/certs"
)

// runCerts are a run's certificates and its clients' TLS configuration.
func runCerts(t *testing.T) (*certs.Set, *tls.Config) {
	t.Helper()
	set, err := certs.New(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := certs.ClientConfig(set.CA)
	if err != nil {
		t.Fatal(err)
	}
	return set, cfg
}

// serverTLS is a server's credentials with the set's certificate, as a
// server of the catalog loads them.
func serverTLS(t *testing.T, set *certs.Set) credentials.TransportCredentials {
	t.Helper()
	pair, err := tls.X509KeyPair(set.Cert, set.Key)
	if err != nil {
		t.Fatal(err)
	}
	return credentials.NewServerTLSFromCert(&pair)
}

// tlsVerdict is the gate's and the probe's view, over TLS with the run's
// configuration, of a server with creds (nil: plaintext).
func tlsVerdict(t *testing.T, creds credentials.TransportCredentials, cfg *tls.Config) Verdict {
	t.Helper()
	addr, sc := serve(t, greeter{sayHello: echo, creds: creds})
	srv := Server{Target: addr, TLS: cfg}
	// Up, whatever it serves: a wrong answer is the gate's to name.
	if _, err := Ready(context.Background(), srv, sc, 30*time.Second); err != nil {
		t.Fatalf("probe: %v", err)
	}
	v, err := Conform(context.Background(), srv, sc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestConformOverTLS: a server with the run's certificate passes, with
// the handshake checked first; one that serves plaintext when TLS was
// asked, or presents a certificate of another CA, fails that check with
// the reason, and no other check is run on it.
func TestConformOverTLS(t *testing.T) {
	set, cfg := runCerts(t)
	v := tlsVerdict(t, serverTLS(t, set), cfg)
	if !v.Passed || len(v.Checks) < 2 || v.Checks[0].Name != TLSCheck {
		t.Errorf("verdict %+v: want passed, the TLS check first", v)
	}
	other, _ := runCerts(t)
	for name, tc := range map[string]struct {
		creds credentials.TransportCredentials
		want  string
	}{
		"plaintext":    {nil, "does not answer TLS"},
		"another's CA": {serverTLS(t, other), "certificate signed by unknown authority"},
	} {
		v := tlsVerdict(t, tc.creds, cfg)
		if v.Passed || len(v.Checks) != 1 || v.Checks[0].Name != TLSCheck || !strings.Contains(v.Checks[0].Detail, tc.want) {
			t.Errorf("%s: verdict %+v, want only the TLS check, failed with %q", name, v, tc.want)
		}
	}
}

// TestHandshakeRefusesAServerWithoutALPN: a TLS server that negotiates no
// protocol is refused (grpc-go's server always picks h2; a hand-made one
// shows the check).
func TestHandshakeRefusesAServerWithoutALPN(t *testing.T) {
	set, cfg := runCerts(t)
	pair, err := tls.X509KeyPair(set.Cert, set.Key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	err = Server{Target: ln.Addr().String(), TLS: cfg}.handshake(context.Background())
	if err == nil || !strings.Contains(err.Error(), `not "h2"`) {
		t.Errorf("handshake with a server without ALPN: %v, want a refusal naming h2", err)
	}
}
