package h2

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
)

// TestHeaderBlocks decodes the blocks as a server's HPACK decoder sees
// them: the first block and then the indexed one, many times, on one
// connection; the plain block on a decoder with no table at all.
func TestHeaderBlocks(t *testing.T) {
	c, err := newCall(context.Background(), "127.0.0.1:50051", loadtest.ScenarioDir("complex_proto"))
	if err != nil {
		t.Fatal(err)
	}
	decode := func(d *hpack.Decoder, block []byte) []string {
		fields, err := d.DecodeFull(block)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range fields {
			out = append(out, f.Name+": "+f.Value)
		}
		return out
	}
	want := []string{":method: POST", ":scheme: http", ":path: /helloworld.Greeter/SayHello", ":authority: 127.0.0.1:50051",
		"content-type: application/grpc", "te: trailers", "user-agent: grpcbench"}
	server := hpack.NewDecoder(4096, nil)
	if got := decode(server, c.firstBlock); !slices.Equal(got, want) {
		t.Errorf("first block: %q", got)
	}
	for range 3 {
		if got := decode(server, c.indexedBlock); !slices.Equal(got, want) {
			t.Errorf("indexed block: %q", got)
		}
	}
	if len(c.indexedBlock) >= len(c.plainBlock)/4 {
		t.Errorf("indexed block is %d bytes, plain %d: the fields are not indexed", len(c.indexedBlock), len(c.plainBlock))
	}
	if got := decode(hpack.NewDecoder(0, nil), c.plainBlock); !slices.Equal(got, want) {
		t.Errorf("plain block: %q", got)
	}
	if c.tableSize == 0 || c.tableSize > 4096 {
		t.Errorf("table size %d", c.tableSize)
	}
}

// streamCall is the call of a streaming scenario.
func streamCall(t testing.TB, name string) *call {
	t.Helper()
	c, err := newCall(context.Background(), "127.0.0.1:1", loadtest.ScenarioDir(name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// settledConn is a connection whose server's SETTINGS gave it the initial
// stream window and let it use plain header blocks.
func settledConn(c *call, slots int, window int64) *conn {
	cn := newConn(newScriptConn(nil), c, slots, scriptCounter(), &load.Schedule{})
	cn.settled, cn.initialWindow, cn.connWindow = true, window, 1<<30
	cn.block = c.plainBlock
	cn.template = requestTemplate(cn.block, c.body, c.firstSend())
	return cn
}

// sentFrame is a frame the client wrote, as the server reads it.
type sentFrame struct {
	typ  http2.FrameType
	id   uint32
	data []byte
	end  bool
}

// sent parses and clears what the connection wrote.
func sent(t *testing.T, cn *conn) []sentFrame {
	t.Helper()
	fr := http2.NewFramer(nil, bytes.NewReader(cn.out))
	var out []sentFrame
	for {
		f, err := fr.ReadFrame()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the client wrote a bad frame: %v", err)
		}
		sf := sentFrame{typ: f.Header().Type, id: f.Header().StreamID}
		switch f := f.(type) {
		case *http2.DataFrame:
			sf.data, sf.end = bytes.Clone(f.Data()), f.StreamEnded()
		case *http2.HeadersFrame:
			sf.end = f.StreamEnded()
		}
		out = append(out, sf)
	}
	cn.out = cn.out[:0]
	return out
}

// TestStreamRequestFraming: a client stream sends its messages, framed one
// after the other, and half-closes with the last byte; a bidi stream sends
// one message, and the next only once the previous one is answered, the
// last with END_STREAM.
func TestStreamRequestFraming(t *testing.T) {
	t.Run("client stream", func(t *testing.T) {
		c := streamCall(t, "stream_client")
		cn := settledConn(c, 1, 1<<20)
		cn.fill(time.Now())
		frames := sent(t, cn)
		if len(frames) != 2 || frames[0].typ != http2.FrameHeaders || frames[0].end || frames[1].typ != http2.FrameData || !frames[1].end {
			t.Fatalf("frames %+v: want HEADERS, then one DATA that ends the stream", frames)
		}
		if want := bytes.Repeat(c.body[:c.message], 10); !bytes.Equal(frames[1].data, want) {
			t.Errorf("DATA is %d bytes, want 10 framed requests of %d", len(frames[1].data), c.message)
		}
	})
	t.Run("bidi stream", func(t *testing.T) {
		c := streamCall(t, "stream_pingpong")
		cn := settledConn(c, 1, 1<<20)
		cn.fill(time.Now())
		frames := sent(t, cn)
		if len(frames) != 2 || frames[1].end || !bytes.Equal(frames[1].data, c.body[:c.message]) {
			t.Fatalf("frames %+v: want HEADERS and one request, the stream left open", frames)
		}
		s := cn.slot(frames[0].id)
		for i := 2; i <= 10; i++ {
			cn.fill(time.Now())
			if more := sent(t, cn); len(more) != 0 {
				t.Fatalf("request %d sent before the echo of %d: %+v", i, i-1, more)
			}
			cn.compare(s, c.expect)
			cn.fill(time.Now())
			frames := sent(t, cn)
			if len(frames) != 1 || frames[0].typ != http2.FrameData || !bytes.Equal(frames[0].data, c.body[:c.message]) || frames[0].end != (i == 10) {
				t.Fatalf("after echo %d: frames %+v, want request %d (END_STREAM only on the 10th)", i-1, frames, i)
			}
		}
		cn.compare(s, c.expect)
		cn.fill(time.Now())
		if more := sent(t, cn); len(more) != 0 || s.answers != 10 {
			t.Errorf("after the 10th echo: %d answers, frames %+v", s.answers, more)
		}
	})
}

// TestStreamRespectsTheSendWindow: a client stream whose body is larger
// than the server's stream window sends what the window allows, and the
// rest as WINDOW_UPDATEs open it, never more.
func TestStreamRespectsTheSendWindow(t *testing.T) {
	c := streamCall(t, "stream_client")
	const window = 100
	cn := settledConn(c, 1, window)
	cn.fill(time.Now())
	frames := sent(t, cn)
	if len(frames) != 2 || len(frames[1].data) != window || frames[1].end {
		t.Fatalf("frames %+v: want HEADERS and %d bytes of DATA, the stream left open", frames, window)
	}
	s := cn.slot(frames[0].id)
	got := frames[1].data
	for len(got) < len(c.body) {
		s.sendWindow += 250 // the server's WINDOW_UPDATE
		cn.fill(time.Now())
		more := sent(t, cn)
		if len(more) != 1 || len(more[0].data) > 250 {
			t.Fatalf("after a WINDOW_UPDATE of 250: frames %+v", more)
		}
		got = append(got, more[0].data...)
		if more[0].end != (len(got) == len(c.body)) {
			t.Fatalf("END_STREAM %v with %d of %d bytes sent", more[0].end, len(got), len(c.body))
		}
	}
	if !bytes.Equal(got, c.body) {
		t.Errorf("the body sent differs from the call's")
	}
}
