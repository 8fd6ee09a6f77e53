package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/grpcbench/grpcbench/orchestrator/internal/certs"
)

// Server is where the probe and the gate reach a server, and how: TLS is
// nil for plaintext h2c, else the run's client configuration
// (certs.ClientConfig), which verifies the server's chain.
type Server struct {
	Target string
	TLS    *tls.Config
}

// dial is a gRPC client of the server: grpc-go's TLS credentials verify
// the chain and refuse a server that negotiates another protocol than h2.
func (s Server) dial() (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if s.TLS != nil {
		creds = credentials.NewTLS(s.TLS)
	}
	conn, err := grpc.NewClient(s.Target, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", s.Target, err)
	}
	return conn, nil
}

// handshakeTimeout bounds one TLS handshake of the gate.
const handshakeTimeout = 5 * time.Second

// handshake opens a connection to the server, completes a TLS handshake
// with the run's configuration and checks that the server chose h2.
func (s Server) handshake(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	d := tls.Dialer{Config: s.TLS}
	c, err := d.DialContext(ctx, "tcp", s.Target)
	if err != nil {
		var rec tls.RecordHeaderError
		if errors.As(err, &rec) {
			return fmt.Errorf("the server does not answer TLS (it sent %q, plaintext HTTP/2 perhaps): %w", rec.RecordHeader[:], err)
		}
		return fmt.Errorf("TLS handshake: %w", err)
	}
	defer c.Close()
	return certs.CheckALPN(c.(*tls.Conn).ConnectionState())
}

// answersWithoutTLS says the server accepted a connection and answered it,
// but not with a TLS handshake the run's configuration accepts: it is up,
// and the gate says what is wrong. A refused or dropped connection is a
// server still starting.
func (s Server) answersWithoutTLS(ctx context.Context) bool {
	if s.TLS == nil {
		return false
	}
	err := s.handshake(ctx)
	return err != nil && !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ECONNRESET) &&
		!errors.Is(err, io.EOF) && !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
