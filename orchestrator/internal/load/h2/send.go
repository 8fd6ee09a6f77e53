package h2

// The send side of a connection: flush, which the reader and the pacer
// call and which never blocks, the writer goroutine, which takes over what
// the socket did not take at once, and the frames they write. Whoever
// writes holds the write turn (conn.writing), so that frames go out whole
// and in order.

import (
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/net/http2"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

const (
	// writeBuffer bounds the calls one flush sends in one write.
	writeBuffer = 256 << 10
	// maxStreamID is the last client stream id HTTP/2 allows.
	maxStreamID = 1<<31 - 1
	// minPace is the shortest sleep of the open-loop pacer: a wake-up
	// costs more than the calls it would spread, so calls due within it
	// go out together.
	minPace = 50 * time.Microsecond
	// blockedPace is the pacer's sleep while calls owed cannot start: a
	// fallback, not what starts them.
	blockedPace = load.LateAfter / 2
	// coarseAhead is how long before a call the pacer's timer wakes it for
	// the fine sleep to the call's time: more than the millisecond a
	// timer may be late by.
	coarseAhead = 2 * time.Millisecond
	// A core left idle between calls takes tens of µs to wake (measured
	// without the spin: 39 µs at the median and 60–152 µs at p99 at 500
	// calls a second, 22 and 33–71 µs at 5000), so the pacer wakes before
	// a call's time and spins the rest: at most maxSpin, and spinShare of
	// the spacing of all the slots' calls, which bounds the spinning to
	// that share of a core at any rate (5%: 100 µs a call at 500 calls a
	// second, 2.5 µs at 20,000).
	maxSpin   = 100 * time.Microsecond
	spinShare = 0.05
)

// The layout of an HTTP/2 frame header: length (3 bytes), type, flags,
// stream id (4 bytes).
const (
	frameHeaderLen = 9
	frameStreamID  = 5 // offset of the stream id
	// windowUpdateLen is a WINDOW_UPDATE's payload: the increment;
	// rstStreamLen an RST_STREAM's, the error code.
	windowUpdateLen = 4
	rstStreamLen    = 4
)

// requestTemplate is the HEADERS and DATA frames of the start of one call
// with stream id 0, patched per call: the first data of the body, which
// half-closes the stream when it is the whole body.
func requestTemplate(block, body []byte, first int) []byte {
	t := make([]byte, 0, 2*frameHeaderLen+len(block)+first)
	t = appendFrameHeader(t, len(block), http2.FrameHeaders, http2.FlagHeadersEndHeaders, 0)
	t = append(t, block...)
	var flags http2.Flags
	if first == len(body) {
		flags = http2.FlagDataEndStream
	}
	t = appendFrameHeader(t, first, http2.FrameData, flags, 0)
	return append(t, body[:first]...)
}

func appendFrameHeader(b []byte, length int, t http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(t), byte(flags),
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// pace sends the calls of the open-loop plan as they fall due. Calls are
// stamped with their intended time, so a late wake-up or a full set of
// slots shows in the latencies rather than hiding from them; calls owed
// go out together, as many as the slots and one write take. It waits for
// the next call on a timer until coarseAhead before it, then on a fine
// timer (pace_linux.go), and spins the last stretch.
func (c *conn) pace(done <-chan struct{}) {
	fine := newFineTimer()
	defer fine.close()
	spin := min(maxSpin, time.Duration(spinShare*float64(c.plan.Spacing())))
	timer := time.NewTimer(0)
	defer timer.Stop()
	next := time.Now()
	for {
		if d := time.Until(next) - coarseAhead; d > 0 {
			timer.Reset(d)
			select {
			case <-done:
				return
			case <-timer.C:
			}
		} else {
			select {
			case <-done:
				return
			default:
			}
		}
		if d := time.Until(next) - spin; d > 0 {
			fine.sleep(d)
		}
		for time.Now().Before(next) {
			// the spin, up to the call's time
		}
		c.flush()
		c.mu.Lock()
		now := time.Now()
		next = c.plan.Intended()
		blocked := c.plan.Due(now) // owed, but no slot, window or write turn is free
		c.held = c.held || blocked
		if s := c.oldestActive(); s != nil && c.call.deadline > 0 {
			switch {
			case !now.Before(s.deadline):
				c.wakeReader() // to cancel it; the pacer looks again at its next call
			case s.deadline.Before(next):
				next = s.deadline
			}
		}
		c.mu.Unlock()
		if blocked {
			// The reader starts them as answers free slots and windows open
			// (it flushes before each read), the writer as its write ends:
			// the pacer only looks again now and then.
			next = now.Add(blockedPace)
			continue
		}
		if soonest := now.Add(minPace); next.Before(soonest) {
			next = soonest
		}
	}
}

// newCalls is how many calls may start now: in an open loop, fill starts
// those of them that are due. It notes a due call that cannot start, and
// whether the cap on calls in flight holds it back. Called with mu held.
func (c *conn) newCalls(now time.Time) int {
	if c.closed || !c.plan.Due(now) {
		return 0
	}
	n := min(int64(c.slots), int64(c.maxStreams)) - int64(c.inflight)
	if !c.settled || c.stopping || len(c.pending) > 0 || c.connWindow <= 0 {
		n = 0
	}
	if n <= 0 && c.plan.Paced() {
		c.held = true
		if c.inflight >= c.slots {
			c.heldByCap = true
		}
	}
	return int(max(n, 0))
}

func (c *conn) owesFrames() bool {
	return c.settingsAcks > 0 || len(c.pings) > 0 || c.connUpdate > 0 || len(c.streamUpdates) > 0 || len(c.resets) > 0
}

func (c *conn) canSendPending() bool {
	return len(c.pending) > 0 && c.connWindow > 0 && c.pending[0].sendWindow > 0
}

// hasWork says whether there is anything to send. Called with mu held.
func (c *conn) hasWork(now time.Time) bool {
	return !c.closed && (c.owesFrames() || c.canSendPending() || c.newCalls(now) > 0)
}

// flush sends what is owed and the calls that may start, in as few writes
// as the buffer allows, without ever waiting for the socket: the reader
// calls it before it waits for the server, the pacer when calls fall due.
// What the socket does not take at once goes to the writer goroutine,
// whose write may block. The reader must never block on a write: a server
// that stops reading while its own writes block would then wait for the
// reader, which waits for the server.
func (c *conn) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for now := time.Now(); !c.writing && c.hasWork(now); now = time.Now() {
		c.writing = true
		c.fill(now)
		out := c.out
		c.mu.Unlock()
		n := c.sock.tryWrite(out)
		c.mu.Lock()
		if n < len(out) {
			c.out = c.out[:copy(c.out, c.out[n:])]
			c.handoff = true // the write turn passes to the writer goroutine
			c.cond.Signal()
			return
		}
		c.out = c.out[:0]
		c.writing = false
	}
}

// writeLoop is the writer goroutine: it takes the write turn when flush
// hands it what the socket did not take, writes it, and whatever became
// owed meanwhile, waiting for the socket as long as it takes.
func (c *conn) writeLoop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for !c.closed && !c.handoff {
			c.cond.Wait()
		}
		if c.closed {
			return nil
		}
		for len(c.out) > 0 {
			out := c.out
			c.mu.Unlock()
			_, err := c.nc.Write(out)
			c.mu.Lock()
			if err != nil {
				if c.closed {
					return nil // closed on purpose, or after the reader failed
				}
				return fmt.Errorf("write: %w", err)
			}
			c.out = c.out[:0]
			if now := time.Now(); c.hasWork(now) {
				c.fill(now)
			}
		}
		c.writing, c.handoff = false, false
	}
}

// fill appends owed frames, the rest of pending requests and new calls to
// out, without going over its capacity for calls. Called with mu held by
// the holder of the write turn.
func (c *conn) fill(now time.Time) {
	for ; c.settingsAcks > 0; c.settingsAcks-- {
		c.out = appendFrameHeader(c.out, 0, http2.FrameSettings, http2.FlagSettingsAck, 0)
	}
	for _, p := range c.pings {
		c.out = append(appendFrameHeader(c.out, len(p), http2.FramePing, http2.FlagPingAck, 0), p[:]...)
	}
	c.pings = c.pings[:0]
	if c.connUpdate > 0 {
		c.out = appendWindowUpdate(c.out, 0, c.connUpdate)
		c.connUpdate = 0
	}
	for _, u := range c.streamUpdates {
		c.out = appendWindowUpdate(c.out, u.id, u.inc)
	}
	c.streamUpdates = c.streamUpdates[:0]
	for _, id := range c.resets {
		c.out = binary.BigEndian.AppendUint32(appendFrameHeader(c.out, rstStreamLen, http2.FrameRSTStream, 0, id), uint32(http2.ErrCodeCancel))
	}
	c.resets = c.resets[:0]

	// The most one call writes at once: HEADERS and a DATA frame.
	need := 2*frameHeaderLen + len(c.call.firstBlock) + len(c.call.plainBlock) + min(len(c.call.body), c.maxFrame)
	for c.canSendPending() && cap(c.out)-len(c.out) > need {
		s := c.pending[0]
		c.sendData(s, now)
		if s.sent == s.limit {
			c.pending = c.pending[1:]
		} else if s.sendWindow <= 0 {
			break // wait for this stream's WINDOW_UPDATE; keep the order
		}
	}

	for n := c.newCalls(now); n > 0 && cap(c.out)-len(c.out) > need && c.plan.Due(now); n-- {
		s := c.open(now)
		if s == nil {
			break
		}
		body := s.limit
		if c.first == nil && int64(body) <= s.sendWindow && int64(body) <= c.connWindow && body <= c.maxFrame {
			at := len(c.out)
			c.out = append(c.out, c.template...)
			binary.BigEndian.PutUint32(c.out[at+frameStreamID:], s.id)
			binary.BigEndian.PutUint32(c.out[at+frameHeaderLen+len(c.block)+frameStreamID:], s.id) // DATA
			s.sent, s.sendWindow = body, s.sendWindow-int64(body)
			c.connWindow -= int64(body)
			continue
		}
		// The connection's first call, or a request that does not fit the
		// windows or a frame: headers now, the body as the windows open.
		block := c.block
		if c.first != nil {
			block, c.first = c.first, nil
		}
		c.out = append(appendFrameHeader(c.out, len(block), http2.FrameHeaders, http2.FlagHeadersEndHeaders, s.id), block...)
		c.pending = append(c.pending, s)
		c.sendData(c.pending[0], now)
		if c.pending[0].sent == c.pending[0].limit {
			c.pending = c.pending[1:]
		}
	}
	if !c.plan.Due(now) {
		c.held, c.heldByCap = false, false // every call due is out
	}
}

// appendWindowUpdate appends a WINDOW_UPDATE frame.
func appendWindowUpdate(b []byte, id, inc uint32) []byte {
	return binary.BigEndian.AppendUint32(appendFrameHeader(b, windowUpdateLen, http2.FrameWindowUpdate, 0, id), inc)
}

// sendData appends as much of the stream's request body as its limit, the
// windows and the frame size allow; the body's last byte half-closes the
// stream. A bidi request's latency runs from when its last byte is sent.
// Called with mu held by the holder of the write turn.
func (c *conn) sendData(s *stream, now time.Time) {
	body := c.call.body
	n := min(s.limit-s.sent, c.maxFrame, int(min(s.sendWindow, c.connWindow)))
	if n <= 0 {
		return
	}
	var flags http2.Flags
	if s.sent+n == len(body) {
		flags = http2.FlagDataEndStream
	}
	c.out = append(appendFrameHeader(c.out, n, http2.FrameData, flags, s.id), body[s.sent:s.sent+n]...)
	s.sent += n
	s.sendWindow -= int64(n)
	c.connWindow -= int64(n)
	if s.sent == s.limit && s.sent > c.call.message && c.call.lockstep() {
		s.start = now
	}
}

// open starts a call on a free stream id. Called with mu held.
func (c *conn) open(now time.Time) *stream {
	id := c.nextID
	for c.slot(id).active { // a slow call still holds the slot
		id += 2
	}
	if id > maxStreamID {
		c.stopping = true // a new connection continues, once this one drains
		if c.inflight == 0 {
			c.shut()
		}
		return nil
	}
	c.nextID = id + 2
	s := c.slot(id)
	*s = stream{id: id, active: true, start: now, planned: now, limit: c.call.firstSend(), sendWindow: c.initialWindow, httpStatus: -1, grpcStatus: -1, body: s.body[:0]}
	if c.plan.Paced() {
		s.sentAt = now
		s.start = c.plan.Take(now, c.heldByCap)
		s.planned, s.deadline = s.start, s.start.Add(c.call.deadline)
		if !c.held {
			c.rec.paced(s.start, now)
		}
	}
	c.inflight++
	c.rec.series.Started(now)
	return s
}
