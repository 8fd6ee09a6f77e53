package h2load

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

func TestParse(t *testing.T) {
	out, err := os.ReadFile("testdata/h2load-2b.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(string(out))
	if err != nil {
		t.Fatal(err)
	}
	// The main duration's rate, not requests over the whole run with its warm-up.
	if math.Abs(res.RPS-21334.2) > 0.01 || res.OK != 213342 || res.Requests != 213342 {
		t.Errorf("rps %v ok %d requests %d", res.RPS, res.OK, res.Requests)
	}
	if res.Latency.Mean != 4470*time.Microsecond || res.Latency.Max != 105050*time.Microsecond {
		t.Errorf("latency %+v", res.Latency)
	}
	if _, err := Parse("connect: connection refused\n"); err == nil {
		t.Error("a failed h2load run parsed")
	}
}

// TestTLSIsRefused: h2load cannot verify a chain, so a TLS spec gets no
// client, with the reason.
func TestTLSIsRefused(t *testing.T) {
	sc, err := scenario.Load(context.Background(), loadtest.ScenarioDir("complex_proto"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (tool{}).Client(load.Spec{Connections: 1, Concurrency: 1}, sc); err != nil {
		t.Fatalf("plaintext: %v", err)
	}
	_, err = (tool{}).Client(load.Spec{Connections: 1, Concurrency: 1, CAFile: "/input/tls/ca.crt"}, sc)
	if err == nil || !strings.Contains(err.Error(), "cannot verify") {
		t.Errorf("TLS spec: %v, want a refusal saying why", err)
	}
}

// With a rate, h2load says that it ignores it.
func TestRateIsSaidToBeIgnored(t *testing.T) {
	out, err := os.ReadFile("testdata/h2load-2b.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, qps := range []int{0, 500} {
		res, err := tool{}.Parse(out, load.Spec{QPS: qps, Warmup: time.Second}, time.Now().Add(-10*time.Second), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		said := strings.Contains(strings.Join(res.Notes, "\n"), "h2load ignores the rate of 500 req/s")
		if said != (qps > 0) {
			t.Errorf("at %d req/s: notes %q", qps, res.Notes)
		}
	}
}
