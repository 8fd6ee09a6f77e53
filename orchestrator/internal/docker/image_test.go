package docker

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// TestBuildSendsItsLimitsAndReturnsTheImage: the classic builder, the
// step's memory without swap and its CPU quota, the labels and arguments;
// the builder's messages go to the log, and the image's id comes back.
func TestBuildSendsItsLimitsAndReturnsTheImage(t *testing.T) {
	f := newFakeEngine(t)
	f.build = []string{`{"stream":"Step 1/2 : FROM debian:bookworm-slim\n"}`, `{"stream":"Successfully built 0123\n"}`}
	var log bytes.Buffer
	id, err := f.connect(t).Build(context.Background(), strings.NewReader(""), backend.BuildOptions{Tag: "bench:srv-p", Labels: map[string]string{"io.grpcbench.server": "srv"},
		BuildArgs: map[string]string{"V": "1"}, Memory: 6 << 30, CPUs: 1.5}, &log)
	if err != nil {
		t.Fatal(err)
	}
	if img := f.imageOf("bench:srv-p"); img == nil || id != img.id {
		t.Errorf("Build = %q, want the id of the image tagged (%+v)", id, img)
	}
	if !strings.Contains(log.String(), "Step 1/2 : FROM debian:bookworm-slim") {
		t.Errorf("log: %q", log.String())
	}
	f.mu.Lock()
	q := f.buildQuery
	f.mu.Unlock()
	for k, want := range map[string]string{"t": "bench:srv-p", "version": "1", "memory": "6442450944", "memswap": "6442450944",
		"cpuperiod": "100000", "cpuquota": "150000", "forcerm": "1"} {
		if got := q.Get(k); got != want {
			t.Errorf("build %s=%q, want %q", k, got, want)
		}
	}
	if !strings.Contains(q.Get("labels"), `"io.grpcbench.server":"srv"`) || !strings.Contains(q.Get("buildargs"), `"V":"1"`) {
		t.Errorf("build labels %s, args %s", q.Get("labels"), q.Get("buildargs"))
	}
}

// TestBuildFailsOnTheBuildersError: an error message in the stream fails
// the build with the builder's reason, after what it wrote before.
func TestBuildFailsOnTheBuildersError(t *testing.T) {
	f := newFakeEngine(t)
	f.build = []string{`{"stream":"Step 2/2 : RUN make\n"}`,
		`{"errorDetail":{"code":137,"message":"The command '/bin/sh -c make' returned a non-zero code: 137"},"error":"The command '/bin/sh -c make' returned a non-zero code: 137"}`}
	var log bytes.Buffer
	_, err := f.connect(t).Build(context.Background(), strings.NewReader(""), backend.BuildOptions{Tag: "bench:srv-p"}, &log)
	if err == nil || !strings.Contains(err.Error(), "build bench:srv-p: ") || !strings.Contains(err.Error(), "returned a non-zero code: 137") {
		t.Errorf("Build = %v, want the builder's reason", err)
	}
	if !strings.Contains(log.String(), "RUN make") {
		t.Errorf("log: %q", log.String())
	}
	if f.imageOf("bench:srv-p") != nil {
		t.Error("a failed build tagged an image")
	}
}

// TestImageIDOfAMissingImage: an image the engine does not have is
// backend.ErrMissing, which a build takes for "build it".
func TestImageIDOfAMissingImage(t *testing.T) {
	f := newFakeEngine(t)
	if _, err := f.connect(t).ImageID(context.Background(), "none:here"); !errors.Is(err, backend.ErrMissing) {
		t.Errorf("ImageID of no image = %v, want ErrMissing", err)
	}
}
