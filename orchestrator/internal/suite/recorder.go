package suite

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/grpcbench/grpcbench/orchestrator/internal/usage"
)

// statsRecorder keeps a container's stats stream: every sample, in memory
// for the figures and raw on disk for whoever wants to check them.
type statsRecorder struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples []usage.Sample
}

func (srv *Server) recordStats(ctx context.Context, c Container, file string) *statsRecorder {
	ctx, cancel := context.WithCancel(ctx)
	rec := &statsRecorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rec.done)
		body, err := c.Stats(ctx)
		if err != nil {
			slog.Error("stats stream", "server", srv.spec.Name, "file", file, "err", err)
			return
		}
		defer body.Close()
		raw, err := srv.spec.Folder.Create(file)
		if err != nil {
			slog.Error("stats file", "err", err)
			return
		}
		defer raw.Close()
		err = usage.Read(io.TeeReader(body, raw), func(s usage.Sample) {
			rec.mu.Lock()
			rec.samples = append(rec.samples, s)
			rec.mu.Unlock()
		})
		if err != nil && ctx.Err() == nil {
			slog.Error("stats stream", "server", srv.spec.Name, "file", file, "err", err)
		}
	}()
	return rec
}

// stop ends the stream and returns the samples read.
func (rec *statsRecorder) stop() []usage.Sample {
	rec.cancel()
	<-rec.done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.samples
}
