package certs_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/certs"
)

func newSet(t *testing.T) *certs.Set {
	t.Helper()
	set, err := certs.New(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// parse reads every PEM block of b of the given type.
func parse(t *testing.T, b []byte, kind string) [][]byte {
	t.Helper()
	var ders [][]byte
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != kind {
			t.Fatalf("PEM block %q, want %q", block.Type, kind)
		}
		ders = append(ders, block.Bytes)
	}
	if len(strings.TrimSpace(string(b))) != 0 {
		t.Fatalf("trailing bytes after the PEM blocks: %q", b)
	}
	return ders
}

// TestChainVerifiesForEveryLoopbackName: the server's certificate chains
// to the CA for localhost, 127.0.0.1 and ::1, as a server certificate, and
// not for another name or against another run's CA.
func TestChainVerifiesForEveryLoopbackName(t *testing.T) {
	set := newSet(t)
	chain := parse(t, set.Cert, "CERTIFICATE")
	if len(chain) != 2 {
		t.Fatalf("the chain holds %d certificates, want the server's and the CA's", len(chain))
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(set.CA) {
		t.Fatal("CA is not PEM")
	}
	for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: roots}); err == nil {
		t.Error("the certificate verifies for example.com")
	}
	other := x509.NewCertPool()
	other.AppendCertsFromPEM(newSet(t).CA)
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: other}); err == nil {
		t.Error("the certificate verifies against another run's CA")
	}
	if got := leaf.DNSNames; len(got) != 1 || got[0] != "localhost" {
		t.Errorf("DNS SANs %v, want [localhost]", got)
	}
	var ips []string
	for _, ip := range leaf.IPAddresses {
		ips = append(ips, ip.String())
	}
	if strings.Join(ips, " ") != "127.0.0.1 ::1" {
		t.Errorf("IP SANs %v, want 127.0.0.1 ::1", ips)
	}
	if life := leaf.NotAfter.Sub(leaf.NotBefore); life > certs.Validity+time.Minute {
		t.Errorf("valid for %s, more than %s", life, certs.Validity)
	}
}

// TestKeyIsPKCS8P256: the key is what the server contract promises, and
// it is the certificate's.
func TestKeyIsPKCS8P256(t *testing.T) {
	set := newSet(t)
	ders := parse(t, set.Key, "PRIVATE KEY")
	if len(ders) != 1 {
		t.Fatalf("%d keys", len(ders))
	}
	key, err := x509.ParsePKCS8PrivateKey(ders[0])
	if err != nil {
		t.Fatalf("not PKCS#8: %v", err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		t.Fatalf("key %T, want an ECDSA P-256 key", key)
	}
	if _, err := tls.X509KeyPair(set.Cert, set.Key); err != nil {
		t.Errorf("the key is not the certificate's: %v", err)
	}
}

// serve accepts one TLS connection with the set's certificate, offering
// the protocols given, and completes its handshake.
func serve(t *testing.T, set *certs.Set, protos []string) string {
	t.Helper()
	pair, err := tls.X509KeyPair(set.Cert, set.Key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: protos})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.(*tls.Conn).Handshake()
	}()
	return ln.Addr().String()
}

// TestClientConfigVerifiesAndChecksALPN: a client of the run completes a
// handshake with h2 negotiated, and CheckALPN refuses a server that picks
// no protocol.
func TestClientConfigVerifiesAndChecksALPN(t *testing.T) {
	set := newSet(t)
	cfg, err := certs.ClientConfig(set.CA)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		protos []string
		ok     bool
	}{{[]string{"h2"}, true}, {nil, false}} {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", serve(t, set, tc.protos), cfg)
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		err = certs.CheckALPN(c.ConnectionState())
		c.Close()
		if (err == nil) != tc.ok {
			t.Errorf("server offering %v: CheckALPN = %v", tc.protos, err)
		}
	}
	other, err := certs.ClientConfig(newSet(t).CA)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := tls.Dial("tcp", serve(t, set, []string{"h2"}), other); err == nil {
		c.Close()
		t.Error("a client with another run's CA completed the handshake")
	}
	if _, err := certs.ClientConfig([]byte("not PEM")); err == nil {
		t.Error("ClientConfig took a file that holds no certificate")
	}
}
