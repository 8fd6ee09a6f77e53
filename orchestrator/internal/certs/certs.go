// Package certs makes a run's throwaway certificate authority and the
// server certificate it signs, and the TLS configuration with which every
// client of the run verifies a server against that authority.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// ServerName is the name the server certificate is for and every client
// asks for: the clients reach a server at a loopback address, or at
// GRPC_SERVER_ADDRESS, which the certificate does not name.
const ServerName = "localhost"

// ALPN is the one application protocol a client offers and accepts.
const ALPN = "h2"

// Validity is how long the certificates are valid: longer than a run of
// the whole catalog, and no longer, since nothing keeps them.
const Validity = 48 * time.Hour

// Set is a run's CA certificate and the server certificate it signed, with
// the server's key, all PEM: what the servers and the clients are given.
type Set struct {
	// CA is the authority's certificate, the clients' one root.
	CA []byte
	// Cert is the server's certificate chain: its own, then the CA's.
	Cert []byte
	// Key is the server's ECDSA P-256 key, PKCS#8.
	Key []byte
}

// New makes a CA and a server certificate for localhost, 127.0.0.1 and
// ::1, valid from a minute before now (clocks of containers and hosts
// differ a little) for Validity. The CA's key is dropped: nothing else is
// ever signed with it.
func New(now time.Time) (*Set, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make the CA's key: %w", err)
	}
	notBefore, notAfter := now.Add(-time.Minute), now.Add(Validity)
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "grpcbench run CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("sign the CA's certificate: %w", err)
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, fmt.Errorf("read the CA's certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make the server's key: %w", err)
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: ServerName},
		DNSNames:     []string{ServerName},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("sign the server's certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode the server's key: %w", err)
	}
	caPEM := pemBlock("CERTIFICATE", caDER)
	return &Set{
		CA:   caPEM,
		Cert: append(pemBlock("CERTIFICATE", leafDER), caPEM...),
		Key:  pemBlock("PRIVATE KEY", keyDER),
	}, nil
}

// serial is a random 128-bit serial number, as RFC 5280 asks (positive,
// at most 20 bytes).
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128)) // crypto/rand does not fail
	return n.Add(n, big.NewInt(1))
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// ClientConfig is the TLS configuration of a client of the run: the CA
// (PEM) its only root, ServerName the name checked, h2 the only protocol
// offered. A connection made with it must still pass CheckALPN.
func ClientConfig(caPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the CA file holds no PEM certificate")
	}
	return &tls.Config{RootCAs: pool, ServerName: ServerName, NextProtos: []string{ALPN}, MinVersion: tls.VersionTLS12}, nil
}

// CheckALPN refuses a connection on which the server did not choose h2:
// Go's client goes on without a protocol when the server picks none.
func CheckALPN(st tls.ConnectionState) error {
	if st.NegotiatedProtocol != ALPN {
		return fmt.Errorf("the server negotiated ALPN protocol %q, not %q", st.NegotiatedProtocol, ALPN)
	}
	return nil
}
