package harness

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// statsRecorder keeps a container's stats stream: every sample, in memory
// for the figures and on disk in the record's form for the report's charts
// and whoever wants to check them.
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
		out, err := srv.spec.Folder.Create(file)
		if err != nil {
			slog.Error("samples file", "err", err)
			return
		}
		defer out.Close()
		enc := json.NewEncoder(out)
		err = c.Stats(ctx, io.Discard, func(s backend.Sample) {
			if err := enc.Encode(record.SampleOf(s)); err != nil {
				slog.Error("samples file", "file", file, "err", err)
			}
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
