package h2

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

var streamScenarios = []string{"stream_pingpong", "stream_server", "stream_client"}

// countingStreams is loadtest.Streams that counts the messages the server
// received and sent.
func countingStreams(received, sent *atomic.Int64) loadtest.StreamHandler {
	return func(sc *scenario.Scenario, st grpc.ServerStream) error {
		return loadtest.Streams(sc, countingStream{st, received, sent})
	}
}

type countingStream struct {
	grpc.ServerStream
	received, sent *atomic.Int64
}

func (s countingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		s.received.Add(1)
	}
	return err
}

func (s countingStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err == nil {
		s.sent.Add(1)
	}
	return err
}

// TestH2StreamsAgainstGRPCGo: every streaming kind against grpc-go, every
// message of the window OK, the count in messages (never more than the
// server saw), each with its latency.
func TestH2StreamsAgainstGRPCGo(t *testing.T) {
	for _, name := range streamScenarios {
		t.Run(name, func(t *testing.T) {
			l := loadStreams(t, name, load.Spec{Connections: 2, Concurrency: 16, Warmup: 100 * time.Millisecond, Duration: 500 * time.Millisecond})
			res, sc, counted := l.res, l.sc, l.messages()
			checkAllOK(t, res)
			if got := int64(res.OK + res.WarmupRequests); got > counted {
				t.Errorf("%d messages counted, more than the server's %d", got, counted)
			}
			if sc.Kind == scenario.ClientStreaming && res.OK%uint64(sc.Sends) != 0 {
				t.Errorf("%d messages counted, not a whole number of calls of %d", res.OK, sc.Sends)
			}
			if sc.Kind == scenario.BidiStreaming && l.received.Load() > l.sent.Load()+16 {
				t.Errorf("the server got %d requests and sent %d echoes: more than one request in flight a stream", l.received.Load(), l.sent.Load())
			}
		})
	}
}

// streamLoad is a load of a streaming scenario against grpc-go, and the
// server's count of the requests it got and the answers it sent.
type streamLoad struct {
	res            load.Result
	sc             *scenario.Scenario
	received, sent atomic.Int64
}

// loadStreams runs spec (its target, scenario and kind filled in) against
// a grpc-go server of the streaming scenario name.
func loadStreams(t *testing.T, name string, spec load.Spec) *streamLoad {
	t.Helper()
	l := &streamLoad{}
	spec.ScenarioDir = loadtest.ScenarioDir(name)
	spec.Target, l.sc = loadtest.StartStreamServer(t, spec.ScenarioDir, countingStreams(&l.received, &l.sent))
	spec.Kind = l.sc.Kind
	l.res = mustRun(t, spec)
	return l
}

// messages is what the server saw of the load's messages: those it
// answered (bidi and server streams) or took (client streams).
func (l *streamLoad) messages() int64 {
	if l.sc.Kind == scenario.ClientStreaming {
		return l.received.Load()
	}
	return l.sent.Load()
}

// streamScenario writes a streaming scenario of requests of one string of
// n bytes, m messages a call.
func streamScenario(t *testing.T, method string, n, m int) string {
	t.Helper()
	dir := largeScenario(t, n)
	proto, err := os.ReadFile(filepath.Join(loadtest.ScenarioDir("stream_server"), scenario.ProtoFile))
	if err != nil {
		t.Fatal(err)
	}
	call := fmt.Sprintf(`{"method": "helloworld.StreamingGreeter/%s", "messages": %d}`, method, m)
	payload := fmt.Sprintf(`{"request":{"name":"%0*d"}}`, n, 0)
	if method == "ServerStream" {
		call = `{"method": "helloworld.StreamingGreeter/ServerStream"}`
		payload = fmt.Sprintf(`{"request":{"name":"%0*d"},"replies":%d}`, n, 0, m)
	}
	for file, content := range map[string]string{scenario.ProtoFile: string(proto), scenario.CallFile: call, scenario.PayloadFile: payload} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestH2StreamFlowControl: streams whose messages outgrow the windows. A
// client stream of 40 × 10 kB outgrows grpc-go's first 64 kB stream window,
// so it waits for WINDOW_UPDATEs; a server stream of 2000 × 10 kB outgrows
// half of h2's own stream window, so h2 must send WINDOW_UPDATEs for it
// to go on; a ping-pong of 40 × 20 kB messages spans frames.
func TestH2StreamFlowControl(t *testing.T) {
	for _, tc := range []struct {
		method string
		n, m   int
	}{{"ClientStream", 10_000, 40}, {"ServerStream", 10_000, 2000}, {"PingPong", 20_000, 40}} {
		t.Run(tc.method, func(t *testing.T) {
			dir := streamScenario(t, tc.method, tc.n, tc.m)
			addr, sc := loadtest.StartStreamServer(t, dir, loadtest.Streams)
			res := mustRun(t, load.Spec{Target: addr, ScenarioDir: dir, Kind: sc.Kind,
				Connections: 1, Concurrency: 8, Duration: 2 * time.Second})
			checkAllOK(t, res)
		})
	}
}

// TestH2StreamRules: a server that breaks its kind's rule has its calls
// counted as not OK.
func TestH2StreamRules(t *testing.T) {
	oneShort := func(sc *scenario.Scenario, st grpc.ServerStream) error {
		short := *sc
		short.Replies--
		return loadtest.Streams(&short, st)
	}
	oneMore := func(sc *scenario.Scenario, st grpc.ServerStream) error {
		more := *sc
		more.Replies++
		return loadtest.Streams(&more, st)
	}
	changed := func(sc *scenario.Scenario, st grpc.ServerStream) error {
		return loadtest.Streams(sc, changingStream{st, sc})
	}
	for _, tc := range []struct {
		name, scenario string
		h              loadtest.StreamHandler
	}{
		{"a reply short", "stream_server", oneShort},
		{"a reply more", "stream_server", oneMore},
		{"changed echo", "stream_server", changed},
		{"changed echo (bidi)", "stream_pingpong", changed},
		{"changed echo (client)", "stream_client", changed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := loadtest.ScenarioDir(tc.scenario)
			addr, sc := loadtest.StartStreamServer(t, dir, tc.h)
			res := mustRun(t, load.Spec{Target: addr, ScenarioDir: dir, Kind: sc.Kind,
				Connections: 1, Concurrency: 4, Duration: 300 * time.Millisecond})
			if res.Statuses[StatusMismatch] == 0 {
				t.Errorf("statuses %v: no %s", res.Statuses, StatusMismatch)
			}
		})
	}
}

// changingStream changes the name of every hello it sends.
type changingStream struct {
	grpc.ServerStream
	sc *scenario.Scenario
}

func (s changingStream) SendMsg(m any) error {
	reply := m.(*dynamicpb.Message)
	hello := reply.Mutable(s.sc.Method.Output().Fields().ByNumber(1)).Message()
	name := hello.Descriptor().Fields().ByName("name")
	hello.Set(name, dynamicpb.NewMessage(hello.Descriptor()).Get(name)) // cleared
	return s.ServerStream.SendMsg(reply)
}

// Issue 28's Why 2: a streaming cell's rate is of messages, as its target
// and achieved rate are: at 200 msg/s, streams of 10 messages start 20
// times a second, and the window plans, sends and answers 200 messages a
// second, where streams used to start 200 times a second (2000 msg/s).
func TestStreamRateIsInMessages(t *testing.T) {
	for _, name := range streamScenarios {
		t.Run(name, func(t *testing.T) {
			l := loadStreams(t, name, load.Spec{Connections: 2, Concurrency: 16,
				QPS: 200, Warmup: 250 * time.Millisecond, Duration: time.Second, Grace: 200 * time.Millisecond})
			res := l.res
			checkAccounted(t, res, 200)
			if res.RPS > 200 || res.OK+res.Unanswered != 200 {
				t.Errorf("%.0f msg/s achieved, %d OK and %d unanswered messages; want at most 200, and 200 in all", res.RPS, res.OK, res.Unanswered)
			}
			// The server's messages: those of warm-up, window and grace, 1.45
			// s at 200 a second, where 10 times as many streams would make
			// thousands.
			if counted := l.messages(); counted > 400 {
				t.Errorf("the server saw %d messages in 1.45 s at 200 msg/s", counted)
			}
		})
	}
}
