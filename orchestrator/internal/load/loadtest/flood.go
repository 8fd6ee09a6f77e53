package loadtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math/big"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// Flood answers every call with an error of a code and a 4 KiB message
// of its own, drawn at random: what a hostile server sends to grow the
// load result.
func Flood(*scenario.Scenario, *dynamicpb.Message) (*dynamicpb.Message, error) {
	msg := make([]byte, 2048)
	_, _ = rand.Read(msg)
	code, _ := rand.Int(rand.Reader, big.NewInt(1<<20))
	return nil, status.Error(codes.Code(17+code.Int64()), hex.EncodeToString(msg))
}

// FloodIsBounded checks that a tool's result keeps a bounded number of
// error messages and status names, each message bounded, against a server
// that answers each call with a status and message of its own, and that
// the counts still add up.
func FloodIsBounded(t *testing.T, run func(context.Context, load.Spec) (load.Result, error)) {
	t.Helper()
	spec := load.Spec{Target: StartServer(t, "complex_proto", Flood), ScenarioDir: ScenarioDir("complex_proto"), Kind: scenario.Unary,
		Connections: 2, Concurrency: 8, Warmup: 200 * time.Millisecond, Duration: time.Second}
	res, err := run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests < 2*load.MaxDistinct {
		t.Fatalf("%d calls: too few to flood anything", res.Requests)
	}
	var failed uint64
	for name, n := range res.Statuses {
		if name != "OK" {
			failed += n
		}
	}
	if len(res.Statuses) > load.MaxDistinct+2 || res.Statuses[load.Others] == 0 || failed != res.Requests {
		t.Errorf("%d calls, %d status names kept (%d failed calls counted): want at most %d and the rest under %q", res.Requests, len(res.Statuses), failed, load.MaxDistinct+2, load.Others)
	}
	if len(res.Errors) > load.MaxDistinct+1 {
		t.Errorf("%d error messages kept, want at most %d", len(res.Errors), load.MaxDistinct+1)
	}
	for msg := range res.Errors {
		if len(msg) > load.MaxMessage {
			t.Errorf("an error message of %d bytes kept, want at most %d", len(msg), load.MaxMessage)
		}
	}
}
