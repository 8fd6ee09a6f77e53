package docker

import (
	"context"
	"strings"
	"testing"
)

// TestConnectTakesTLSFromItsSettings: the certificates come from the TLS
// given, not from the process environment, and a folder without them is
// said so before anything is dialled.
func TestConnectTakesTLSFromItsSettings(t *testing.T) {
	t.Setenv("DOCKER_CERT_PATH", "")
	dir := t.TempDir()
	_, err := Connect(context.Background(), "servers", "tcp://127.0.0.1:1", TLS{Verify: true, CertPath: dir})
	if err == nil || !strings.Contains(err.Error(), "TLS certificates in "+dir) {
		t.Errorf("Connect with an empty certificate folder = %v, want it named", err)
	}
}
