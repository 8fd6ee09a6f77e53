package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// recorder is a Reporter that keeps the steps it is told.
type recorder struct {
	plain
	steps []string
}

func (r *recorder) Step(text string) { r.steps = append(r.steps, text) }

func TestStepWriterPassesBuildSteps(t *testing.T) {
	r := &recorder{}
	w := StepWriter(r)
	// The classic builder's output arrives in pieces that split lines.
	for _, piece := range []string{"Step 1/3 : FROM debian", ":bookworm-slim\n ---> 3f2\nStep 2/3", " : RUN make\nbuilding...\n", "Step 3/3 : CMD x\n"} {
		if n, err := w.Write([]byte(piece)); n != len(piece) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	want := []string{"Step 1/3 : FROM debian:bookworm-slim", "Step 2/3 : RUN make", "Step 3/3 : CMD x"}
	if strings.Join(r.steps, "|") != strings.Join(want, "|") {
		t.Errorf("steps %q, want %q", r.steps, want)
	}
}

// TestPlainWritesLinesOnly: without a terminal, lines without control
// characters, and during a long measurement a line now and then.
func TestPlainWritesLinesOnly(t *testing.T) {
	var b bytes.Buffer
	p := New(&b, 3, time.Second) // a buffer is no terminal
	p.Printf("go_grpc: round %d of %d", 1, 3)
	p.Round("go_grpc")
	p.Phase("measuring with h2", 20*time.Second)
	p.Rate(1000, "req/s") // too soon after the phase began for a line
	p.(*plain).said = time.Now().Add(-plainEvery)
	p.Rate(61234, "msg/s")
	p.Close()
	out := b.String()
	if strings.ContainsAny(out, "\x1b\r") {
		t.Errorf("control characters in %q", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || lines[0] != "go_grpc: round 1 of 3" || !strings.HasPrefix(lines[1], "go_grpc: measuring with h2, ") ||
		!strings.HasSuffix(lines[1], "of 20s, 61234 msg/s") {
		t.Errorf("lines %q", lines)
	}
}

// TestServerTextIsShownEscaped: a reason that quotes a server, with
// escape sequences and line breaks, is one line of visible text, on a
// terminal's status line as in plain output.
func TestServerTextIsShownEscaped(t *testing.T) {
	var b bytes.Buffer
	p := Plain(&b)
	p.Printf("%s: %s failed: %s", "evil", "conformance", "\x1b]0;pwned\x07\x1b[2J\n| fake | 999999 |")
	if got, want := b.String(), "evil: conformance failed: \\x1b]0;pwned\\a\\x1b[2J\\n| fake | 999999 |\n"; got != want {
		t.Errorf("Printf wrote %q, want %q", got, want)
	}
	bars := &bars{}
	bars.Phase("building", 0)
	bars.Step("Step 2/9 : RUN echo \x1b[2J")
	if bars.step != `Step 2/9 : RUN echo \x1b[2J` {
		t.Errorf("the status line's step is %q", bars.step)
	}
}
