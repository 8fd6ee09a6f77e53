package h2

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
)

// The reader writes what its frames made owed before it reads again, and
// must never block on that write. A server that sends without reading, its
// own writes blocked until the client reads, here a flood of PINGs that
// each ask for an ack: the acks fill both sockets, and a reader waiting
// for the socket to take them would stop reading, the server would wait for
// it, and neither would move again. The server's writes must complete, and
// every ack must arrive, in order, once it reads.
func TestH2ReaderNeverBlocksOnWrites(t *testing.T) {
	const pings = 400_000 // 6.8 MB of acks; the two sockets hold about 4 MB
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	served := make(chan error, 1)
	go func() { served <- floodPings(lis, pings, h2Limit) }()

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		Run(ctx, load.Spec{Target: lis.Addr().String(), ScenarioDir: loadtest.ScenarioDir("complex_proto"),
			Connections: 1, Concurrency: 1, Duration: time.Minute})
	}()
	if err := <-served; err != nil {
		t.Error(err)
	}
	cancel()
	<-ran
}

// floodPings accepts one connection, writes SETTINGS and n PINGs numbered
// from 0 without reading, then reads until it has the n acks.
func floodPings(lis net.Listener, n int, limit time.Duration) error {
	nc, err := lis.Accept()
	if err != nil {
		return err
	}
	defer nc.Close()
	var flood bytes.Buffer
	fr := http2.NewFramer(&flood, nil)
	fr.WriteSettings()
	for i := range n {
		var data [8]byte
		binary.BigEndian.PutUint64(data[:], uint64(i))
		fr.WritePing(false, data)
	}
	nc.SetDeadline(time.Now().Add(limit))
	if _, err := nc.Write(flood.Bytes()); err != nil {
		return fmt.Errorf("the client stopped reading while the socket held its acks: %w", err)
	}
	br := bufio.NewReader(nc)
	if _, err := br.Discard(len(http2.ClientPreface)); err != nil {
		return fmt.Errorf("read the preface: %w", err)
	}
	rfr := http2.NewFramer(nil, br)
	for next := uint64(0); next < uint64(n); {
		f, err := rfr.ReadFrame()
		if err != nil {
			return fmt.Errorf("read ack %d of %d: %w", next, n, err)
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
			if got := binary.BigEndian.Uint64(p.Data[:]); got != next {
				return fmt.Errorf("ack %d carries PING %d", next, got)
			}
			next++
		}
	}
	return nil
}
