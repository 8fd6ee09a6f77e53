package suite

import (
	"context"
	"log/slog"
	"sync"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// statsRecorder keeps a container's stats stream: every sample, in memory
// for the figures and raw on disk for whoever wants to check them.
type statsRecorder struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples []backend.Sample
}

func (srv *Instance) recordStats(ctx context.Context, c backend.Container, file string) *statsRecorder {
	ctx, cancel := context.WithCancel(ctx)
	rec := &statsRecorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rec.done)
		raw, err := srv.spec.Folder.Create(file)
		if err != nil {
			slog.Error("stats file", "err", err)
			return
		}
		defer raw.Close()
		err = c.Stats(ctx, raw, func(s backend.Sample) {
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
func (rec *statsRecorder) stop() []backend.Sample {
	rec.cancel()
	<-rec.done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.samples
}
