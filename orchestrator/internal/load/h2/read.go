package h2

// The reader side of a connection: one goroutine reads the server's frames,
// checks the answers and records the calls.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

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
		} else if s := c.slot(f.StreamID); s.active && s.id == f.StreamID {
			s.sendWindow += int64(f.Increment)
		}
		c.mu.Unlock()
	case *http2.PingFrame:
		if !f.IsAck() {
			c.mu.Lock()
			c.pings = append(c.pings, f.Data)
			c.mu.Unlock()
		}
	case *http2.GoAwayFrame:
		c.onGoAway(f.LastStreamID)
	case *http2.RSTStreamFrame:
		if s := c.lookup(f.StreamID); s != nil {
			c.finish(s, codeName(rstStreamCode(f.ErrCode)))
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
		c.finish(s, codeName(codes.Unavailable))
	}
	c.mu.Lock()
	if c.inflight == 0 {
		c.shut()
	}
	c.mu.Unlock()
}

// lookup returns the active stream with the id, or nil.
func (c *conn) lookup(id uint32) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.slot(id); s.active && s.id == id {
		return s
	}
	return nil
}

// finish ends a call with a status and records it: a unary call as one
// message, a client stream as the messages it sent. A stream of answers
// counted each as it came (answer); what ends it is counted only when it
// is not OK.
func (c *conn) finish(s *stream, status string) {
	now := time.Now()
	c.mu.Lock()
	start, sentAt := s.start, s.sentAt
	s.active = false
	c.inflight--
	c.rec.series.Ended(now)
	if c.stopping && c.inflight == 0 {
		c.shut()
	}
	c.mu.Unlock()
	ok := status == codeName(codes.OK)
	switch {
	case c.call.kind == scenario.ClientStreaming && ok:
		c.rec.addN(status, now.Sub(start), now.Sub(sentAt), now, uint64(len(c.call.body)/c.call.message))
	case c.call.kind == scenario.Unary || !ok:
		c.rec.add(status, now.Sub(start), now.Sub(sentAt), now)
	}
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
		v, ok := strings.CutPrefix(f.Value, grpcContentType)
		s.grpcContent = ok && (v == "" || v[0] == '+' || v[0] == ';')
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
		c.mu.Unlock()
		s.unacked = 0
	}
	if f.StreamEnded() {
		// An answer without trailers has no grpc-status: outcome says so.
		c.finish(s, c.outcome(s))
	}
}

// maxAnswer bounds the answer a stream keeps to judge by meaning: a length
// prefix past it makes the answer wrong at once.
const maxAnswer = recvStreamWindow

// compare checks the answers' bytes against the expected echo as they
// arrive, one answer after the other, keeping an answer's bytes only once
// they differ; each whole answer is counted (answer).
func (c *conn) compare(s *stream, data []byte) {
	exp := c.call.expect
	for len(data) > 0 && !s.skip {
		if !s.mismatch {
			n := min(len(data), len(exp)-s.matched)
			if string(exp[s.matched:s.matched+n]) == string(data[:n]) {
				s.matched += n
				data = data[n:]
				if s.matched == len(exp) {
					s.matched = 0
					c.answer(s, true)
				}
				continue
			}
			s.mismatch = true
			s.body = append(s.body[:0], exp[:s.matched]...)
		}
		// The answer's length prefix says where it ends.
		need := grpcPrefixLen
		if len(s.body) >= grpcPrefixLen {
			need += int(binary.BigEndian.Uint32(s.body[1:grpcPrefixLen]))
		}
		if need > maxAnswer {
			s.wrong, s.skip = true, true
			return
		}
		n := min(len(data), need-len(s.body))
		s.body = append(s.body, data[:n]...)
		data = data[n:]
		if len(s.body) == grpcPrefixLen {
			need += int(binary.BigEndian.Uint32(s.body[1:grpcPrefixLen]))
		}
		if len(s.body) == need {
			c.answer(s, c.isEcho(s.body))
			s.mismatch, s.matched, s.body = false, 0, s.body[:0]
		}
	}
}

// answer counts one whole answer of a stream. On a stream of answers, each
// is a message of the load, recorded as it comes with its latency; a bidi
// stream then sends its next request, even after a wrong answer, so that
// the call ends (with its status) rather than waits.
func (c *conn) answer(s *stream, echo bool) {
	wrong := !echo || s.answers == c.call.replies
	if wrong {
		s.wrong = true
	} else {
		s.answers++
	}
	lockstep := c.call.lockstep()
	if !lockstep && (wrong || c.call.replies == 1) {
		return // a unary call or a client stream is recorded when it ends
	}
	now := time.Now()
	c.mu.Lock()
	start := s.start
	// The service latency runs from the actual send; only a stream's first
	// message, in an open loop, was meant to start earlier.
	sent := start
	if s.sentAt.After(sent) {
		sent = s.sentAt
	}
	if lockstep {
		if s.sent == s.limit && s.limit < len(c.call.body) {
			c.pending = append(c.pending, s)
		}
		s.limit = min(s.limit+c.call.message, len(c.call.body))
	} else {
		s.start = now
	}
	c.mu.Unlock()
	if !wrong {
		c.rec.add(codeName(codes.OK), now.Sub(start), now.Sub(sent), now)
	}
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
	case s.httpStatus != http.StatusOK:
		if s.httpStatus < 0 {
			return codeName(codes.Internal) // no :status
		}
		return codeName(httpStatusCode(s.httpStatus))
	case !s.grpcContent:
		return codeName(codes.Internal)
	case s.grpcStatus < 0:
		return codeName(codes.Internal) // no grpc-status trailer
	case s.grpcStatus != int(codes.OK):
		return statusName(s.grpcStatus)
	case !s.wrong && !s.mismatch && s.matched == 0 && s.answers == c.call.replies:
		return codeName(codes.OK)
	default:
		return StatusMismatch // a wrong answer, too few, or one cut short
	}
}
