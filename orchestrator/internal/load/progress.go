package load

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
)

// progressPrefix starts the lines a client writes on its standard error
// about how many calls were answered so far.
const progressPrefix = "progress "

// Progress is one such line.
type Progress struct {
	// OK is the number of calls answered OK so far, warm-up included.
	OK uint64 `json:"ok"`
	// At is when the client counted them: the rate does not depend on how
	// the lines travel.
	At time.Time `json:"at"`
}

// ReportProgress writes answered's count to w every interval until the
// returned stop is called.
func ReportProgress(w io.Writer, answered *atomic.Uint64, every time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				js, _ := json.Marshal(Progress{OK: answered.Load(), At: time.Now()}) // a number and a time always encode
				fmt.Fprintf(w, "%s%s\n", progressPrefix, js)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// ProgressWriter passes what a client writes on to w and calls rate with
// the OK calls per second between two of its progress lines. Close waits
// until everything written has reached w.
func ProgressWriter(w io.Writer, rate func(rps float64)) io.WriteCloser {
	pr, pw := io.Pipe()
	p := &progressWriter{PipeWriter: pw, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pr)
		var last Progress
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(w, line)
			var now Progress
			js, ok := strings.CutPrefix(line, progressPrefix)
			if !ok || json.Unmarshal([]byte(js), &now) != nil {
				continue
			}
			if !last.At.IsZero() && now.OK >= last.OK && now.At.After(last.At) {
				rate(float64(now.OK-last.OK) / now.At.Sub(last.At).Seconds())
			}
			last = now
		}
		_, _ = io.Copy(w, pr) // after a line too long for the scanner, the rest as it is
	}()
	return p
}

type progressWriter struct {
	*io.PipeWriter
	done chan struct{}
}

func (p *progressWriter) Close() error {
	err := p.PipeWriter.Close()
	<-p.done
	return err
}
