package load

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Windows this client grants the server. Large, so that answers never wait
// for a WINDOW_UPDATE; they are replenished when half is used.
const (
	recvStreamWindow = 1 << 24
	recvConnWindow   = 1 << 30
	// writeBuffer bounds what one wake-up of the writer sends in one write.
	writeBuffer = 256 << 10
	// maxStreamID is the last client stream id HTTP/2 allows.
	maxStreamID = 1<<31 - 1
	// settingsTimeout bounds the wait for the server's first SETTINGS.
	settingsTimeout = 5 * time.Second
)

// stream is one call on a connection.
type stream struct {
	id     uint32
	active bool
	// start is when the call was sent, or, at a fixed rate, when it was
	// meant to be sent: latency is counted from there.
	start time.Time
	// send side, under conn.mu
	sent       int
	sendWindow int64
	// receive side, reader goroutine only
	httpStatus  int
	grpcStatus  int
	grpcContent bool
	matched     int
	mismatch    bool
	body        []byte // kept only once the answer differs from the expected bytes
	unacked     int
}

// schedule is the fixed-rate plan of one connection slot; it outlives the
// connections that carry it.
type schedule struct {
	rate   float64 // calls per second; 0 means closed loop
	epoch  time.Time
	issued int64
}

// next returns how many calls are due at now, and the intended time of the
// next one.
func (s *schedule) due(now time.Time) int64 {
	return int64(now.Sub(s.epoch).Seconds()*s.rate) + 1 - s.issued
}

func (s *schedule) intended() time.Time {
	return s.epoch.Add(time.Duration(float64(s.issued) / s.rate * float64(time.Second)))
}

// conn is one HTTP/2 connection: a writer goroutine that batches frames, and
// a reader (the caller of serve) that parses answers and records them.
type conn struct {
	call *call
	nc   net.Conn
	fr   *http2.Framer
	dec  *hpack.Decoder
	rec  *recorder
	plan *schedule
	cur  *stream // the stream whose header block is being decoded
	// curEnds says the block's HEADERS frame ended the stream (the flag is
	// on HEADERS even when CONTINUATION frames carry the rest).
	curEnds bool
	// recvUnacked is what the server sent since the last connection
	// WINDOW_UPDATE (reader only).
	recvUnacked int
	// echoes are answers whose bytes differ from call.expect but were found
	// equal in meaning (reader only). A server encodes the same answer the
	// same way each time, so its bytes are checked by meaning once per
	// connection, then compared: most non-Go servers put a oneof among the
	// other fields in field order, where Go's encoder puts it last.
	echoes [][]byte

	mu   sync.Mutex
	cond *sync.Cond
	// the server's settings
	settled       bool
	peerTableSize uint32
	maxStreams    uint32
	initialWindow int64
	maxFrame      int
	connWindow    int64
	// calls
	ring     []stream
	mask     uint32
	nextID   uint32
	inflight int
	slots    int
	pending  []*stream // streams with request bytes still to send
	// frames owed to the server
	settingsAcks  int
	pings         [][8]byte
	connUpdate    uint32
	streamUpdates []streamUpdate
	// stopping ends new calls: GOAWAY, stream ids used up, or the run's end
	stopping bool
	closed   bool
	// block is the header block of each call; first, until sent, the one
	// that fills the server's HPACK table (see call); template is HEADERS
	// and DATA of a call with block, stream ids to patch.
	block, first, template []byte
}

type streamUpdate struct {
	id  uint32
	inc uint32
}

func dial(addr string, c *call, slots int, rec *recorder, plan *schedule) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return newConn(nc, c, slots, rec, plan), nil
}

// newConn sets up a connection's state on an open transport.
func newConn(nc net.Conn, c *call, slots int, rec *recorder, plan *schedule) *conn {
	size := 1
	for size < 4*slots {
		size <<= 1
	}
	cn := &conn{
		call:          c,
		nc:            nc,
		rec:           rec,
		plan:          plan,
		maxStreams:    ^uint32(0),
		peerTableSize: 4096, // HPACK's default
		initialWindow: 65535,
		maxFrame:      16384,
		connWindow:    65535,
		ring:          make([]stream, size),
		mask:          uint32(size - 1),
		nextID:        1,
		slots:         slots,
	}
	cn.cond = sync.NewCond(&cn.mu)
	cn.fr = http2.NewFramer(nil, bufio.NewReaderSize(nc, 64<<10))
	cn.fr.SetReuseFrames()
	cn.dec = hpack.NewDecoder(4096, cn.onField)
	return cn
}

// requestTemplate is the HEADERS and DATA frames of one call with stream id
// 0, patched per call.
func requestTemplate(block, body []byte) []byte {
	t := make([]byte, 0, 18+len(block)+len(body))
	t = appendFrameHeader(t, len(block), http2.FrameHeaders, http2.FlagHeadersEndHeaders, 0)
	t = append(t, block...)
	t = appendFrameHeader(t, len(body), http2.FrameData, http2.FlagDataEndStream, 0)
	return append(t, body...)
}

func appendFrameHeader(b []byte, length int, t http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(t), byte(flags),
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// serve runs the connection until it fails, the server sends GOAWAY and its
// last calls are answered, or stop is closed. It returns why it ended.
func (c *conn) serve(stop <-chan struct{}) error {
	bw := bufio.NewWriterSize(c.nc, writeBuffer)
	wfr := http2.NewFramer(bw, nil)
	if _, err := bw.WriteString(http2.ClientPreface); err != nil {
		return err
	}
	if err := wfr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: recvStreamWindow},
	); err != nil {
		return err
	}
	if err := wfr.WriteWindowUpdate(0, recvConnWindow-65535); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}

	var writeErr error
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		writeErr = c.writeLoop(bw, wfr)
		c.close()
	}()
	go func() {
		select {
		case <-stop:
			c.close()
		case <-writerDone:
		}
	}()
	paced := make(chan struct{})
	if c.plan.rate > 0 {
		go func() {
			defer close(paced)
			c.pace(writerDone)
		}()
	} else {
		close(paced)
	}
	c.nc.SetReadDeadline(time.Now().Add(settingsTimeout))
	err := c.readLoop()
	c.close()
	<-writerDone
	<-paced // the schedule outlives this connection: no goroutine of it may touch it after

	if err == nil {
		err = writeErr
	}
	return err
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
		timer.Reset(max(time.Until(next), 50*time.Microsecond))
	}
}

// close ends the connection; both loops return.
func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.nc.Close()
		c.cond.Broadcast()
	}
}

// inFlight returns the streams still waiting for an answer.
func (c *conn) inFlight() []stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []stream
	for _, s := range c.ring {
		if s.active {
			out = append(out, s)
		}
	}
	return out
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
	need := 18 + len(c.call.firstBlock) + len(c.call.plainBlock) + min(len(c.call.body), c.maxFrame)
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
			binary.BigEndian.PutUint32(buf[5:9], s.id)
			binary.BigEndian.PutUint32(buf[9+len(c.block)+5:], s.id)
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
	for c.ring[(id>>1)&c.mask].active { // a slow call still holds the slot
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
	s := &c.ring[(id>>1)&c.mask]
	*s = stream{id: id, active: true, start: now, sendWindow: c.initialWindow, httpStatus: -1, grpcStatus: -1, body: s.body[:0]}
	if c.plan.rate > 0 {
		s.start = c.plan.intended()
		c.plan.issued++
	}
	c.inflight++
	return s
}

// lookup returns the active stream with the id, or nil.
func (c *conn) lookup(id uint32) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := &c.ring[(id>>1)&c.mask]; s.active && s.id == id {
		return s
	}
	return nil
}

// finish ends a call with a status and records it.
func (c *conn) finish(s *stream, status string) {
	now := time.Now()
	c.mu.Lock()
	start := s.start
	s.active = false
	c.inflight--
	if c.stopping && c.inflight == 0 {
		c.closed = true
		c.nc.Close()
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	c.rec.add(status, now.Sub(start), now)
}

// errDrained ends a connection that took no new calls (GOAWAY, stream ids
// used up) once its last calls are answered: the caller opens another.
var errDrained = errors.New("connection drained")

func (c *conn) readLoop() error {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.mu.Lock()
			closed, stopping := c.closed, c.stopping
			c.mu.Unlock()
			if closed && stopping {
				return errDrained
			}
			if closed {
				return nil
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return errNoSettings
			}
			return err
		}
		if err := c.handle(f); err != nil {
			return err
		}
	}
}

func (c *conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		return c.onSettings(f)
	case *http2.WindowUpdateFrame:
		c.mu.Lock()
		if f.StreamID == 0 {
			c.connWindow += int64(f.Increment)
		} else if s := &c.ring[(f.StreamID>>1)&c.mask]; s.active && s.id == f.StreamID {
			s.sendWindow += int64(f.Increment)
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	case *http2.PingFrame:
		if !f.IsAck() {
			c.mu.Lock()
			c.pings = append(c.pings, f.Data)
			c.cond.Broadcast()
			c.mu.Unlock()
		}
	case *http2.GoAwayFrame:
		c.onGoAway(f.LastStreamID)
	case *http2.RSTStreamFrame:
		if s := c.lookup(f.StreamID); s != nil {
			c.finish(s, statusName(int(rstStreamCode(f.ErrCode))))
		}
	case *http2.HeadersFrame:
		c.curEnds = f.StreamEnded()
		return c.onHeaders(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.ContinuationFrame:
		return c.onHeaders(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.DataFrame:
		c.onData(f)
	}
	return nil
}

func (c *conn) onSettings(f *http2.SettingsFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingMaxConcurrentStreams:
			c.maxStreams = s.Val
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - c.initialWindow
			c.initialWindow = int64(s.Val)
			for i := range c.ring {
				if c.ring[i].active {
					c.ring[i].sendWindow += delta
				}
			}
		case http2.SettingMaxFrameSize:
			// Frames may be smaller than the server allows; keeping them
			// to the default size bounds what one call takes in the buffer.
			c.maxFrame = min(int(s.Val), 16384)
		case http2.SettingHeaderTableSize:
			if s.Val < c.call.tableSize && c.settled && bytes.Equal(c.block, c.call.indexedBlock) {
				// The server shrank the table our indices point into:
				// finish what is in flight, go on on a new connection.
				c.stopping = true
			}
			c.peerTableSize = s.Val
		}
		return nil
	})
	if !c.settled {
		c.block, c.first = c.call.indexedBlock, c.call.firstBlock
		if c.peerTableSize < c.call.tableSize {
			c.block, c.first = c.call.plainBlock, nil
		}
		c.template = requestTemplate(c.block, c.call.body)
	}
	if !c.settled {
		c.nc.SetReadDeadline(time.Time{})
	}
	c.settled = true
	c.settingsAcks++
	c.cond.Broadcast()
	return err
}

// onGoAway stops new calls; calls above the server's last stream id will
// never be answered and fail as Unavailable, the others finish first.
func (c *conn) onGoAway(last uint32) {
	c.mu.Lock()
	c.stopping = true
	var lost []*stream
	for i := range c.ring {
		if s := &c.ring[i]; s.active && s.id > last {
			lost = append(lost, s)
		}
	}
	c.mu.Unlock()
	for _, s := range lost {
		c.finish(s, statusName(14)) // Unavailable
	}
	c.mu.Lock()
	if c.inflight == 0 && !c.closed {
		c.closed = true
		c.nc.Close()
	}
	c.mu.Unlock()
}

func (c *conn) onHeaders(id uint32, fragment []byte, ended bool) error {
	if c.cur == nil {
		c.cur = c.lookup(id)
	}
	if c.cur == nil {
		// An answer to a call no longer tracked: decode anyway, to keep
		// the HPACK table in step with the server's.
		c.cur = &stream{id: id}
	}
	if _, err := c.dec.Write(fragment); err != nil {
		return fmt.Errorf("hpack: %w", err)
	}
	if !ended {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return fmt.Errorf("hpack: %w", err)
	}
	s := c.cur
	c.cur = nil
	if c.curEnds && s.active {
		c.finish(s, c.outcome(s))
	}
	return nil
}

// onField is the HPACK decoder's callback for each header of an answer.
func (c *conn) onField(f hpack.HeaderField) {
	s := c.cur
	switch f.Name {
	case ":status":
		s.httpStatus = parseStatus(f.Value)
	case "content-type":
		// application/grpc, or with a codec: application/grpc+proto
		s.grpcContent = f.Value == "application/grpc" ||
			len(f.Value) > 16 && f.Value[:16] == "application/grpc" && (f.Value[16] == '+' || f.Value[16] == ';')
	case "grpc-status":
		s.grpcStatus = parseStatus(f.Value)
	}
}

func (c *conn) onData(f *http2.DataFrame) {
	data := f.Data()
	n := int(f.Header().Length) // padding counts against the window too
	if c.recvUnacked += n; c.recvUnacked >= recvConnWindow/2 {
		c.mu.Lock()
		c.connUpdate += uint32(c.recvUnacked)
		c.cond.Broadcast()
		c.mu.Unlock()
		c.recvUnacked = 0
	}
	s := c.lookup(f.StreamID)
	if s == nil {
		return
	}
	c.compare(s, data)
	if s.unacked += n; s.unacked >= recvStreamWindow/2 && !f.StreamEnded() {
		c.mu.Lock()
		c.streamUpdates = append(c.streamUpdates, streamUpdate{s.id, uint32(s.unacked)})
		c.cond.Broadcast()
		c.mu.Unlock()
		s.unacked = 0
	}
	if f.StreamEnded() {
		// An answer without trailers has no grpc-status: outcome says so.
		c.finish(s, c.outcome(s))
	}
}

// compare checks the answer's bytes against the expected echo as they
// arrive, keeping them only once they differ.
func (c *conn) compare(s *stream, data []byte) {
	exp := c.call.expect
	if !s.mismatch {
		if s.matched+len(data) <= len(exp) && string(exp[s.matched:s.matched+len(data)]) == string(data) {
			s.matched += len(data)
			return
		}
		s.mismatch = true
		s.body = append(s.body[:0], exp[:s.matched]...)
	}
	s.body = append(s.body, data...)
}

// maxEchoes bounds the encodings remembered per connection; a server whose
// answers vary more (maps in random order) has the others checked by meaning.
const maxEchoes = 8

// isEcho reports whether an answer that differs from call.expect is an echo
// of the request: at once if its bytes are those of an answer already
// checked, else by meaning.
func (c *conn) isEcho(body []byte) bool {
	for _, e := range c.echoes {
		if bytes.Equal(e, body) {
			return true
		}
	}
	if !c.call.isEcho(body) {
		return false
	}
	if len(c.echoes) < maxEchoes {
		c.echoes = append(c.echoes, bytes.Clone(body))
	}
	return true
}

// outcome is the status of a finished call.
func (c *conn) outcome(s *stream) string {
	switch {
	case s.httpStatus != 200:
		if s.httpStatus < 0 {
			return statusName(13) // Internal: no :status
		}
		return statusName(int(httpStatusCode(s.httpStatus)))
	case !s.grpcContent:
		return statusName(13)
	case s.grpcStatus < 0:
		return statusName(13) // no grpc-status trailer
	case s.grpcStatus != 0:
		return statusName(s.grpcStatus)
	case !s.mismatch && s.matched == len(c.call.expect):
		return statusNames[0]
	case s.mismatch && c.isEcho(s.body):
		return statusNames[0]
	default:
		return StatusMismatch
	}
}
