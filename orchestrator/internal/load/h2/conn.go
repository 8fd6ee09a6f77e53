package h2

// A connection of h2: its state, how it is set up and how it
// ends. The send side is in h2send.go, the reader in h2read.go, the
// server's SETTINGS in h2settings.go, the socket's reads and writes in
// h2sock.go.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/grpcbench/grpcbench/orchestrator/internal/certs"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

// Windows this client grants the server. Large, so that answers never wait
// for a WINDOW_UPDATE; they are replenished when half is used.
const (
	recvStreamWindow = 1 << 24
	recvConnWindow   = 1 << 30
	// settingsTimeout bounds the wait for the server's first SETTINGS.
	settingsTimeout = 5 * time.Second
	dialTimeout     = 5 * time.Second
	readBuffer      = 64 << 10
	// ringPerSlot sizes the ring of streams: with four ids per slot, a slow
	// call rarely holds the id the next call would take.
	ringPerSlot = 4
)

// stream is one call on a connection.
type stream struct {
	id     uint32
	active bool
	// start is when the call was sent, or, in an open loop, when it was
	// meant to be sent: latency is counted from there. On a stream of
	// answers it then moves to each answer (a server stream) or to each
	// request sent (a bidi stream), so that each message has its latency.
	start time.Time
	// sentAt is, in an open loop, when the call was sent: its service
	// latency is counted from there.
	sentAt time.Time
	// planned is when the call was meant to start (start, before a stream
	// moves it): an open loop's window holds the calls planned in it.
	// deadline is, in an open loop, when the call is cancelled.
	planned, deadline time.Time
	// send side, under conn.mu: sent bytes of the call's body, of the
	// limit it may send so far (a bidi stream's grows by one message per
	// answer)
	sent, limit int
	sendWindow  int64
	// receive side, reader goroutine only
	httpStatus  int
	grpcStatus  int
	grpcContent bool
	// matched counts the bytes of the answer being read that equal the
	// expected one's; once one differs, the answer's bytes are kept in
	// body until it is whole, and judged by meaning.
	matched  int
	mismatch bool
	body     []byte
	// answers counts the answers that were echoes; wrong is set by one that
	// was not, or by bytes past the answers a call gets; skip, by a length
	// prefix past maxAnswer, ignores the rest.
	answers     int
	wrong, skip bool
	unacked     int
}

// conn is one HTTP/2 connection: a reader (the caller of serve) that parses
// answers, records them and, before it waits for more, sends what they made
// owed in one write; and a writer goroutine for what the socket does not
// take at once.
type conn struct {
	call *call
	nc   net.Conn
	sock *sock
	fr   *http2.Framer
	dec  *hpack.Decoder
	rec  *callCounter
	plan *load.Schedule
	// held says that a call fell due and could not start (no slot, stream,
	// window or write turn free); heldByCap that every slot was taken: the
	// calls held back are not the pacer's to be late, and the ones the cap
	// held are counted late because of it (under mu).
	held, heldByCap bool
	cur             *stream // the stream whose header block is being decoded
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
	ring   []stream
	mask   uint32
	nextID uint32
	// oldest is at most the id of the oldest call in flight, whose
	// deadline comes first (oldestActive).
	oldest   uint32
	inflight int
	slots    int
	pending  []*stream // streams with request bytes still to send
	// frames owed to the server
	settingsAcks  int
	pings         [][8]byte
	connUpdate    uint32
	streamUpdates []streamUpdate
	// resets are the streams cancelled past their deadline.
	resets []uint32
	// stopping ends new calls: GOAWAY, stream ids used up, or the run's end
	stopping bool
	closed   bool
	// writing is the write turn: its holder alone fills out and writes it.
	// handoff passes it to the writer goroutine, with what out still holds.
	writing, handoff bool
	out              []byte
	// block is the header block of each call; first, until sent, the one
	// that fills the server's HPACK table (see call); template is HEADERS
	// and DATA of a call with block, stream ids to patch.
	block, first, template []byte
}

type streamUpdate struct {
	id  uint32
	inc uint32
}

func dial(addr string, c *call, slots int, rec *callCounter, plan *load.Schedule) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		return nil, err
	}
	if c.tls != nil {
		if nc, err = handshake(nc, c.tls); err != nil {
			return nil, err
		}
	}
	return newConn(nc, c, slots, rec, plan), nil
}

// handshake puts TLS on a connection: the server's chain verified, h2
// negotiated. The socket then reads and writes through crypto/tls, not
// with raw system calls (sock.useRaw finds no syscall.Conn).
func handshake(nc net.Conn, cfg *tls.Config) (net.Conn, error) {
	tc := tls.Client(nc, cfg)
	_ = tc.SetDeadline(time.Now().Add(dialTimeout)) // an open socket takes a deadline
	err := tc.Handshake()
	if err == nil {
		err = certs.CheckALPN(tc.ConnectionState())
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}

// newConn sets up a connection's state on an open transport.
func newConn(nc net.Conn, c *call, slots int, rec *callCounter, plan *load.Schedule) *conn {
	size := 1
	for size < ringPerSlot*slots {
		size <<= 1
	}
	cn := &conn{
		call:          c,
		nc:            nc,
		rec:           rec,
		plan:          plan,
		maxStreams:    ^uint32(0), // no limit until the server sets one
		peerTableSize: defaultTableSize,
		initialWindow: defaultWindow,
		maxFrame:      defaultMaxFrame,
		connWindow:    defaultWindow,
		ring:          make([]stream, size),
		mask:          uint32(size - 1),
		nextID:        1,
		oldest:        1,
		slots:         slots,
	}
	cn.cond = sync.NewCond(&cn.mu)
	cn.sock = newSock(nc)
	cn.out = make([]byte, 0, writeBuffer)
	cn.fr = http2.NewFramer(nil, bufio.NewReaderSize(flushingReader{cn}, readBuffer))
	cn.fr.SetReuseFrames()
	// This client announces no table size: the server's encoder keeps to
	// the default.
	cn.dec = hpack.NewDecoder(defaultTableSize, cn.onField)
	return cn
}

// serve runs the connection until it fails, the server sends GOAWAY and its
// last calls are answered, or stop is closed. It returns why it ended.
func (c *conn) serve(stop <-chan struct{}) error {
	var start bytes.Buffer
	start.WriteString(http2.ClientPreface)
	wfr := http2.NewFramer(&start, nil) // writes to a bytes.Buffer, which does not fail
	_ = wfr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: recvStreamWindow},
	)
	_ = wfr.WriteWindowUpdate(0, recvConnWindow-defaultWindow)
	if _, err := c.nc.Write(start.Bytes()); err != nil {
		return fmt.Errorf("write the preface: %w", err)
	}

	var writeErr error
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		writeErr = c.writeLoop()
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
	if c.plan.Paced() {
		go func() {
			defer close(paced)
			c.pace(writerDone)
		}()
	} else {
		close(paced)
	}
	err := c.nc.SetReadDeadline(time.Now().Add(settingsTimeout))
	if err == nil {
		err = c.readLoop()
	}
	c.close()
	<-writerDone
	<-paced // the schedule outlives this connection: no goroutine of it may touch it after

	if err == nil {
		err = writeErr
	}
	return err
}

// close ends the connection; both loops return.
func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shut()
}

// shut is close with mu held.
func (c *conn) shut() {
	if !c.closed {
		c.closed = true
		c.nc.Close()
		c.cond.Broadcast()
	}
}

// flushingReader is what the reader reads the server's frames from: before
// each read, which may wait for the server, it sends what the frames read
// so far made owed. All the answers of one read thus start their next calls
// in one write, sent before the reader waits again.
type flushingReader struct{ c *conn }

func (r flushingReader) Read(p []byte) (int, error) {
	for {
		r.c.expire(time.Now())
		r.c.flush()
		n, err := r.c.sock.Read(p)
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || !r.c.woken() {
			return n, err
		}
	}
}

// wakeReader has the reader's wait for the server end at once, so that it
// cancels a call past its deadline (the reader alone may end a call whose
// answer it could be reading): a read deadline in the past, which the
// reader clears (woken). A wait that ends so takes no bytes: the frames
// read so far stay whole. Called with mu held.
func (c *conn) wakeReader() { _ = c.nc.SetReadDeadline(time.Unix(1, 0)) }

// woken clears the deadline wakeReader set, and says whether it was that,
// not the wait for the server's first SETTINGS.
func (c *conn) woken() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settled && c.nc.SetReadDeadline(time.Time{}) == nil
}

// oldestActive is the call in flight that started first: calls start in
// the order of their intended starts, so its deadline is the next. Called
// with mu held.
func (c *conn) oldestActive() *stream {
	for ; c.oldest < c.nextID; c.oldest += 2 {
		if s := c.slot(c.oldest); s.active && s.id == c.oldest {
			return s
		}
	}
	return nil
}

// expire cancels the calls past their deadline, oldest first: RST_STREAM,
// their slots freed, their messages counted unanswered. The reader calls
// it before each read; a call whose header block it is reading waits for
// the next.
func (c *conn) expire(now time.Time) {
	if c.call.deadline == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := c.oldestActive(); s != nil && s != c.cur && c.pastDeadline(s, now); s = c.oldestActive() {
		s.active = false
		c.inflight--
		c.rec.series.Ended(now)
		c.resets = append(c.resets, s.id)
		if i := slices.Index(c.pending, s); i >= 0 {
			c.pending = slices.Delete(c.pending, i, i+1)
		}
		c.rec.count(ended{status: statusDeadline, planned: s.planned, start: s.start, sent: s.sentAt, at: now, n: c.call.unanswered(s), unanswered: true})
	}
	if c.stopping && c.inflight == 0 {
		c.shut()
	}
}

// slot is where the stream with the id lives in the ring: client stream ids
// are odd, so id>>1 numbers them 0, 1, 2...
func (c *conn) slot(id uint32) *stream { return &c.ring[(id>>1)&c.mask] }

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
