package h2

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/grpcbench/grpcbench/orchestrator/internal/certs"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// call is what every request of a run sends and expects, encoded once.
type call struct {
	// The request headers as HPACK blocks, encoded once. firstBlock adds the
	// headers to the server's decoder table; indexedBlock, sent with every
	// later call of the connection, names them by index, as a client that
	// keeps its HPACK state does; the server decodes nothing anew. A server
	// whose table cannot hold tableSize bytes gets plainBlock, never-indexed
	// literals that leave its table alone.
	firstBlock, indexedBlock, plainBlock []byte
	tableSize                            uint32
	// kind is the scenario's call kind, path its method's HTTP/2 path.
	kind scenario.Kind
	path string
	// body is every message a call sends, each in gRPC's framing (flag,
	// length, protobuf request), one after the other: one for unary and
	// server-streaming calls, the scenario's Sends for client and bidi
	// streams. The last DATA frame of it half-closes the stream.
	body []byte
	// message is the length of one framed request: a bidi call sends its
	// body one message at a time, each after the previous one's echo.
	message int
	// replies is how many answers a call gets, each an echo.
	replies int
	// expect is one correct answer: the request's inner message echoed as
	// HelloReply.response. HelloRequest.request and HelloReply.response are
	// both field 1 of the same type, so the bytes are the request's bytes,
	// as long as the server encodes fields in the usual order; isEcho
	// checks the meaning when the bytes differ.
	expect []byte
	isEcho func(body []byte) bool
	// tls, when set, is the connections' TLS configuration (secure).
	tls *tls.Config
	// deadline is, in an open loop, each call's, from its intended start,
	// sent as grpc-timeout; 0 in a closed loop, whose calls have none.
	deadline time.Duration
}

// messages is how many messages of the load one call is: the echoes a
// bidi stream or the replies a server stream gets, the requests a client
// stream sends; 1 for unary.
func (c *call) messages() uint64 {
	if c.kind == scenario.ClientStreaming {
		return uint64(len(c.body) / c.message)
	}
	return uint64(c.replies)
}

// unanswered is how many of a call's messages have no answer counted: all
// of a unary call's or a client stream's (counted when they end), those a
// stream of answers still owes.
func (c *call) unanswered(s *stream) uint64 {
	if c.kind == scenario.Unary || c.kind == scenario.ClientStreaming {
		return c.messages()
	}
	return uint64(max(0, c.replies-s.answers))
}

// lockstep says whether the call sends its messages one at a time, each
// after the previous one's answer (a ping-pong on a bidi stream).
func (c *call) lockstep() bool { return c.kind == scenario.BidiStreaming }

// firstSend is how much of the body a call may send when it starts.
func (c *call) firstSend() int {
	if c.lockstep() {
		return c.message
	}
	return len(c.body)
}

// encodeHeaders encodes the request headers' blocks for the target, under
// the scheme the connections use.
func (c *call) encodeHeaders(target, scheme string) {
	fields := []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: scheme}, {Name: ":path", Value: c.path},
		{Name: ":authority", Value: target}, {Name: "content-type", Value: grpcContentType},
		{Name: "te", Value: "trailers"}, {Name: "user-agent", Value: "grpcbench"},
	}
	if c.deadline > 0 {
		fields = append(fields, hpack.HeaderField{Name: "grpc-timeout", Value: grpcTimeout(c.deadline)})
	}
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	block := func(sensitive bool) []byte {
		buf.Reset()
		for _, f := range fields {
			f.Sensitive = sensitive
			_ = enc.WriteField(f) // writes to a bytes.Buffer, which does not fail
		}
		return bytes.Clone(buf.Bytes())
	}
	c.plainBlock = block(true)
	c.firstBlock = block(false)
	c.indexedBlock = block(false)
	c.tableSize = 0
	for _, f := range fields {
		c.tableSize += f.Size()
	}
}

// secure has the call's connections go over TLS, verified against the CA
// certificate in caFile, with the https scheme.
func (c *call) secure(target, caFile string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("read the CA certificate: %w", err)
	}
	if c.tls, err = certs.ClientConfig(ca); err != nil {
		return fmt.Errorf("%s: %w", caFile, err)
	}
	c.encodeHeaders(target, "https")
	return nil
}

// grpcTimeout is a grpc-timeout value: at most 8 digits, in the finest
// unit that holds d, rounded up.
func grpcTimeout(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}} {
		if n := (d + u.d - 1) / u.d; n <= 99_999_999 {
			return strconv.FormatInt(int64(n), 10) + u.name
		}
	}
	return strconv.FormatInt(int64((d+time.Hour-1)/time.Hour), 10) + "H"
}

// newCall encodes the scenario's call for target; deadline is each call's,
// 0 for none.
func newCall(ctx context.Context, target, scenarioDir string, deadline time.Duration) (*call, error) {
	sc, err := scenario.Load(ctx, scenarioDir)
	if err != nil {
		return nil, err
	}
	req, err := sc.RequestBytes()
	if err != nil {
		return nil, err
	}
	// The echo of a RepliesRequest is its hello alone, as a HelloReply.
	reply := sc.NewResponse()
	field := sc.Method.Output().Fields().ByNumber(1)
	reply.Set(field, sc.Request.Get(sc.Method.Input().Fields().ByNumber(1)))
	expect, err := proto.MarshalOptions{Deterministic: true}.Marshal(reply)
	if err != nil {
		return nil, err
	}
	one := load.GRPCFrame(req)
	c := &call{kind: sc.Kind, path: sc.FullMethod(), body: bytes.Repeat(one, sc.Sends), message: len(one), replies: sc.Replies,
		expect: load.GRPCFrame(expect), deadline: deadline}
	c.encodeHeaders(target, "http")

	inner := sc.Request.Get(sc.Method.Input().Fields().ByNumber(1)).Message().Interface()
	c.isEcho = func(body []byte) bool {
		msg, ok := grpcMessage(body)
		if !ok {
			return false
		}
		reply := sc.NewResponse()
		if err := proto.Unmarshal(msg, reply); err != nil {
			return false
		}
		return proto.Equal(reply.Get(field).Message().Interface(), inner)
	}
	return c, nil
}

const (
	grpcContentType = "application/grpc"
	// grpcPrefixLen is the prefix of a gRPC message: a compression flag and
	// a 4-byte length.
	grpcPrefixLen = 5
)

// grpcMessage returns the one uncompressed message of a response body.
func grpcMessage(body []byte) ([]byte, bool) {
	if len(body) < grpcPrefixLen || body[0] != 0 {
		return nil, false
	}
	n := binary.BigEndian.Uint32(body[1:grpcPrefixLen])
	if uint64(len(body)-grpcPrefixLen) != uint64(n) {
		return nil, false
	}
	return body[grpcPrefixLen:], true
}

// StatusMismatch counts calls whose grpc-status was OK but whose answer was
// not the echo of the request.
const StatusMismatch = "PayloadMismatch"

// statusNames are the gRPC code names, indexed by code, so that counting a
// status allocates nothing.
var statusNames = func() []string {
	names := make([]string, codes.Unauthenticated+1) // the last code
	for i := range names {
		names[i] = codes.Code(i).String()
	}
	return names
}()

// codeName is statusName for a code of the gRPC package.
func codeName(c codes.Code) string { return statusName(int(c)) }

func statusName(code int) string {
	if code >= 0 && code < len(statusNames) {
		return statusNames[code]
	}
	return "Code(" + strconv.Itoa(code) + ")"
}

// httpStatusCode maps a non-200 HTTP status to a gRPC code as gRPC's
// specification does (doc/http-grpc-status-mapping.md).
func httpStatusCode(status int) codes.Code {
	switch status {
	case http.StatusBadRequest:
		return codes.Internal
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.Unimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codes.Unavailable
	default:
		return codes.Unknown
	}
}

// rstStreamCode maps an RST_STREAM error to a gRPC code as gRPC's HTTP/2
// transport does.
func rstStreamCode(e http2.ErrCode) codes.Code {
	switch e {
	case http2.ErrCodeRefusedStream:
		return codes.Unavailable
	case http2.ErrCodeCancel:
		return codes.Canceled
	case http2.ErrCodeEnhanceYourCalm:
		return codes.ResourceExhausted
	case http2.ErrCodeInadequateSecurity:
		return codes.PermissionDenied
	default:
		return codes.Internal
	}
}

// parseStatus reads a grpc-status or :status value without allocating.
func parseStatus(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return n
}

// errNoSettings ends a connection whose server never said how to talk to it.
var errNoSettings = errors.New("server sent no SETTINGS")
