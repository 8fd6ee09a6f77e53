package load

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestProgressLinesGiveARate(t *testing.T) {
	var out bytes.Buffer
	var rates []float64
	w := ProgressWriter(&out, func(rps float64) { rates = append(rates, rps) })
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	io.WriteString(w, "starting\n")
	for i, ok := range []uint64{0, 1000, 3000, 3000} {
		fmt.Fprintf(w, `progress {"ok":%d,"at":"%s"}`+"\n", ok, at.Add(time.Duration(i)*500*time.Millisecond).Format(time.RFC3339Nano))
	}
	io.WriteString(w, "progress not json\ndone")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := []float64{2000, 4000, 0}; fmt.Sprint(rates) != fmt.Sprint(want) {
		t.Errorf("rates %v, want %v", rates, want)
	}
	if !strings.HasPrefix(out.String(), "starting\nprogress {") || !strings.HasSuffix(out.String(), "progress not json\ndone\n") {
		t.Errorf("what the client wrote was not passed on:\n%s", out.String())
	}
}

func TestReportProgress(t *testing.T) {
	var n atomic.Uint64
	n.Store(42)
	pr, pw := io.Pipe()
	var rates []float64
	w := ProgressWriter(io.Discard, func(rps float64) { rates = append(rates, rps) })
	copied := make(chan struct{})
	go func() {
		io.Copy(w, pr)
		close(copied)
	}()
	stop := ReportProgress(pw, &n, 10*time.Millisecond)
	time.Sleep(35 * time.Millisecond)
	n.Add(10)
	time.Sleep(35 * time.Millisecond)
	stop()
	pw.Close()
	<-copied
	w.Close()
	if len(rates) < 3 {
		t.Fatalf("only %d rates from about 7 lines", len(rates))
	}
}
