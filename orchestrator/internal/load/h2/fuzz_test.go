package h2

// h2's reader fed with scripted and arbitrary server bytes: a fake
// net.Conn plays the server, the conn is built as dial builds it, and serve
// must return once the bytes run out.

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// scriptSlots is how many calls a scripted connection keeps in flight
// unless told otherwise: streams 1, 3, 5 and 7 are open when the script
// starts.
const scriptSlots = 4

// scriptConn is the server's side of a connection: it reads an empty
// SETTINGS frame to the client at once, and the script once the client has
// answered it and sent its first calls. Writes are discarded. At the end of
// the script it waits, as a live socket would, for the client's writer to
// run out of work before it reads EOF.
type scriptConn struct {
	prefix, rest []byte // reader goroutine only
	writes       atomic.Int32
	released     chan struct{}
	release      func()
	closed       chan struct{}
	closeOnce    sync.Once
	// idle tells whether the client's writer has nothing to send; busy
	// records that it still had something a second after the script ended.
	idle func() bool
	busy atomic.Bool
}

func newScriptConn(script []byte) *scriptConn {
	var settings bytes.Buffer
	http2.NewFramer(&settings, nil).WriteSettings()
	s := &scriptConn{prefix: settings.Bytes(), rest: script, released: make(chan struct{}), closed: make(chan struct{})}
	var once sync.Once
	s.release = func() { once.Do(func() { close(s.released) }) }
	return s
}

func (s *scriptConn) Read(p []byte) (int, error) {
	if len(s.prefix) > 0 {
		n := copy(p, s.prefix)
		s.prefix = s.prefix[n:]
		return n, nil
	}
	select {
	case <-s.released:
	case <-s.closed:
	}
	select {
	case <-s.closed:
		return 0, net.ErrClosed
	default:
	}
	if len(s.rest) == 0 {
		deadline := time.Now().Add(time.Second)
		for s.idle != nil && !s.idle() {
			if time.Now().After(deadline) {
				s.busy.Store(true)
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		return 0, io.EOF
	}
	n := copy(p, s.rest)
	s.rest = s.rest[n:]
	return n, nil
}

// Write discards; the client's second write (its SETTINGS ack and first
// calls, after the preface) releases the script.
func (s *scriptConn) Write(p []byte) (int, error) {
	select {
	case <-s.closed:
		return 0, net.ErrClosed
	default:
	}
	if s.writes.Add(1) == 2 {
		s.release()
	}
	return len(p), nil
}

func (s *scriptConn) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

func (s *scriptConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (s *scriptConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (s *scriptConn) SetDeadline(time.Time) error      { return nil }
func (s *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (s *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// scriptResult is what a connection recorded from a script.
type scriptResult struct {
	err      error
	statuses map[string]uint64
	opened   uint32 // calls started
}

// scriptSetup is where a scripted connection starts: its slots, its first
// stream id, and the schedule it takes over.
type scriptSetup struct {
	slots   int
	firstID uint32
	plan    *load.Schedule
}

// runScript plays script as the server and checks what must hold whatever
// the server sent: serve returns by itself once the bytes run out, and the
// counts agree with each other.
func runScript(t testing.TB, c *call, script []byte, setup scriptSetup) scriptResult {
	t.Helper()
	nc := newScriptConn(script)
	fallback := time.AfterFunc(time.Second, nc.release) // should the client never write
	defer fallback.Stop()
	rec := scriptCounter()
	slots := cmp.Or(setup.slots, scriptSlots)
	cn := newConn(nc, c, slots, rec, &load.Schedule{})
	cn.nextID = cmp.Or(setup.firstID, 1)
	if setup.plan != nil {
		cn.plan = setup.plan
	}
	// Nothing left to write: no write under way or handed to the writer
	// goroutine, nothing owed, nothing to send, no call to start.
	nc.idle = func() bool {
		if !cn.mu.TryLock() {
			return false
		}
		defer cn.mu.Unlock()
		return cn.closed || !cn.writing && !cn.hasWork(time.Now())
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- cn.serve(stop) }()

	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Second):
		close(stop)
		select {
		case <-done:
			t.Fatalf("serve did not return when the server's bytes ran out, only when stopped; script %x", script)
		case <-time.After(2 * time.Second):
			t.Fatalf("serve did not return when the server's bytes ran out, nor when stopped; script %x", script)
		}
	}
	close(stop)
	if nc.busy.Load() {
		t.Fatalf("the client's writer still had work a second after the server's bytes ran out; script %x", script)
	}

	cn.mu.Lock()
	inflight, opened := cn.inflight, (cn.nextID-cmp.Or(setup.firstID, 1))/2
	active := 0
	for _, s := range cn.ring {
		if s.active {
			active++
		}
	}
	cn.mu.Unlock()
	if inflight != active || inflight < 0 || inflight > slots {
		t.Fatalf("%d calls in flight, %d streams active, %d slots; script %x", inflight, active, slots, script)
	}
	// OK calls are counted by their latencies, the others by status.
	statuses := maps.Clone(rec.statuses)
	if n := rec.hist.TotalCount(); n > 0 {
		statuses["OK"] = uint64(n)
	}
	var sum uint64
	for _, n := range statuses {
		sum += n
	}
	// A stream counts its messages, and once more when it ends in error.
	perCall := uint64(1)
	if c.kind != scenario.Unary {
		perCall = uint64(max(c.replies, len(c.body)/c.message)) + 1
	}
	if sum != rec.requests || rec.requests > uint64(opened)*perCall {
		t.Fatalf("%d requests, %d by status, %d calls opened; script %x", rec.requests, sum, opened, script)
	}
	if c.kind == scenario.Unary && rec.requests+uint64(inflight) > uint64(opened) {
		t.Fatalf("%d finished and %d in flight out of %d opened; script %x", rec.requests, inflight, opened, script)
	}
	return scriptResult{err: err, statuses: statuses, opened: opened}
}

// script writes a server's frames; its HPACK encoder indexes fields, so a
// reader that skips a header block loses track of the table.
type script struct {
	buf   bytes.Buffer
	fr    *http2.Framer
	block bytes.Buffer
	enc   *hpack.Encoder
}

func newScript() *script {
	s := &script{}
	s.fr = http2.NewFramer(&s.buf, nil)
	s.fr.AllowIllegalWrites = true
	s.enc = hpack.NewEncoder(&s.block)
	return s
}

func (s *script) fields(kv ...string) []byte {
	s.block.Reset()
	for i := 0; i < len(kv); i += 2 {
		s.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return bytes.Clone(s.block.Bytes())
}

func (s *script) headers(id uint32, end bool, kv ...string) *script {
	s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true, EndStream: end, BlockFragment: s.fields(kv...)})
	return s
}

var responseHeaders = []string{":status", "200", "content-type", "application/grpc"}

// answer is a whole OK answer: headers, the body in one DATA frame,
// trailers.
func (s *script) answer(id uint32, body []byte) *script {
	s.headers(id, false, responseHeaders...)
	s.fr.WriteData(id, false, body)
	return s.headers(id, true, "grpc-status", "0", "grpc-message", "")
}

func (s *script) bytes() []byte { return bytes.Clone(s.buf.Bytes()) }

type scriptCase struct {
	name   string
	script []byte
	setup  scriptSetup
	want   map[string]uint64
	// drained: the connection ended itself (GOAWAY, stream ids used up)
	// before the server's bytes ran out.
	drained bool
}

func scriptCases(t testing.TB, c *call) []scriptCase {
	echoes, others := answers(t, c)
	exp := c.expect
	var cases []scriptCase
	add := func(name string, s *script, want map[string]uint64) {
		cases = append(cases, scriptCase{name: name, script: s.bytes(), want: want})
	}

	add("OK", newScript().answer(1, exp), map[string]uint64{"OK": 1})
	add("all four OK", newScript().answer(3, exp).answer(1, exp).answer(7, exp).answer(5, exp),
		map[string]uint64{"OK": 4})
	add("re-encoded echo", newScript().answer(1, echoes["fields reordered"]), map[string]uint64{"OK": 1})
	add("changed answer", newScript().answer(1, others["name changed"]), map[string]uint64{StatusMismatch: 1})
	add("truncated answer", newScript().answer(1, others["truncated"]), map[string]uint64{StatusMismatch: 1})

	// A header block split over HEADERS and CONTINUATION frames; the
	// END_STREAM flag is on the HEADERS frame only.
	s := newScript()
	block := s.fields(responseHeaders...)
	s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:1]})
	s.fr.WriteContinuation(1, false, block[1:2])
	s.fr.WriteContinuation(1, true, block[2:])
	s.fr.WriteDataPadded(1, false, exp[:3], make([]byte, 7))
	s.fr.WriteDataPadded(1, false, exp[3:], nil)
	s.headers(1, true, "grpc-status", "0")
	add("headers in CONTINUATION, padded DATA", s, map[string]uint64{"OK": 1})

	s = newScript().headers(1, false, responseHeaders...)
	s.fr.WriteData(1, false, exp)
	trailers := s.fields("grpc-status", "0", "grpc-message", "")
	s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndStream: true, BlockFragment: trailers[:1]})
	s.fr.WriteContinuation(1, true, trailers[1:])
	add("trailers in CONTINUATION", s, map[string]uint64{"OK": 1})

	s = newScript()
	block = s.fields(":status", "200", "content-type", "application/grpc", "grpc-status", "5", "grpc-message", "nope")
	s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndStream: true, BlockFragment: block[:2]})
	s.fr.WriteContinuation(1, false, block[2:4])
	s.fr.WriteContinuation(1, true, block[4:])
	add("trailers-only in CONTINUATION", s, map[string]uint64{"NotFound": 1})

	add("trailers-only NotFound", newScript().headers(1, true, ":status", "200", "content-type", "application/grpc",
		"grpc-status", "5", "grpc-message", "nope"), map[string]uint64{"NotFound": 1})
	add("HTTP 503", newScript().headers(1, true, ":status", "503"), map[string]uint64{"Unavailable": 1})
	add("no trailers", func() *script {
		s := newScript().headers(1, false, responseHeaders...)
		s.fr.WriteData(1, true, exp)
		return s
	}(), map[string]uint64{"Internal": 1})
	add("not gRPC", newScript().headers(1, true, ":status", "200", "content-type", "text/html", "grpc-status", "0"),
		map[string]uint64{"Internal": 1})

	s = newScript()
	s.fr.WriteRSTStream(1, http2.ErrCodeRefusedStream)
	s.fr.WriteRSTStream(3, http2.ErrCodeCancel)
	s.fr.WriteRSTStream(5, http2.ErrCodeInternal)
	s.fr.WriteRSTStream(1, http2.ErrCodeInternal) // already reset: ignored
	add("RST_STREAM", s, map[string]uint64{"Unavailable": 1, "Canceled": 1, "Internal": 1})

	// Settings, flow control and pings in between.
	s = newScript()
	s.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20},
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: 16384},
		http2.Setting{ID: http2.SettingHeaderTableSize, Val: 4096})
	s.fr.WriteSettingsAck()
	s.fr.WriteWindowUpdate(0, 1<<20)
	s.fr.WriteWindowUpdate(1, 1<<20)
	s.fr.WritePing(false, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})
	s.fr.WritePing(true, [8]byte{})
	s.answer(1, exp)
	add("SETTINGS, WINDOW_UPDATE, PING", s, map[string]uint64{"OK": 1})

	// New settings mid-connection, then a call ends and a new one starts
	// under them.
	s = newScript()
	s.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 16384},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535})
	s.fr.WriteRSTStream(1, http2.ErrCodeRefusedStream)
	add("SETTINGS, then RST_STREAM", s, map[string]uint64{"Unavailable": 1})

	// An answer on a stream the client does not know: its header block
	// still goes through the decoder, or the next answer's indexed fields
	// would not decode.
	add("unknown stream, then OK", newScript().answer(99, exp).answer(1, exp), map[string]uint64{"OK": 1})

	// GOAWAY below the calls in flight: 3, 5, 7 are lost, 1 finishes, and
	// the drained connection ends.
	s = newScript()
	s.fr.WriteGoAway(1, http2.ErrCodeNo, nil)
	s.answer(1, exp)
	cases = append(cases, scriptCase{name: "GOAWAY", script: s.bytes(),
		want: map[string]uint64{"Unavailable": 3, "OK": 1}, drained: true})
	// grpc-go's graceful GOAWAY: first the highest id, then the real one.
	s = newScript()
	s.fr.WriteGoAway(1<<31-1, http2.ErrCodeNo, nil)
	s.fr.WritePing(false, [8]byte{9})
	s.answer(1, exp).answer(3, exp)
	s.fr.WriteGoAway(7, http2.ErrCodeNo, nil)
	s.answer(5, exp).answer(7, exp)
	cases = append(cases, scriptCase{name: "two GOAWAYs", script: s.bytes(),
		want: map[string]uint64{"OK": 4}, drained: true})

	// The last stream id: with one call per connection, the call on it
	// ends and nothing is in flight; the connection must end so that a new
	// one takes over, rather than wait for a server that has nothing to say.
	cases = append(cases, scriptCase{name: "stream ids used up, one slot", script: newScript().answer(maxStreamID, exp).bytes(),
		setup: scriptSetup{slots: 1, firstID: maxStreamID}, want: map[string]uint64{"OK": 1}, drained: true})
	s = newScript()
	for id := uint32(maxStreamID - 6); id <= maxStreamID; id += 2 {
		s.answer(id, exp)
	}
	cases = append(cases, scriptCase{name: "stream ids used up, four slots", script: s.bytes(),
		setup: scriptSetup{firstID: maxStreamID - 6}, want: map[string]uint64{"OK": 4}, drained: true})

	// Malformed bytes end the connection without counting a call.
	add("garbage", &script{buf: *bytes.NewBufferString("HTTP/1.1 400 Bad Request\r\n\r\n")}, map[string]uint64{})
	add("bad HPACK", func() *script {
		s := newScript()
		s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true, BlockFragment: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}})
		return s
	}(), map[string]uint64{})
	return cases
}

// streamScriptCases are server byte streams for the calls of the streaming
// scenarios: answers counted one by one, in any framing, and the streams
// that break their kind's rule.
func streamScriptCases(t testing.TB, c *call) []scriptCase {
	exp, n := c.expect, c.replies
	_, others := answers(t, c)
	var cases []scriptCase
	add := func(name string, s *script, want map[string]uint64) {
		cases = append(cases, scriptCase{name: name, script: s.bytes(), want: want})
	}
	all := bytes.Repeat(exp, n)
	ok := map[string]uint64{"OK": uint64(n)}
	if c.kind == scenario.ClientStreaming {
		ok = map[string]uint64{"OK": uint64(len(c.body) / c.message)} // the messages sent
	}
	add("every answer in one DATA", newScript().answer(1, all), ok)
	s := newScript().headers(1, false, responseHeaders...)
	for rest := all; len(rest) > 0; rest = rest[min(7, len(rest)):] {
		s.fr.WriteData(1, false, rest[:min(7, len(rest))]) // answers split across frames
	}
	add("answers in pieces of 7 bytes", s.headers(1, true, "grpc-status", "0"), ok)
	if n > 1 {
		add("an answer short", newScript().answer(1, all[len(exp):]), map[string]uint64{"OK": uint64(n - 1), StatusMismatch: 1})
		add("a wrong answer among them", newScript().answer(1, append(bytes.Clone(all[len(exp):]), others["name changed"]...)),
			map[string]uint64{"OK": uint64(n - 1), StatusMismatch: 1})
		s = newScript().headers(1, false, responseHeaders...)
		s.fr.WriteData(1, false, all[:2*len(exp)+3])
		s.fr.WriteRSTStream(1, http2.ErrCodeCancel)
		add("reset mid-stream", s, map[string]uint64{"OK": 2, "Canceled": 1})
	}
	// A stream of answers has counted them as they came; a client stream
	// counts nothing but its failure.
	failed := func(status string) map[string]uint64 {
		if c.kind == scenario.ClientStreaming {
			return map[string]uint64{status: 1}
		}
		return map[string]uint64{"OK": uint64(n), status: 1}
	}
	add("an answer more", newScript().answer(1, append(bytes.Clone(all), exp...)), failed(StatusMismatch))
	s = newScript().headers(1, false, responseHeaders...)
	s.fr.WriteData(1, false, all)
	add("answers, then an error status", s.headers(1, true, "grpc-status", "13"), failed("Internal"))
	add("a length past any answer", newScript().answer(1, []byte{0, 0xff, 0xff, 0xff, 0xff}), map[string]uint64{StatusMismatch: 1})
	return cases
}

// TestScriptedServer checks what the reader makes of known server byte
// streams: the fuzz seeds, with their expected outcome.
func TestScriptedServer(t *testing.T) {
	c := testCall(t)
	for _, tc := range scriptCases(t, c) {
		t.Run(tc.name, func(t *testing.T) {
			got := runScript(t, c, tc.script, tc.setup)
			if !maps.Equal(got.statuses, tc.want) {
				t.Errorf("statuses %v, want %v", got.statuses, tc.want)
			}
			if drained := errors.Is(got.err, errDrained); drained != tc.drained {
				t.Errorf("serve returned %v; drained %v, want %v", got.err, drained, tc.drained)
			}
			if got.err == nil {
				t.Errorf("serve returned nil; the server's bytes ran out, so it should say why it ended")
			}
			if got.opened < uint32(cmp.Or(tc.setup.slots, scriptSlots)) {
				t.Errorf("only %d calls opened before the script: the script was not read with calls in flight", got.opened)
			}
		})
	}
}

// TestScriptedStreams is TestScriptedServer for the calls of the streaming
// scenarios.
func TestScriptedStreams(t *testing.T) {
	for _, name := range []string{"stream_pingpong", "stream_server", "stream_client"} {
		c := streamCall(t, name)
		for _, tc := range streamScriptCases(t, c) {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				if got := runScript(t, c, tc.script, tc.setup); !maps.Equal(got.statuses, tc.want) {
					t.Errorf("statuses %v, want %v", got.statuses, tc.want)
				}
			})
		}
	}
}

// FuzzStreamFrames is FuzzServerFrames for a server stream's call.
func FuzzStreamFrames(f *testing.F) {
	c := streamCall(f, "stream_server")
	for _, tc := range streamScriptCases(f, c) {
		f.Add(tc.script)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		runScript(t, c, script, scriptSetup{})
	})
}

// FuzzServerFrames feeds arbitrary bytes as the server's side of a
// connection: the reader must not panic, serve must return once the bytes
// run out, and the counts must agree.
func FuzzServerFrames(f *testing.F) {
	c := testCall(f)
	for _, tc := range scriptCases(f, c) {
		f.Add(tc.script)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		runScript(t, c, script, scriptSetup{})
	})
}

// At a fixed rate a slot's schedule outlives its connections: each new
// connection takes it over from the last. Here 300 connections in turn
// each start their 4 calls on one schedule; run with -race, this also
// checks that a finished connection leaves the schedule alone.
func TestScheduleAcrossConnections(t *testing.T) {
	c := testCall(t)
	start := time.Now().Add(-time.Second)
	plan := load.NewSchedule(start, start, start.Add(time.Hour), 1_000_000, 0, 1, load.ArrivalsConstant)
	const conns = 300
	for range conns {
		runScript(t, c, nil, scriptSetup{plan: plan})
	}
	if plan.Issued != conns*scriptSlots {
		t.Errorf("%d calls issued on the schedule, want %d", plan.Issued, conns*scriptSlots)
	}
}

// scriptCounter counts every call of a scripted connection as the
// window's, its series over the next minute.
func scriptCounter() *callCounter {
	now := time.Now()
	return newCallCounter(now, time.Time{}, now.Add(time.Minute), false, false)
}
