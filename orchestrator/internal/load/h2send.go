package load

// The send side of a connection: everything here runs with conn.mu held,
// or is the writer goroutine that takes it.

import (
	"bufio"
	"encoding/binary"
	"time"

	"golang.org/x/net/http2"
)

const (
	// writeBuffer bounds what one wake-up of the writer sends in one write.
	writeBuffer = 256 << 10
	// maxStreamID is the last client stream id HTTP/2 allows.
	maxStreamID = 1<<31 - 1
	// minPace is the shortest sleep of the fixed-rate pacer: a wake-up
	// costs more than the calls it would spread.
	minPace = 50 * time.Microsecond
)

// The layout of an HTTP/2 frame header: length (3 bytes), type, flags,
// stream id (4 bytes).
const (
	frameHeaderLen = 9
	frameStreamID  = 5 // offset of the stream id
)

// requestTemplate is the HEADERS and DATA frames of one call with stream id
// 0, patched per call.
func requestTemplate(block, body []byte) []byte {
	t := make([]byte, 0, 2*frameHeaderLen+len(block)+len(body))
	t = appendFrameHeader(t, len(block), http2.FrameHeaders, http2.FlagHeadersEndHeaders, 0)
	t = append(t, block...)
	t = appendFrameHeader(t, len(body), http2.FrameData, http2.FlagDataEndStream, 0)
	return append(t, body...)
}

func appendFrameHeader(b []byte, length int, t http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(t), byte(flags),
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// pace wakes the writer at the intended time of the next call of the
// fixed-rate plan. Calls are stamped with that time, so a late wake-up or a
// full set of slots shows in the latencies rather than hiding from them.
func (c *conn) pace(done <-chan struct{}) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-done:
			return
		case <-timer.C:
		}
		c.mu.Lock()
		next := c.plan.intended()
		c.cond.Broadcast()
		c.mu.Unlock()
		timer.Reset(max(time.Until(next), minPace))
	}
}

// newCalls is how many calls may start now. Called with mu held.
func (c *conn) newCalls(now time.Time) int {
	if !c.settled || c.stopping || c.closed || len(c.pending) > 0 || c.connWindow <= 0 {
		return 0
	}
	n := min(int64(c.slots), int64(c.maxStreams)) - int64(c.inflight)
	if c.plan.rate > 0 {
		n = min(n, c.plan.due(now))
	}
	return int(max(n, 0))
}

func (c *conn) owesFrames() bool {
	return c.settingsAcks > 0 || len(c.pings) > 0 || c.connUpdate > 0 || len(c.streamUpdates) > 0
}

func (c *conn) canSendPending() bool {
	return len(c.pending) > 0 && c.connWindow > 0 && c.pending[0].sendWindow > 0
}

// writeLoop sends what is owed in batches: one write for everything that
// became sendable since the last one.
func (c *conn) writeLoop(bw *bufio.Writer, wfr *http2.Framer) error {
	for {
		c.mu.Lock()
		for !c.closed && !c.owesFrames() && !c.canSendPending() && c.newCalls(time.Now()) == 0 {
			c.cond.Wait()
		}
		if c.closed {
			c.mu.Unlock()
			return nil
		}
		err := c.fill(bw, wfr)
		c.mu.Unlock()
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			return err
		}
	}
}

// fill writes owed frames, the rest of pending requests and new calls into
// bw, without going over its buffer. Called with mu held.
func (c *conn) fill(bw *bufio.Writer, wfr *http2.Framer) error {
	for ; c.settingsAcks > 0; c.settingsAcks-- {
		if err := wfr.WriteSettingsAck(); err != nil {
			return err
		}
	}
	for _, p := range c.pings {
		if err := wfr.WritePing(true, p); err != nil {
			return err
		}
	}
	c.pings = c.pings[:0]
	if c.connUpdate > 0 {
		if err := wfr.WriteWindowUpdate(0, c.connUpdate); err != nil {
			return err
		}
		c.connUpdate = 0
	}
	for _, u := range c.streamUpdates {
		if err := wfr.WriteWindowUpdate(u.id, u.inc); err != nil {
			return err
		}
	}
	c.streamUpdates = c.streamUpdates[:0]

	// The most one call writes at once: HEADERS and a DATA frame.
	need := 2*frameHeaderLen + len(c.call.firstBlock) + len(c.call.plainBlock) + min(len(c.call.body), c.maxFrame)
	for c.canSendPending() && bw.Available() > need {
		s := c.pending[0]
		c.sendData(bw, s)
		if s.sent == len(c.call.body) {
			c.pending = c.pending[1:]
		} else if s.sendWindow <= 0 {
			break // wait for this stream's WINDOW_UPDATE; keep the order
		}
	}

	now := time.Now()
	for n := c.newCalls(now); n > 0 && bw.Available() > need; n-- {
		s := c.open(now)
		if s == nil {
			break
		}
		body := len(c.call.body)
		if c.first == nil && int64(body) <= s.sendWindow && int64(body) <= c.connWindow && body <= c.maxFrame {
			buf := append(bw.AvailableBuffer(), c.template...)
			binary.BigEndian.PutUint32(buf[frameStreamID:], s.id)
			binary.BigEndian.PutUint32(buf[frameHeaderLen+len(c.block)+frameStreamID:], s.id) // DATA
			bw.Write(buf)
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
		buf := appendFrameHeader(bw.AvailableBuffer(), len(block), http2.FrameHeaders, http2.FlagHeadersEndHeaders, s.id)
		bw.Write(append(buf, block...))
		c.pending = append(c.pending, s)
		c.sendData(bw, c.pending[0])
		if c.pending[0].sent == body {
			c.pending = c.pending[1:]
		}
	}
	return nil
}

// sendData writes as much of the stream's request body as the windows and
// the frame size allow. Called with mu held.
func (c *conn) sendData(bw *bufio.Writer, s *stream) {
	body := c.call.body
	n := min(len(body)-s.sent, c.maxFrame, int(min(s.sendWindow, c.connWindow)))
	if n <= 0 {
		return
	}
	var flags http2.Flags
	if s.sent+n == len(body) {
		flags = http2.FlagDataEndStream
	}
	buf := appendFrameHeader(bw.AvailableBuffer(), n, http2.FrameData, flags, s.id)
	bw.Write(append(buf, body[s.sent:s.sent+n]...))
	s.sent += n
	s.sendWindow -= int64(n)
	c.connWindow -= int64(n)
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
			c.closed = true
			c.nc.Close()
		}
		return nil
	}
	c.nextID = id + 2
	s := c.slot(id)
	*s = stream{id: id, active: true, start: now, sendWindow: c.initialWindow, httpStatus: -1, grpcStatus: -1, body: s.body[:0]}
	if c.plan.rate > 0 {
		s.start = c.plan.intended()
		c.plan.issued++
	}
	c.inflight++
	return s
}
