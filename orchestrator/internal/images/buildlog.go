package images

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// A build runs third-party steps, so what it prints is bounded before it
// is kept: the progress holds the line being printed, which one line of
// gigabytes would grow without end, and the log file would fill the
// results' disk under `RUN yes`. The builds of the catalog print at most
// 3.3 KB on a line and 1.8 MB in all (rust_grpcio's, with cargo -vv).
const (
	// MaxLogLine is the most of one line of build output kept.
	MaxLogLine = 64 << 10
	// MaxLogSize is the most of a build's output its log file holds.
	MaxLogSize = 64 << 20
)

// boundedLog writes a build's output to its log file, and to steps (which
// read it line by line), lines cut at MaxLogLine and the file at
// MaxLogSize, each cut noted where it happened.
type boundedLog struct {
	file, steps io.Writer
	// line is how much of the current line was passed on; cutting says
	// its rest is being left out.
	line    int
	cutting bool
	// written is what the file holds; full says it reached MaxLogSize.
	written int64
	full    bool
	// linesCut counts the lines cut.
	linesCut int
	// kept is what a Write passes on, reused.
	kept []byte
}

func newBoundedLog(file, steps io.Writer) *boundedLog {
	return &boundedLog{file: file, steps: steps}
}

// Write takes all of b, whatever it leaves out, and passes on what it
// keeps in one write.
func (l *boundedLog) Write(b []byte) (int, error) {
	n := len(b)
	l.kept = l.kept[:0]
	for len(b) > 0 {
		end := bytes.IndexByte(b, '\n') + 1 // 0: the line goes on past b
		part := b
		if end > 0 {
			part = b[:end]
		}
		b = b[len(part):]
		l.keep(part, end > 0)
	}
	return n, l.emit(l.kept)
}

// keep adds what it keeps of part of a line to l.kept; ended says part
// ends the line.
func (l *boundedLog) keep(part []byte, ended bool) {
	switch {
	case l.cutting:
	case l.line+len(part) <= MaxLogLine:
		l.kept = append(l.kept, part...)
		l.line += len(part)
	default:
		l.linesCut++
		l.cutting = true
		l.kept = append(l.kept, part[:MaxLogLine-l.line]...)
		l.kept = fmt.Appendf(l.kept, " [grpcbench: the rest of this line is left out: build output lines are capped at %s]\n", size(MaxLogLine))
	}
	if ended {
		l.line, l.cutting = 0, false
	}
}

// emit passes p on to the steps, and to the file while it has room.
func (l *boundedLog) emit(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if _, err := l.steps.Write(p); err != nil {
		return err
	}
	if l.full {
		return nil
	}
	if room := MaxLogSize - l.written; int64(len(p)) > room {
		p = p[:room]
		l.full = true
	}
	n, err := l.file.Write(p)
	l.written += int64(n)
	if err == nil && l.full {
		_, err = fmt.Fprintf(l.file, "\n[grpcbench: the log stops here: it reached %s; the build went on]\n", size(MaxLogSize))
	}
	return err
}

// Note says what the log left out, "" when nothing.
func (l *boundedLog) Note() string {
	var cut []string
	if l.linesCut > 0 {
		cut = append(cut, fmt.Sprintf("lines over %s cut (%d)", size(MaxLogLine), l.linesCut))
	}
	if l.full {
		cut = append(cut, "the log stops at "+size(MaxLogSize))
	}
	if len(cut) == 0 {
		return ""
	}
	return "build output capped: " + strings.Join(cut, ", ")
}

// size is a power-of-two size of at least 1 KiB, as people read it.
func size(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
