package ghz

import (
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
)

// TestTailLoadsPastTheWindow: with a tail, ghz goes on loading the server
// after the window, and those calls are not in it.
func TestTailLoadsPastTheWindow(t *testing.T) {
	res, after := loadtest.CallsAfterWindow(t, Run)
	if res.OK == 0 || after <= 8 {
		t.Errorf("%d OK calls in the window, %d calls after it; want some, and more than the 8 in flight", res.OK, after)
	}
}

// TestGHZOverTLS: ghz verifies the chain against the run's CA.
func TestGHZOverTLS(t *testing.T) { loadtest.LoadsOverTLS(t, Run) }
