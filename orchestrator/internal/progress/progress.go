// Package progress shows a run as it goes. On a terminal: a bar for the
// whole run with its estimated time left, and a line for the server at
// work (its phase, the current Dockerfile step while building, elapsed and
// remaining time and live req/s while measuring), drawn by mpb. Elsewhere
// (CI, `docker compose up` logs): plain lines only, without control
// characters.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
)

// Reporter hears what a run is doing.
type Reporter interface {
	// Printf writes a line the user keeps: what was built, measured, failed.
	Printf(format string, args ...any)
	// Building says a server's image is being built; Step then names the
	// Dockerfile step under way.
	Building(server string)
	Step(text string)
	// Round says a server's round begins; RoundDone that it ended.
	Round(server string)
	RoundDone()
	// Phase says what the server is doing; d is how long a timed phase
	// (warm-up, measurement) lasts, 0 for the others.
	Phase(name string, d time.Duration)
	// Rate is the live rate of OK calls (or of a stream's messages) while
	// measuring, in unit (req/s or msg/s).
	Rate(rate float64, unit string)
	// Close draws the last state and stops.
	Close()
}

// New reports to w: with bars when w is a terminal, plain lines otherwise.
// planned rounds are expected to take about perRound each, until some have
// been measured, for the estimate of the time left.
func New(w io.Writer, planned int, perRound time.Duration) Reporter {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return newBars(w, planned, perRound)
	}
	return &plain{w: w}
}

// Plain is a Reporter that writes lines only, for tests and logs.
func Plain(w io.Writer) Reporter { return &plain{w: w} }

// plainEvery spaces the lines a plain reporter writes during a long timed
// phase.
const plainEvery = 10 * time.Second

type plain struct {
	mu      sync.Mutex
	w       io.Writer
	server  string
	phase   string
	started time.Time
	length  time.Duration
	rate    float64
	unit    string
	said    time.Time
}

func (p *plain) Printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, escape.Text(fmt.Sprintf(format, args...)))
}

func (p *plain) Building(name string) { p.Round(name) }

func (p *plain) Round(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.server = name
}

func (p *plain) Phase(name string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.started, p.length, p.rate, p.said = name, time.Now(), d, 0, time.Now()
}

// Rate writes a line now and then during a long measurement, so that a log
// shows the run is alive.
func (p *plain) Rate(rate float64, unit string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate, p.unit = rate, unit
	if time.Since(p.said) < plainEvery {
		return
	}
	p.said = time.Now()
	fmt.Fprintf(p.w, "%s: %s, %s of %s, %.0f %s\n", p.server, p.phase, time.Since(p.started).Round(time.Second), p.length, rate, unit)
}

func (p *plain) Step(string) {}
func (p *plain) RoundDone()  {}
func (p *plain) Close()      {}

// statusScale is the status bar's resolution over a timed phase.
const statusScale = 1000

// bars draws on a terminal.
type bars struct {
	p       *mpb.Progress
	run     *mpb.Bar
	status  *mpb.Bar
	stop    chan struct{}
	stopped sync.WaitGroup

	mu         sync.Mutex
	roundStart time.Time
	spent      time.Duration // in the rounds done
	done       int
	planned    int
	perRound   time.Duration
	server     string
	phase      string
	step       string
	since      time.Time
	length     time.Duration
	rate       float64
	unit       string
}

func newBars(w io.Writer, planned int, perRound time.Duration) *bars {
	b := &bars{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(30)), stop: make(chan struct{}),
		planned: planned, perRound: perRound, since: time.Now()}
	b.run = b.p.AddBar(int64(max(planned, 1)),
		mpb.PrependDecorators(decor.Name("run "), decor.CountersNoUnit("%d/%d rounds")),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return b.left() })))
	// One more than a phase can reach: a complete bar stops being drawn,
	// and this one lives as long as the run.
	b.status = b.p.AddBar(statusScale+1,
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return b.what() }, decor.WC{W: 40, C: decor.DindentRight})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return b.timing() })))
	b.stopped.Add(1)
	go b.tick()
	return b
}

// tick moves the status bar through the timed phase.
func (b *bars) tick() {
	defer b.stopped.Done()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		b.mu.Lock()
		var current int64
		if b.length > 0 {
			current = min(statusScale, int64(statusScale*time.Since(b.since)/b.length))
		}
		b.mu.Unlock()
		b.status.SetCurrent(current)
	}
}

// left estimates the run's remaining time: the rounds left at the average
// time of those done, or at the planned time before any is done.
func (b *bars) left() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	each := b.perRound
	if b.done > 0 {
		each = b.spent / time.Duration(b.done)
	}
	rest := time.Duration(max(0, b.planned-b.done)) * each
	return fmt.Sprintf("about %s left", rest.Round(time.Second))
}

func (b *bars) what() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.step != "" && b.phase == "building" {
		return fmt.Sprintf("%s: building, %s", b.server, b.step)
	}
	return fmt.Sprintf("%s: %s", b.server, b.phase)
}

func (b *bars) timing() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	elapsed := time.Since(b.since).Round(100 * time.Millisecond)
	if b.length == 0 {
		return elapsed.String()
	}
	text := fmt.Sprintf("%s of %s, %s left", elapsed, b.length, max(0, b.length-elapsed).Round(100*time.Millisecond))
	if b.rate > 0 {
		text += fmt.Sprintf(", %.0f %s", b.rate, b.unit)
	}
	return text
}

// Printf's lines may quote a server or a build: they are shown escaped.
func (b *bars) Printf(format string, args ...any) {
	fmt.Fprintln(b.p, escape.Text(fmt.Sprintf(format, args...)))
}

func (b *bars) Building(name string) {
	b.mu.Lock()
	b.server = name
	b.mu.Unlock()
	b.Phase("building", 0)
}

func (b *bars) Round(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.server, b.roundStart = name, time.Now()
}

func (b *bars) Phase(name string, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.phase, b.since, b.length, b.rate, b.step = name, time.Now(), d, 0, ""
}

func (b *bars) Rate(rate float64, unit string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rate, b.unit = rate, unit
}

func (b *bars) Step(text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.step = escape.Text(text) // a line of build output
}

func (b *bars) RoundDone() {
	b.mu.Lock()
	b.done++
	b.spent += time.Since(b.roundStart)
	b.mu.Unlock()
	b.run.Increment()
}

func (b *bars) Close() {
	close(b.stop)
	b.stopped.Wait()
	b.run.SetTotal(-1, true)
	b.status.SetTotal(-1, true)
	b.p.Wait()
}

// StepWriter passes a build's output to r as steps: each line the classic
// builder starts with "Step " ("Step 3/9 : RUN go build ...").
func StepWriter(r Reporter) io.Writer { return &stepWriter{r: r} }

type stepWriter struct {
	r    Reporter
	line []byte
}

func (s *stepWriter) Write(b []byte) (int, error) {
	for _, c := range b {
		if c != '\n' {
			s.line = append(s.line, c)
			continue
		}
		if text := strings.TrimSpace(string(s.line)); strings.HasPrefix(text, "Step ") {
			s.r.Step(text)
		}
		s.line = s.line[:0]
	}
	return len(b), nil
}
