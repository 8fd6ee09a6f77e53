//go:build root

package report_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

// chromiumFlags start headless Chromium on a machine without a network:
// without the background-networking flags it waits on requests that never
// return.
var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync"}

// chromium finds Chromium, installing Debian's package when it is missing
// and the test runs as root on a machine with apt-get. It skips the test
// only when Chromium cannot be had.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		t.Fatal("Chromium is not installed and cannot be installed here (needs root and apt-get): apt-get install chromium")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	install := func() ([]byte, error) {
		cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "--no-install-recommends", "chromium", "fonts-liberation")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	out, err := install()
	if err != nil {
		// A fresh machine has no package lists yet.
		if upd, uerr := exec.CommandContext(ctx, "apt-get", "update").CombinedOutput(); uerr != nil {
			t.Fatalf("Chromium is not installed and apt-get update failed: %v\n%s", uerr, tail(upd))
		}
		out, err = install()
	}
	if err != nil {
		t.Fatalf("Chromium is not installed and apt-get install chromium failed: %v\n%s", err, tail(out))
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("apt-get installed chromium but it is not on PATH: %v", err)
	}
	return path
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// proxy is where Chromium sends every request but file: ones: it answers
// none, so nothing leaves the machine, and records each request's first
// line.
type proxy struct {
	ln       net.Listener
	mu       sync.Mutex
	requests []string
}

func newProxy(t *testing.T) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			p.mu.Lock()
			p.requests = append(p.requests, strings.TrimSpace(line))
			p.mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *proxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// devtools is a connection to Chromium's DevTools protocol over its
// WebSocket: commands by id, events kept in order.
type devtools struct {
	ws      *websocket.Conn
	mu      sync.Mutex
	nextID  int
	waiting map[int]chan cdpMessage
	events  chan cdpMessage
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func dialDevtools(wsURL string) (*devtools, error) {
	ws, err := websocket.Dial(wsURL, "", "http://127.0.0.1")
	if err != nil {
		return nil, fmt.Errorf("connect to DevTools at %s: %w", wsURL, err)
	}
	ws.MaxPayloadBytes = 64 << 20
	d := &devtools{ws: ws, waiting: map[int]chan cdpMessage{}, events: make(chan cdpMessage, 4096)}
	go d.read()
	return d, nil
}

func (d *devtools) read() {
	for {
		var m cdpMessage
		if err := websocket.JSON.Receive(d.ws, &m); err != nil {
			close(d.events)
			return
		}
		if m.ID == 0 {
			d.events <- m
			continue
		}
		d.mu.Lock()
		ch := d.waiting[m.ID]
		delete(d.waiting, m.ID)
		d.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// call sends a command and waits for its answer, decoding its result into
// out when out is not nil.
func (d *devtools) call(session, method string, params, out any) error {
	d.mu.Lock()
	d.nextID++
	id := d.nextID
	ch := make(chan cdpMessage, 1)
	d.waiting[id] = ch
	d.mu.Unlock()
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if err := websocket.JSON.Send(d.ws, cdpMessage{ID: id, Method: method, Params: p, SessionID: session}); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s: no answer in 60 s", method)
	}
}

// startChromium starts headless Chromium with DevTools on a free port and
// every request sent through the proxy, and connects to it.
func startChromium(t *testing.T, bin string, px *proxy) *devtools {
	t.Helper()
	// The profile's folder is made first so that it is removed last, once
	// Chromium has closed it.
	args := append(append([]string(nil), chromiumFlags...), "--user-data-dir="+t.TempDir(),
		"--remote-debugging-port=0", "--remote-allow-origins=http://127.0.0.1",
		"--proxy-server=http://"+px.ln.Addr().String(), "--proxy-bypass-list=<-loopback>",
		"--window-size=1200,900", "about:blank")
	cmd := exec.Command(bin, args...)
	// Chromium's helper processes stay in its process group, so that the
	// test can end them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, logTo := io.Pipe()
	cmd.Stderr = logTo
	if err := cmd.Start(); err != nil {
		t.Fatalf("Chromium cannot be started: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logTo.Close()
		close(exited)
	}()
	var d *devtools
	t.Cleanup(func() {
		// Closing the browser lets it write its profile out before the
		// folder is removed; its group goes if it does not close in time.
		if d != nil {
			d.call("", "Browser.close", map[string]any{}, nil)
			d.ws.Close()
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	found := make(chan string, 1)
	var log strings.Builder
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case ws := <-found:
		var err error
		if d, err = dialDevtools(ws); err != nil {
			t.Fatal(err)
		}
		return d
	case <-time.After(90 * time.Second):
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("Chromium cannot be started: no DevTools endpoint in 90 s; its log:\n%s", log.String())
	}
	return nil
}

// chartInfo is what the page's script-free check reads of each chart.
type chartInfo struct {
	Chart  string  `json:"chart"`
	Server string  `json:"server"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	Shapes int     `json:"shapes"`
	Label  string  `json:"label"`
}

// pageCheck runs in the loaded page: every chart's rendered size and the
// number of shapes and texts drawn in it, and the page's text.
const pageCheck = `JSON.stringify({
  charts: Array.from(document.querySelectorAll('figure[data-chart]')).map(f => {
    const svg = f.querySelector('svg');
    const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    const server = f.closest('[data-server]');
    return {chart: f.dataset.chart, server: server ? server.dataset.server : '', width: box.width, height: box.height,
      shapes: svg ? svg.querySelectorAll('path, text').length : 0, label: svg ? svg.getAttribute('aria-label') : ''};
  }),
  text: document.body.innerText,
  resources: performance.getEntriesByType('resource').map(e => e.name),
})`

type pageState struct {
	Charts    []chartInfo `json:"charts"`
	Text      string      `json:"text"`
	Resources []string    `json:"resources"`
}

// openInChromium loads a file in headless Chromium and returns what the
// page shows and every URL it requested; with a selector, it also writes
// a PNG of the first element that matches to shot.
func openInChromium(t *testing.T, path string, selector, shot string) (pageState, []string, []string) {
	t.Helper()
	bin := chromium(t)
	px := newProxy(t)
	d := startChromium(t, bin, px)
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := d.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := d.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		t.Fatal(err)
	}
	s := attached.SessionID
	for _, m := range []string{"Network.enable", "Page.enable"} {
		if err := d.call(s, m, map[string]any{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	u := (&url.URL{Scheme: "file", Path: path}).String()
	if err := d.call(s, "Page.navigate", map[string]any{"url": u}, nil); err != nil {
		t.Fatal(err)
	}
	var requested []string
	deadline := time.After(60 * time.Second)
	for loaded := false; !loaded; {
		select {
		case m, ok := <-d.events:
			if !ok {
				t.Fatal("Chromium closed the DevTools connection")
			}
			switch m.Method {
			case "Network.requestWillBeSent":
				var ev struct {
					Request struct {
						URL string `json:"url"`
					} `json:"request"`
				}
				if err := json.Unmarshal(m.Params, &ev); err == nil {
					requested = append(requested, ev.Request.URL)
				}
			case "Page.loadEventFired":
				// The new tab's about:blank may fire its own load event
				// after Page.enable: only the report's counts.
				loaded = pageIs(t, d, s, u)
			}
		case <-deadline:
			t.Fatal("the page did not load in 60 s")
		}
	}
	var res struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := d.call(s, "Runtime.evaluate", map[string]any{"expression": pageCheck, "returnByValue": true}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.ExceptionDetails) > 0 {
		t.Fatalf("the check failed in the page: %s", res.ExceptionDetails)
	}
	var st pageState
	if err := json.Unmarshal([]byte(res.Result.Value), &st); err != nil {
		t.Fatalf("decode the page's state: %v", err)
	}
	if selector != "" {
		screenshot(t, d, s, selector, shot)
	}
	// Give a late request (a font, an image) time to reach the proxy.
	time.Sleep(500 * time.Millisecond)
	return st, requested, px.seen()
}

// screenshot writes a PNG of the page's first element that matches
// selector, however far down the page it is.
func screenshot(t *testing.T, d *devtools, session, selector, path string) {
	t.Helper()
	js, err := json.Marshal(selector)
	if err != nil {
		t.Fatal(err)
	}
	expr := "(() => { const r = document.querySelector(" + string(js) + ").getBoundingClientRect();" +
		" return JSON.stringify({x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height, scale: 1}); })()"
	var box struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	if err := d.call(session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &box); err != nil {
		t.Fatal(err)
	}
	var clip map[string]float64
	if err := json.Unmarshal([]byte(box.Result.Value), &clip); err != nil {
		t.Fatalf("no %s in the page: %v", selector, err)
	}
	var shot struct {
		Data []byte `json:"data"`
	}
	if err := d.call(session, "Page.captureScreenshot", map[string]any{"format": "png", "clip": clip, "captureBeyondViewport": true}, &shot); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, shot.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %s: %s (%.0f×%.0f px)", selector, path, clip["width"], clip["height"])
}

// pageIs says whether the tab has loaded url completely.
func pageIs(t *testing.T, d *devtools, session, url string) bool {
	t.Helper()
	var res struct {
		Result struct {
			Value bool `json:"value"`
		} `json:"result"`
	}
	js, err := json.Marshal(url)
	if err != nil {
		t.Fatal(err)
	}
	expr := "location.href === " + string(js) + " && document.readyState === 'complete'"
	if err := d.call(session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res); err != nil {
		t.Fatal(err)
	}
	return res.Result.Value
}

// TestReportOpensOffline renders the recorded run and opens it in headless
// Chromium, whose every request goes to a proxy in the test: every chart
// must be drawn, every server named, and the page must request nothing
// but itself.
func TestReportOpensOffline(t *testing.T) {
	run := recorded(t)
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "run"), dir)
	if err := report.Render(record.Folder{Dir: dir}, run); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	checkNoResources(t, page)

	start := time.Now()
	st, requested, proxied := openInChromium(t, page, "", "")
	t.Logf("Chromium loaded and checked the page in %s", time.Since(start).Round(time.Millisecond))

	for _, u := range requested {
		if !strings.HasPrefix(u, "file:") {
			t.Errorf("the page requested %s", u)
		}
	}
	// The proxy also sees the browser's own background calls (its clock,
	// its updater), which the page's session does not make: they are
	// only logged, and never leave the machine.
	if len(proxied) > 0 {
		t.Logf("Chromium's own requests, sent to the test's proxy: %q", proxied)
	}
	for _, r := range st.Resources {
		t.Errorf("the page loaded a resource: %s", r)
	}
	want := map[string]int{"rps": 1, "latency": 1, "per-core": 1}
	withStats := map[string]bool{}
	for _, c := range run.Cells {
		for _, s := range c.Servers {
			if _, err := os.Stat(filepath.Join(dir, s.Name, "round-1", "load-server-stats.jsonl")); err == nil {
				withStats[s.Name] = true
			}
		}
	}
	if len(withStats) == 0 {
		t.Fatal("testdata/run has no stats stream: the time charts go untested")
	}
	want["cpu"], want["memory"] = len(withStats), len(withStats)
	got := map[string]int{}
	for _, c := range st.Charts {
		got[c.Chart]++
		if c.Width < 300 || c.Height < 100 || c.Shapes < 10 {
			t.Errorf("chart %q (%s) is drawn %.0f×%.0f px with %d shapes and texts: not rendered", c.Label, c.Chart, c.Width, c.Height, c.Shapes)
		}
		if (c.Chart == "cpu" || c.Chart == "memory") && !withStats[c.Server] {
			t.Errorf("a %s chart for %s, which has no stats stream", c.Chart, c.Server)
		}
	}
	for chart, n := range want {
		if got[chart] != n {
			t.Errorf("%d %s charts rendered, want %d", got[chart], chart, n)
		}
	}
	for _, s := range run.Cells[0].Servers {
		if !strings.Contains(st.Text, s.Name) {
			t.Errorf("the page does not name %s", s.Name)
		}
	}
}

// TestSweepChartsRender renders a run with a rate sweep and a latency
// objective and opens it in headless Chromium: the latency–throughput
// chart, each server's percentile plot and, for the servers whose rounds
// keep a series, its latency over time are drawn, the objective's
// ranking is on the page, and a screenshot of the sweep's section is
// written (to GRPCBENCH_SCREENSHOT when set) for a person to look at.
func TestSweepChartsRender(t *testing.T) {
	run := fixture(t, "sweep")
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "run"), dir)
	if err := report.Render(record.Folder{Dir: dir}, run); err != nil {
		t.Fatal(err)
	}
	shot := os.Getenv("GRPCBENCH_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "sweep.png")
	}
	st, _, _ := openInChromium(t, filepath.Join(dir, "report.html"), "section.sweep", shot)
	got := map[string]int{}
	for _, c := range st.Charts {
		got[c.Chart]++
		if (c.Chart == "curve" || c.Chart == "hdr" || c.Chart == "latency-time") && (c.Width < 300 || c.Height < 150 || c.Shapes < 30) {
			t.Errorf("chart %q (%s) is drawn %.0f×%.0f px with %d shapes and texts: not rendered", c.Label, c.Chart, c.Width, c.Height, c.Shapes)
		}
		if c.Chart == "latency-time" && c.Server == "python_grpc" {
			t.Error("a latency-over-time chart for python_grpc, whose rounds keep no series")
		}
	}
	// go_grpc and node_grpcjs_st keep series, python_grpc does not.
	if got["curve"] != 1 || got["hdr"] != 3 || got["latency-time"] != 2 {
		t.Errorf("%d latency–throughput charts, %d percentile plots and %d latency-over-time charts, want 1, 3 and 2", got["curve"], got["hdr"], got["latency-time"])
	}
	for _, text := range []string{"Latency under load", "Sustainable throughput within p99<10ms", "unsustained", "Latency over time per server", "met–failed"} {
		if !strings.Contains(st.Text, text) {
			t.Errorf("the page does not say %q", text)
		}
	}
	if info, err := os.Stat(shot); err != nil || info.Size() < 10_000 {
		t.Errorf("screenshot %s: %v, %d bytes", shot, err, info.Size())
	}
}
