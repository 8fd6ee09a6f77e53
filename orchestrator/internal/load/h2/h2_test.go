package h2

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// h2Limit bounds every run of h2 in these tests: a run that hangs
// fails its test instead of the test binary.
const h2Limit = 20 * time.Second

// runH2 runs h2 in a goroutine and fails the test if it does not
// return within h2Limit. It also returns how long the run took.
func runH2(t *testing.T, ctx context.Context, spec load.Spec) (load.Result, time.Duration, error) {
	t.Helper()
	type outcome struct {
		res load.Result
		err error
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		res, err := Run(ctx, spec)
		done <- outcome{res, err}
	}()
	timer := time.NewTimer(h2Limit)
	defer timer.Stop()
	select {
	case o := <-done:
		return o.res, time.Since(start), o.err
	case <-timer.C:
		t.Fatalf("H2 did not return within %v (spec %+v)", h2Limit, spec)
		return load.Result{}, 0, nil
	}
}

// mustRun is runH2 for runs that must not fail.
func mustRun(t *testing.T, spec load.Spec) load.Result {
	t.Helper()
	res, took, err := runH2(t, context.Background(), spec)
	if err != nil {
		t.Fatalf("H2: %v", err)
	}
	t.Logf("took %v: requests %d ok %d rps %.0f statuses %v errors %v warmup %d latency %+v",
		took.Round(time.Millisecond), res.Requests, res.OK, res.RPS, res.Statuses, res.Errors, res.WarmupRequests, res.Latency)
	return res
}

// checkAllOK fails unless every call of the window was OK and measured.
func checkAllOK(t *testing.T, res load.Result) {
	t.Helper()
	if res.OK == 0 {
		t.Errorf("no OK call: %+v", res)
	}
	if res.Requests != res.OK || len(res.Statuses) != 1 {
		t.Errorf("%d of %d calls not OK: statuses %v", res.Requests-res.OK, res.Requests, res.Statuses)
	}
	if res.Latency.Count != res.OK {
		t.Errorf("latency count %d, want OK %d", res.Latency.Count, res.OK)
	}
	if len(res.Errors) != 0 {
		t.Errorf("connection errors %v", res.Errors)
	}
	checkPercentiles(t, res.Latency)
}

// checkPercentiles fails unless the percentile list holds every quantile
// of HDRQuantiles, rising, with the median the P50 and none above the max.
func checkPercentiles(t *testing.T, l load.Latency) {
	t.Helper()
	if len(l.Percentiles) != len(load.HDRQuantiles) || l.Percentiles[0].Latency != l.P50 {
		t.Fatalf("percentiles %v, want %d from p50 %v", l.Percentiles, len(load.HDRQuantiles), l.P50)
	}
	for i, p := range l.Percentiles {
		if p.Q != load.HDRQuantiles[i] || (i > 0 && p.Latency < l.Percentiles[i-1].Latency) || p.Latency > l.Max {
			t.Errorf("percentile %d is %+v in %v (max %v)", i, p, l.Percentiles, l.Max)
		}
	}
}

func TestH2EchoAgainstGRPCGo(t *testing.T) {
	addr := loadtest.StartServer(t, "complex_proto", loadtest.Echo)
	res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
		Connections: 4, Concurrency: 64, Warmup: 200 * time.Millisecond, Duration: time.Second})
	checkAllOK(t, res)
	if res.WarmupRequests == 0 {
		t.Errorf("no call in the warm-up")
	}
	if want := float64(res.OK) / time.Second.Seconds(); math.Abs(res.RPS-want) > 1e-6*want {
		t.Errorf("RPS %f, want OK per second of window %f", res.RPS, want)
	}
	if res.End.Sub(res.Start) != time.Second {
		t.Errorf("window %v, want 1s", res.End.Sub(res.Start))
	}
}

// countingEcho is echo that counts its calls.
func countingEcho(n *atomic.Int64) loadtest.Handler {
	return func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
		n.Add(1)
		return loadtest.Echo(sc, req)
	}
}

// Requests and answers of 10 kB, 1600 calls in flight: the client runs out
// of the server's connection window at once and must send the rest of its
// requests as WINDOW_UPDATEs come.
func TestH2FlowControl(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []grpc.ServerOption
	}{
		{"default windows", nil},
		// grpc-go's smallest windows; they also turn its BDP estimation off,
		// so the windows stay at 64 KiB for the whole run.
		{"64KiB windows", []grpc.ServerOption{grpc.InitialWindowSize(65535), grpc.InitialConnWindowSize(65535)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var handled atomic.Int64
			addr := loadtest.StartServer(t, "string_10kB", countingEcho(&handled), tc.opts...)
			res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("string_10kB"),
				Connections: 4, Concurrency: 4 * 400, Warmup: 200 * time.Millisecond, Duration: time.Second})
			checkAllOK(t, res)
			if got := uint64(handled.Load()); got < res.OK+res.WarmupRequests {
				t.Errorf("server handled %d calls, fewer than the %d OK the client counted", got, res.OK+res.WarmupRequests)
			}
		})
	}
}

// concurrencyTracker is a handler that records the most calls it had in
// progress at once.
type concurrencyTracker struct {
	cur, peak atomic.Int64
}

func (c *concurrencyTracker) handle(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
	n := c.cur.Add(1)
	defer c.cur.Add(-1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	time.Sleep(time.Millisecond)
	return loadtest.Echo(sc, req)
}

// The server allows 10 streams; the client wants 100 in flight on its one
// connection. It must keep to 10: a stream over the limit is refused
// (RST_STREAM REFUSED_STREAM) and would count as Unavailable.
func TestH2MaxConcurrentStreams(t *testing.T) {
	spec := load.Spec{ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 1, Concurrency: 100,
		Warmup: 100 * time.Millisecond, Duration: time.Second}

	t.Run("limit 10", func(t *testing.T) {
		var tr concurrencyTracker
		spec := spec
		spec.Target = loadtest.StartServer(t, "complex_proto", tr.handle, grpc.MaxConcurrentStreams(10))
		res := mustRun(t, spec)
		checkAllOK(t, res)
		peak := tr.peak.Load()
		t.Logf("most calls in the handler at once: %d", peak)
		if peak > 10 {
			t.Errorf("server saw %d calls at once, over its limit of 10", peak)
		}
		if peak < 5 {
			t.Errorf("server saw at most %d calls at once: the client did not use the 10 streams it had", peak)
		}
	})
	// Without the limit the same handler sees more than 10 at once: the
	// tracker can see a broken limit.
	t.Run("no limit", func(t *testing.T) {
		var tr concurrencyTracker
		spec := spec
		spec.Target = loadtest.StartServer(t, "complex_proto", tr.handle)
		res := mustRun(t, spec)
		checkAllOK(t, res)
		if peak := tr.peak.Load(); peak <= 10 {
			t.Errorf("without a stream limit the server saw only %d calls at once", peak)
		}
	})
}

// The server ends every connection after about 300 ms with GOAWAY;
// h2 drains the old connection and opens a new one.
func TestH2GoAway(t *testing.T) {
	const conns = 2
	addr, lis := loadtest.StartCountingServer(t, "complex_proto", loadtest.Echo, grpc.KeepaliveParams(keepalive.ServerParameters{
		MaxConnectionAge:      300 * time.Millisecond,
		MaxConnectionAgeGrace: 2 * time.Second,
	}))
	res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
		Connections: conns, Concurrency: 64, Duration: 2 * time.Second})
	accepted := lis.Accepted()
	t.Logf("connections accepted: %d; not OK: %d of %d (%.3f%%)",
		accepted, res.Requests-res.OK, res.Requests, 100*errorShare(res))
	if res.OK == 0 {
		t.Fatalf("no OK call: %+v", res)
	}
	// Each connection lives 300 ms ± 10% and the run lasts 2 s: each slot
	// needs at least 5 connections; 2 per slot is a lenient floor.
	if accepted < 2*conns {
		t.Errorf("server accepted %d connections for %d slots over 2 s: h2 did not reconnect after GOAWAY", accepted, conns)
	}
	// grpc-go's graceful GOAWAY (a first one with the highest stream id, a
	// second after a PING round trip) lets every call already sent finish:
	// none should be lost.
	if errorShare(res) > 0.01 {
		t.Errorf("%.2f%% of calls not OK across GOAWAYs (statuses %v), want at most 1%%", 100*errorShare(res), res.Statuses)
	}
	if res.Latency.Count != res.OK {
		t.Errorf("latency count %d, want OK %d", res.Latency.Count, res.OK)
	}
}

func TestH2NonOKStatus(t *testing.T) {
	spec := load.Spec{ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 2, Concurrency: 16,
		Warmup: 100 * time.Millisecond, Duration: 500 * time.Millisecond}

	t.Run("always NotFound", func(t *testing.T) {
		spec := spec
		spec.Target = loadtest.StartServer(t, "complex_proto", func(*scenario.Scenario, *dynamicpb.Message) (*dynamicpb.Message, error) {
			return nil, status.Error(codes.NotFound, "nope")
		})
		res := mustRun(t, spec)
		if res.Requests == 0 {
			t.Fatalf("no call completed: %+v", res)
		}
		if res.OK != 0 || res.Statuses["NotFound"] != res.Requests || len(res.Statuses) != 1 {
			t.Errorf("statuses %v of %d requests, OK %d; want all NotFound", res.Statuses, res.Requests, res.OK)
		}
		if res.RPS != 0 || res.Latency.Count != 0 || res.Latency.Max != 0 || res.Latency.Mean != 0 {
			t.Errorf("failed calls measured: RPS %f, latency %+v", res.RPS, res.Latency)
		}
		if len(res.Errors) != 0 {
			t.Errorf("a failed call is not a connection error: %v", res.Errors)
		}
	})

	// Trailers over 16 KiB: grpc-go sends them as a HEADERS frame with
	// END_STREAM and a CONTINUATION frame with END_HEADERS.
	t.Run("NotFound with a 20 kB message", func(t *testing.T) {
		spec := spec
		spec.Target = loadtest.StartServer(t, "complex_proto", func(*scenario.Scenario, *dynamicpb.Message) (*dynamicpb.Message, error) {
			return nil, status.Error(codes.NotFound, strings.Repeat("x", 20_000))
		})
		res := mustRun(t, spec)
		if res.Requests == 0 || res.Statuses["NotFound"] != res.Requests || len(res.Statuses) != 1 {
			t.Errorf("statuses %v of %d requests; want all NotFound, and some", res.Statuses, res.Requests)
		}
	})

	t.Run("every other NotFound", func(t *testing.T) {
		var n atomic.Int64
		spec := spec
		spec.Target = loadtest.StartServer(t, "complex_proto", func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
			if n.Add(1)%2 == 0 {
				return nil, status.Error(codes.NotFound, "nope")
			}
			return loadtest.Echo(sc, req)
		})
		res := mustRun(t, spec)
		nf := res.Statuses["NotFound"]
		if res.OK == 0 || nf == 0 {
			t.Fatalf("OK %d, NotFound %d: want both", res.OK, nf)
		}
		if res.OK+nf != res.Requests || len(res.Statuses) != 2 {
			t.Errorf("OK %d + NotFound %d != requests %d (statuses %v)", res.OK, nf, res.Requests, res.Statuses)
		}
		if res.Latency.Count != res.OK {
			t.Errorf("latency count %d, want OK %d", res.Latency.Count, res.OK)
		}
		// The server alternates; the window cuts its sequence at two points,
		// each blurred by at most the calls in flight.
		if diff := int64(res.OK) - int64(nf); diff > 2*int64(spec.Concurrency)+1 || -diff > 2*int64(spec.Concurrency)+1 {
			t.Errorf("OK %d and NotFound %d differ by more than the calls in flight can explain", res.OK, nf)
		}
	})
}

// changedName answers with the request's inner message, its name changed.
func changedName(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
	inner := proto.Clone(req.Get(sc.Method.Input().Fields().ByNumber(1)).Message().Interface()).(*dynamicpb.Message)
	name := inner.Descriptor().Fields().ByName("name")
	inner.Set(name, protoreflect.ValueOfString(inner.Get(name).String()+"x"))
	reply := sc.NewResponse()
	reply.Set(sc.Method.Output().Fields().ByNumber(1), protoreflect.ValueOfMessage(inner))
	return reply, nil
}

func TestH2PayloadMismatch(t *testing.T) {
	addr := loadtest.StartServer(t, "complex_proto", changedName)
	res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
		Connections: 2, Concurrency: 16, Warmup: 100 * time.Millisecond, Duration: 500 * time.Millisecond})
	if res.Requests == 0 {
		t.Fatalf("no call completed: %+v", res)
	}
	if res.OK != 0 || res.Statuses[StatusMismatch] != res.Requests || len(res.Statuses) != 1 {
		t.Errorf("statuses %v of %d requests; want all %s", res.Statuses, res.Requests, StatusMismatch)
	}
	if res.Latency.Count != 0 || res.RPS != 0 {
		t.Errorf("mismatched calls measured: RPS %f, latency %+v", res.RPS, res.Latency)
	}
}

// testCall is the call of the complex_proto scenario.
func testCall(t testing.TB) *call {
	t.Helper()
	c, err := newCall(context.Background(), "127.0.0.1:1", loadtest.ScenarioDir("complex_proto"), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// innerFields splits the expected answer into its inner message's fields,
// each with its tag, in the order they were encoded.
func innerFields(t testing.TB, c *call) [][]byte {
	t.Helper()
	msg, ok := grpcMessage(c.expect)
	if !ok {
		t.Fatalf("expected answer %x is not one gRPC message", c.expect)
	}
	num, typ, n := protowire.ConsumeTag(msg)
	if num != 1 || typ != protowire.BytesType || n < 0 {
		t.Fatalf("answer does not start with field 1: %x", msg)
	}
	inner, m := protowire.ConsumeBytes(msg[n:])
	if m < 0 || n+m != len(msg) {
		t.Fatalf("answer is not one field 1: %x", msg)
	}
	var fields [][]byte
	for len(inner) > 0 {
		_, typ, n := protowire.ConsumeTag(inner)
		if n < 0 {
			t.Fatalf("bad tag in %x", inner)
		}
		m := protowire.ConsumeFieldValue(0, typ, inner[n:])
		if m < 0 {
			t.Fatalf("bad field in %x", inner)
		}
		fields = append(fields, inner[:n+m])
		inner = inner[n+m:]
	}
	return fields
}

// frameMessage is a message in gRPC's framing: flag 0, length, bytes.
func frameMessage(msg []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...)
}

// reply wraps inner message bytes as a HelloReply in a gRPC frame.
func reply(fields ...[]byte) []byte {
	inner := bytes.Join(fields, nil)
	msg := protowire.AppendTag(nil, 1, protowire.BytesType)
	msg = protowire.AppendBytes(msg, inner)
	return frameMessage(msg)
}

// answers are bodies that mean the echo though their bytes differ, and
// bodies that do not.
func answers(t testing.TB, c *call) (echoes, others map[string][]byte) {
	fields := innerFields(t, c)
	if len(fields) < 3 {
		t.Fatalf("complex_proto's message has %d fields, want several", len(fields))
	}
	// name is field 1, encoded first; repeated pets stay in order.
	name := fields[0]
	if num, _, _ := protowire.ConsumeTag(name); num != 1 {
		t.Fatalf("first field is %d, want name (1)", num)
	}
	rotated := append(append([][]byte{}, fields[1:]...), name)
	otherName := protowire.AppendTag(nil, 1, protowire.BytesType)
	otherName = protowire.AppendString(otherName, "someone else")
	changed := append([][]byte{otherName}, fields[1:]...)

	compressed := bytes.Clone(c.expect)
	compressed[0] = 1
	echoes = map[string][]byte{
		"expected bytes":      c.expect,
		"fields reordered":    reply(rotated...),
		"name set twice":      reply(append([][]byte{otherName}, fields...)...), // the last one wins
		"rebuilt from fields": reply(fields...),
	}
	others = map[string][]byte{
		"name changed":       reply(changed...),
		"name dropped":       reply(fields[1:]...),
		"compressed flag":    compressed,
		"truncated":          c.expect[:len(c.expect)-3],
		"length prefix only": c.expect[:5],
		"empty":              nil,
		"two messages":       append(bytes.Clone(c.expect), c.expect...),
		"trailing byte":      append(bytes.Clone(c.expect), 0),
		"not protobuf":       frameMessage([]byte{0xff, 0xff, 0xff}),
		"empty reply":        frameMessage(nil),
	}
	return echoes, others
}

func TestCallIsEcho(t *testing.T) {
	c := testCall(t)
	echoes, others := answers(t, c)
	for name, body := range echoes {
		if !c.isEcho(body) {
			t.Errorf("%s: isEcho(%x) = false, want true", name, body)
		}
	}
	for name, body := range others {
		if c.isEcho(body) {
			t.Errorf("%s: isEcho(%x) = true, want false", name, body)
		}
	}
	if !bytes.Equal(reply(innerFields(t, c)...), c.expect) {
		t.Errorf("the expected answer is not the request's inner message as field 1")
	}
}

// TestConnOutcome feeds answers to compare in pieces, as DATA frames bring
// them, and checks the status outcome gives the call.
func TestConnOutcome(t *testing.T) {
	c := testCall(t)
	cn := &conn{call: c}
	answered := func(body []byte, chunk int) *stream {
		s := &stream{id: 1, active: true, httpStatus: 200, grpcStatus: 0, grpcContent: true}
		for len(body) > 0 {
			n := min(chunk, len(body))
			// compare must not keep the frame's buffer: overwrite it after.
			buf := bytes.Clone(body[:n])
			cn.compare(s, buf)
			for i := range buf {
				buf[i] ^= 0xff
			}
			body = body[n:]
		}
		return s
	}
	echoes, others := answers(t, c)
	for _, chunk := range []int{1, 7, 1 << 20} {
		for name, body := range echoes {
			if got := cn.outcome(answered(body, chunk)); got != "OK" {
				t.Errorf("%s in pieces of %d: outcome %q, want OK", name, chunk, got)
			}
		}
		for name, body := range others {
			if got := cn.outcome(answered(body, chunk)); got != StatusMismatch {
				t.Errorf("%s in pieces of %d: outcome %q, want %s", name, chunk, got, StatusMismatch)
			}
		}
	}

	for _, tc := range []struct {
		name string
		edit func(*stream)
		want string
	}{
		{"no :status", func(s *stream) { s.httpStatus = -1 }, "Internal"},
		{"HTTP 404", func(s *stream) { s.httpStatus = 404 }, "Unimplemented"},
		{"HTTP 503", func(s *stream) { s.httpStatus = 503 }, "Unavailable"},
		{"HTTP 500", func(s *stream) { s.httpStatus = 500 }, "Unknown"},
		{"not application/grpc", func(s *stream) { s.grpcContent = false }, "Internal"},
		{"no grpc-status", func(s *stream) { s.grpcStatus = -1 }, "Internal"},
		{"grpc-status 5", func(s *stream) { s.grpcStatus = 5 }, "NotFound"},
		{"grpc-status 14", func(s *stream) { s.grpcStatus = 14 }, "Unavailable"},
		{"grpc-status 99", func(s *stream) { s.grpcStatus = 99 }, "Code(99)"},
	} {
		s := answered(c.expect, 1<<20)
		tc.edit(s)
		if got := cn.outcome(s); got != tc.want {
			t.Errorf("%s: outcome %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestConnRemembersEchoes: an answer whose bytes differ from the expected
// ones but mean the echo is checked by meaning once per connection; the same
// bytes later are compared, and other bytes are still checked.
func TestConnRemembersEchoes(t *testing.T) {
	c := testCall(t)
	byMeaning := 0
	isEcho := c.isEcho
	c.isEcho = func(body []byte) bool { byMeaning++; return isEcho(body) }
	cn := &conn{call: c}
	echoes, others := answers(t, c)
	finish := func(body []byte) string {
		s := &stream{id: 1, active: true, httpStatus: 200, grpcContent: true}
		cn.compare(s, bytes.Clone(body))
		return cn.outcome(s)
	}
	for range 3 {
		if got := finish(echoes["fields reordered"]); got != "OK" {
			t.Fatalf("reordered echo: %q", got)
		}
	}
	if byMeaning != 1 {
		t.Errorf("the same reordered answer was checked by meaning %d times, want once", byMeaning)
	}
	for name, body := range others {
		if got := finish(body); got != StatusMismatch {
			t.Errorf("%s after a remembered echo: %q", name, got)
		}
	}
	if len(cn.echoes) != 1 {
		t.Errorf("%d encodings remembered, want 1 (wrong answers are not)", len(cn.echoes))
	}
	// Encodings past the limit are still judged, just not remembered.
	name := innerFields(t, c)[0]
	for i := range maxEchoes + 2 {
		padded := reply(append(slices.Repeat([][]byte{name}, i+2), innerFields(t, c)[1:]...)...)
		if got := finish(padded); got != "OK" {
			t.Errorf("name repeated %d times: %q", i+2, got)
		}
	}
	if len(cn.echoes) != maxEchoes {
		t.Errorf("%d encodings remembered, want at most %d", len(cn.echoes), maxEchoes)
	}
}

// An open loop: 500 calls per second over 2 connections, evenly spaced
// and as a Poisson process.
func TestH2OpenLoop(t *testing.T) {
	const qps = 500
	addr := loadtest.StartServer(t, "complex_proto", loadtest.Echo)
	for _, arrivals := range []load.Arrivals{load.ArrivalsConstant, load.ArrivalsPoisson} {
		t.Run(string(arrivals), func(t *testing.T) {
			res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
				Connections: 2, Concurrency: 100, QPS: qps, Arrivals: arrivals, Warmup: 200 * time.Millisecond, Duration: 2 * time.Second})
			checkAllOK(t, res)
			t.Logf("RPS %.1f for a rate of %d (%+.2f%%), late %d, service %+v, notes %q", res.RPS, qps, 100*(res.RPS-qps)/qps, res.Late, res.Service, res.Notes)
			// The schedule is never overtaken (a closed loop would answer
			// thousands a second here); how close a busy machine keeps to it
			// is measured, not asserted: a stalled test process falls behind
			// for reasons of its own. A Poisson count over 1000 calls varies
			// by about 3%.
			if res.RPS > 1.15*qps || res.RPS < 0.5*qps {
				t.Errorf("RPS %.1f, want about %d and more than half of it", res.RPS, qps)
			}
			// 200 ms of warm-up at 500/s is 100 calls; a stall of the machine
			// at the boundary moves a few across it.
			if res.WarmupRequests < 60 || res.WarmupRequests > 140 {
				t.Errorf("%d calls in the 200 ms warm-up, want about 100", res.WarmupRequests)
			}
			// Latencies run from the intended send time: never negative, and
			// small against a local server that keeps up with the rate; the
			// service latency, from the actual send, is never longer.
			l := res.Latency
			if l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.Max || l.Mean <= 0 || l.Mean > l.Max {
				t.Errorf("latency figures out of order: %+v", l)
			}
			if l.Max > time.Second {
				t.Errorf("max latency %v: the schedule fell behind", l.Max)
			}
			if s := res.Service; s == nil || s.Count != l.Count || s.Mean > l.Mean || s.Max > l.Max || s.P50 <= 0 {
				t.Errorf("service latency %+v beside latency %+v, want as many calls, none longer", s, l)
			}
			// The pacer's lateness, of the calls it started itself.
			if p := res.Pacer; p == nil || p.Count == 0 || p.Count > res.Planned || p.Max > l.Max {
				t.Errorf("pacer lateness %+v, want of some of the %d calls planned, none later than the latency's max %v", p, res.Planned, l.Max)
			}
		})
	}
}

// A closed loop has no schedule: no service latency, no late call.
func TestH2ClosedLoopHasNoSchedule(t *testing.T) {
	addr := loadtest.StartServer(t, "complex_proto", loadtest.Echo)
	res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
		Connections: 1, Concurrency: 4, Warmup: 100 * time.Millisecond, Duration: 500 * time.Millisecond})
	checkAllOK(t, res)
	if res.Service != nil || res.Late != 0 || len(res.Notes) != 0 {
		t.Errorf("closed loop: service %+v, late %d, notes %q; want none", res.Service, res.Late, res.Notes)
	}
}

// A cap of one call in flight against a rate the server cannot answer in
// time: calls start late, because of the cap, and the result says so.
func TestH2OpenLoopCapHoldsCallsBack(t *testing.T) {
	addr := loadtest.StartServer(t, "complex_proto", func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
		time.Sleep(5 * time.Millisecond)
		return loadtest.Echo(sc, req)
	})
	res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
		Connections: 1, Concurrency: 1, QPS: 1000, Warmup: 100 * time.Millisecond, Duration: time.Second})
	t.Logf("late %d, service %+v, notes %q", res.Late, res.Service, res.Notes)
	// One call at a time of 5 ms or more: at most 200 of the window's
	// 1000 calls start in it, 200 more in the grace of a second after it,
	// no more than a few on time, and the others are unanswered.
	if res.OK > 450 || res.Late < 900 || res.OK+res.Unanswered != 1000 {
		t.Errorf("OK %d, late %d, unanswered %d; want at most 450 answered, at least 900 of 1000 late, the others unanswered", res.OK, res.Late, res.Unanswered)
	}
	if res.Service == nil || res.Latency.P50 < 10*res.Service.P50 {
		t.Errorf("latency p50 %v, service p50 %v: calls held back 0.1 s and more, want the first ten times the second", res.Latency.P50, res.Service)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"started more than 1ms after their intended start", "the cap of 1 calls in flight held back", "the rate was not sustained"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q do not say %q", res.Notes, want)
		}
	}
}

// refusedAddr is a loopback port that refuses connections for the test's
// length: bound and not listening, so that no other listener takes it. A
// port freed again is not: the kernel handed one to a gRPC server of a
// package tested in parallel, which answered h2 with Unimplemented.
func refusedAddr(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
}

func TestH2ServerDown(t *testing.T) {
	res, took, err := runH2(t, context.Background(), load.Spec{Target: refusedAddr(t), ScenarioDir: loadtest.ScenarioDir("complex_proto"),
		Connections: 2, Concurrency: 4, Duration: time.Second})
	if err != nil {
		t.Fatalf("H2: %v", err)
	}
	t.Logf("took %v: %+v", took, res)
	if took > 3*time.Second {
		t.Errorf("a 1 s run against no server took %v", took)
	}
	if res.OK != 0 || res.Requests != 0 || res.RPS != 0 {
		t.Errorf("calls counted with no server: %+v", res)
	}
	var attempts uint64
	for msg, n := range res.Errors {
		if !strings.HasPrefix(msg, "connection: ") {
			t.Errorf("error %q does not say it is a connection's", msg)
		}
		attempts += n
	}
	// Each slot tries at once, then every 100 ms: about 10 a slot.
	if attempts < 2 || attempts > 2*(10+5) {
		t.Errorf("%d connection attempts failed in 1 s for 2 slots (errors %v)", attempts, res.Errors)
	}
}

// A server that accepts connections and closes them at once: h2
// reconnects, as it does when it cannot connect at all, every 100 ms, and
// counts the failures by kind rather than one by one.
func TestH2ServerClosesConnections(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := &loadtest.CountingListener{Listener: inner}
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			nc, err := lis.Accept()
			if err != nil {
				return
			}
			nc.Close()
		}
	}()
	defer func() {
		lis.Close()
		<-accepting
	}()
	res, took, err := runH2(t, context.Background(), load.Spec{Target: inner.Addr().String(), ScenarioDir: loadtest.ScenarioDir("complex_proto"),
		Connections: 2, Concurrency: 4, Duration: time.Second})
	if err != nil {
		t.Fatalf("H2: %v", err)
	}
	var failures uint64
	for _, n := range res.Errors {
		failures += n
	}
	t.Logf("took %v: %d connections accepted, %d failures under %d messages, statuses %v",
		took, lis.Accepted(), failures, len(res.Errors), res.Statuses)
	if res.OK != 0 || res.Requests != 0 {
		t.Errorf("calls counted against a server that closes every connection: %v", res.Statuses)
	}
	if failures == 0 {
		t.Errorf("no connection error recorded")
	}
	if n := lis.Accepted(); n > 2*(10+5) {
		t.Errorf("%d connections in 1 s for 2 slots: h2 reconnects without pause", n)
	}
	if len(res.Errors) > 4 {
		t.Errorf("%d different error messages for one kind of failure (e.g. %q)", len(res.Errors), anyKey(res.Errors))
	}
}

func anyKey(m map[string]uint64) string {
	for k := range m {
		return k
	}
	return ""
}

func TestH2Cancel(t *testing.T) {
	addr := loadtest.StartServer(t, "complex_proto", loadtest.Echo)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(300*time.Millisecond, cancel)
	_, took, err := runH2(t, ctx, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
		Connections: 4, Concurrency: 64, Warmup: time.Second, Duration: 10 * time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("H2 returned %v, want %v", err, context.Canceled)
	}
	if took > 2*time.Second {
		t.Errorf("H2 took %v to return after a cancel at 300 ms", took)
	}
	t.Logf("returned after %v", took)
}

// largeScenario writes a scenario whose request is one string of n bytes.
func largeScenario(t *testing.T, n int) string {
	t.Helper()
	proto, err := os.ReadFile(filepath.Join(loadtest.ScenarioDir("string_10kB"), scenario.ProtoFile))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("string_%dB", n))
	payload := `{"request":{"name":"` + strings.Repeat("a", n) + `"}}`
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, scenario.ProtoFile), proto, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, scenario.PayloadFile), []byte(payload), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Requests larger than a DATA frame and than h2's write buffer:
// the body goes out in several frames, over several writes.
func TestH2LargeRequests(t *testing.T) {
	for _, n := range []int{100_000, 300_000} {
		t.Run(fmt.Sprintf("%d bytes", n), func(t *testing.T) {
			dir := largeScenario(t, n)
			addr := loadtest.StartServerDir(t, dir, loadtest.Echo)
			res := mustRun(t, load.Spec{Target: addr, ScenarioDir: dir,
				Connections: 2, Concurrency: 8, Duration: 500 * time.Millisecond})
			checkAllOK(t, res)
		})
	}
}

// rawServer is a gRPC echo server written on HTTP/2 frames, for server
// behaviour grpc-go cannot be made to show. The correct answer to the
// h2's requests is their own body (see call.expect).
type rawServer struct {
	settings []http2.Setting
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]bool
	answered atomic.Int64
	// silent, once set, has the server answer no call and ignore its
	// grpc-timeout, as a hung server would; received counts the calls.
	silent   atomic.Bool
	received atomic.Int64
}

func startRawServer(t testing.TB, settings ...http2.Setting) (string, *rawServer) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{settings: settings, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := lis.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[nc] = true
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(nc)
			}()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		s.mu.Lock()
		for nc := range s.conns {
			nc.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return lis.Addr().String(), s
}

func (s *rawServer) serve(nc net.Conn) {
	defer nc.Close()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(nc, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	bw := bufio.NewWriter(nc)
	fr := http2.NewFramer(bw, bufio.NewReader(nc))
	fr.SetMaxReadFrameSize(1<<24 - 1)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	fields := func(kv ...string) []byte {
		block.Reset()
		for i := 0; i < len(kv); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		return block.Bytes()
	}
	if fr.WriteSettings(s.settings...) != nil || bw.Flush() != nil {
		return
	}
	bodies := map[uint32][]byte{}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				err = fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				err = fr.WritePing(true, f.Data)
			}
		case *http2.DataFrame:
			id := f.StreamID
			bodies[id] = append(bodies[id], f.Data()...)
			if n := f.Length; n > 0 {
				err = fr.WriteWindowUpdate(0, n)
			}
			if !f.StreamEnded() {
				if n := f.Length; n > 0 && err == nil {
					err = fr.WriteWindowUpdate(id, n)
				}
				break
			}
			body := bodies[id]
			delete(bodies, id)
			s.received.Add(1)
			if s.silent.Load() {
				break
			}
			if err == nil {
				err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true,
					BlockFragment: fields(":status", "200", "content-type", "application/grpc")})
			}
			if err == nil {
				err = fr.WriteData(id, false, body)
			}
			if err == nil {
				err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true, EndStream: true,
					BlockFragment: fields("grpc-status", "0")})
			}
			s.answered.Add(1)
		}
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			return
		}
	}
}

// SETTINGS_MAX_FRAME_SIZE may be anything from 16 KiB to 16 MiB. A server
// that allows large frames must still get calls.
func TestH2ServerMaxFrameSize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings []http2.Setting
	}{
		{"default", nil},
		{"16 KiB", []http2.Setting{{ID: http2.SettingMaxFrameSize, Val: 16384}}},
		{"1 MiB", []http2.Setting{{ID: http2.SettingMaxFrameSize, Val: 1 << 20}}},
		{"16 MiB", []http2.Setting{{ID: http2.SettingMaxFrameSize, Val: 1<<24 - 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, srv := startRawServer(t, tc.settings...)
			res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
				Connections: 1, Concurrency: 8, Duration: 300 * time.Millisecond})
			checkAllOK(t, res)
			if got := uint64(srv.answered.Load()); got < res.OK {
				t.Errorf("server answered %d calls, the client counted %d OK", got, res.OK)
			}
		})
	}
}

// TestH2CountsAnswersLive: with a counter in the spec, h2 keeps it
// at the OK calls so far, for the live rate a run shows.
func TestH2CountsAnswersLive(t *testing.T) {
	addr := loadtest.StartServer(t, "complex_proto", loadtest.Echo)
	var answered atomic.Uint64
	res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 2, Concurrency: 8,
		Warmup: 200 * time.Millisecond, Duration: 500 * time.Millisecond, Answered: &answered})
	checkAllOK(t, res)
	if n := answered.Load(); n < res.OK+res.WarmupRequests {
		t.Errorf("counted %d answers live, fewer than the %d OK calls of the warm-up and the window", n, res.OK+res.WarmupRequests)
	}
}

// TestTailLoadsPastTheWindow: with a tail, h2 goes on loading the server
// after the window, and those calls are not in it.
func TestTailLoadsPastTheWindow(t *testing.T) {
	res, after := loadtest.CallsAfterWindow(t, Run)
	if res.OK == 0 || after <= 8 {
		t.Errorf("%d OK calls in the window, %d calls after it; want some, and more than the 8 in flight", res.OK, after)
	}
	if d := res.End.Sub(res.Start); d != 500*time.Millisecond {
		t.Errorf("window %v, want 500ms", d)
	}
}

// TestH2OverTLS: the chain is verified and h2 negotiated on every
// connection; a server of another CA, or a plaintext one, gets no call.
func TestH2OverTLS(t *testing.T) { loadtest.LoadsOverTLS(t, Run) }

// errorShare is the share of a result's calls that were not OK.
func errorShare(r load.Result) float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Requests-r.OK) / float64(r.Requests)
}

// TestEndsWarmupWhenSteady: under a steady-state rule h2 opens its window
// once its OK calls per interval are steady, on the same connections.
func TestEndsWarmupWhenSteady(t *testing.T) { loadtest.EndsWarmupWhenSteady(t, Run) }

func TestH2FloodIsBounded(t *testing.T) { loadtest.FloodIsBounded(t, Run) }
