package images

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// TestBuildOutputIsBounded: a build that prints one line of 256 MiB, then
// 96 MiB of short lines, is logged with that line cut at MaxLogLine and the
// file stopped at MaxLogSize, each with a note, the cuts are said to the
// user, and the output is never held in memory whole (the progress reads
// it line by line).
func TestBuildOutputIsBounded(t *testing.T) {
	chunk := bytes.Repeat([]byte("x"), 32<<10) // the engine streams output in messages of at most 32 KiB
	yes := bytes.Repeat([]byte("y\n"), 16<<10)
	flood := func(_ context.Context, log io.Writer) error {
		if _, err := io.WriteString(log, "Step 1/2 : RUN print-a-long-line\n"); err != nil {
			return err
		}
		for range 256 << 20 / len(chunk) {
			if _, err := log.Write(chunk); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(log, "\nStep 2/2 : RUN yes\n"); err != nil {
			return err
		}
		for range 96 << 20 / len(yes) {
			if _, err := log.Write(yes); err != nil {
				return err
			}
		}
		return nil
	}
	root := t.TempDir()
	testfiles.Write(t, filepath.Join(root, "Dockerfile"), "FROM debian:bookworm-slim\n")
	b := Builder{Host: &scriptedHost{build: flood}, Catalog: catalog.Catalog{Root: root}, Name: "bounded"}
	folder := record.Folder{Dir: t.TempDir()}
	var said strings.Builder
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := BuildClient(context.Background(), b, folder, progress.Plain(&said)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("the build's output made %d MiB of allocations: it was held, not streamed", grew>>20)
	}
	log := testfiles.Read(t, folder.Path("grpcbench-build.log"))
	if len(log) > MaxLogSize+1024 {
		t.Errorf("the log holds %d bytes, over its cap of %d", len(log), MaxLogSize)
	}
	lines := strings.Split(log, "\n")
	if len(lines) < 3 || lines[1] != strings.Repeat("x", MaxLogLine)+" [grpcbench: the rest of this line is left out: build output lines are capped at 64 KiB]" {
		t.Errorf("the long line is not cut at %d bytes with a note: %.100q…", MaxLogLine, lines[1])
	}
	if lines[2] != "Step 2/2 : RUN yes" || lines[3] != "y" {
		t.Errorf("what follows the cut line is not logged: %q", lines[2:4])
	}
	if !strings.HasSuffix(log, "\n[grpcbench: the log stops here: it reached 64 MiB; the build went on]\n") {
		t.Errorf("the log does not end with its cap's note: %q", log[len(log)-200:])
	}
	want := "the load client image: build output capped: lines over 64 KiB cut (1), the log stops at 64 MiB (" + folder.Path("grpcbench-build.log") + ")"
	if !strings.Contains(said.String(), want) {
		t.Errorf("the user is not told of the cuts (%s):\n%s", want, said.String())
	}
}

// TestBuildLogKeepsWhatFits: a build within the caps is logged as it
// printed, without a note, a line of MaxLogLine bytes with its newline
// included, and a failure names the log.
func TestBuildLogKeepsWhatFits(t *testing.T) {
	out := "Step 1/1 : RUN make\n" + strings.Repeat("z", MaxLogLine-1) + "\nno newline at the end"
	var file, steps bytes.Buffer
	l := newBoundedLog(&file, &steps)
	for i := 0; i < len(out); i += 1000 {
		if _, err := l.Write([]byte(out[i:min(i+1000, len(out))])); err != nil {
			t.Fatal(err)
		}
	}
	if file.String() != out || steps.String() != out || l.Note() != "" {
		t.Errorf("output within the caps was changed: %d of %d bytes logged, note %q", file.Len(), len(out), l.Note())
	}
}
