package docker

import (
	"context"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// TestConnectTakesTLSFromItsSettings: the certificates come from the TLS
// given, not from the process environment, and a folder without them is
// said so before anything is dialled; the docker backend serves tcp://.
func TestConnectTakesTLSFromItsSettings(t *testing.T) {
	t.Setenv("DOCKER_CERT_PATH", "")
	dir := t.TempDir()
	_, err := backend.Connect(context.Background(), backend.Target{Role: "servers", Address: "tcp://127.0.0.1:1", TLS: backend.TLS{Verify: true, CertPath: dir}})
	if err == nil || !strings.Contains(err.Error(), "TLS certificates in "+dir) {
		t.Errorf("Connect with an empty certificate folder = %v, want it named", err)
	}
}
