package h2

import (
	"context"
	"slices"
	"testing"

	"golang.org/x/net/http2/hpack"

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
