// Package h2load is nghttp2's h2load as a load tool, in a container of its
// own (tools/h2load): the reference for the cost per call. It counts HTTP
// 2xx answers as successes and does not read grpc-status.
package h2load

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// name is the tool's name in the settings and the records; it is also the
// folder of tools/ its image is built from.
const name = "h2load"

func init() { load.Register(tool{}) }

type tool struct{}

// body is where the request, framed, goes in the h2load container.
const body = load.InputDir + "/request.grpc"

func (tool) Name() string { return name }
func (tool) Help() string {
	return "nghttp2's h2load, the reference for the cost per call (counts HTTP 2xx, not grpc-status)"
}
func (tool) Image() string          { return name }
func (tool) Kinds() []scenario.Kind { return []scenario.Kind{scenario.Unary} }

// TLS is false: h2load offers ALPN h2 but takes no CA certificate and
// checks no chain, so a server with any certificate, or none valid, would
// be measured.
func (tool) TLS() bool { return false }

// OpenLoop: h2load paces by connection, not on a schedule of intended
// starts.
func (tool) OpenLoop() bool { return false }

// SteadyWarmup: h2load's --warm-up-time is a number of seconds, and it
// reports no series to watch.
func (tool) SteadyWarmup() bool { return false }
func (tool) Client(spec load.Spec, sc *scenario.Scenario) (load.Client, error) {
	if spec.CAFile != "" {
		return load.Client{}, errNoVerify
	}
	req, err := sc.RequestBytes()
	if err != nil {
		return load.Client{}, err
	}
	return load.Client{Cmd: Args(spec, body, scenario.FullMethod), Files: map[string][]byte{body: load.GRPCFrame(req)}}, nil
}

// errNoVerify refuses TLS (see TLS).
var errNoVerify = errors.New("h2load cannot verify the server's certificate chain (it takes no CA certificate), so it loads plaintext cells only (GRPC_TLS=off); h2 and ghz verify it")

// Parse reads h2load's report; its window is its run less the warm-up.
func (tool) Parse(stdout []byte, spec load.Spec, started, ended time.Time) (load.Result, error) {
	res, err := Parse(string(stdout))
	res.Start, res.End = started.Add(spec.Warmup), ended
	if spec.QPS > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("h2load ignores the rate of %d req/s: it loads closed-loop, each connection's streams as fast as answers come", spec.QPS))
	}
	return res, err
}

// Args is the h2load command line for a spec, with the request body
// (a gRPC frame) in bodyFile. h2load counts HTTP 2xx answers as successes;
// it does not read grpc-status.
func Args(spec load.Spec, bodyFile, path string) []string {
	return []string{
		"--clients", strconv.Itoa(spec.Connections),
		"--max-concurrent-streams", strconv.Itoa(max(1, spec.Concurrency/spec.Connections)),
		"--threads", "1",
		"--duration", strconv.Itoa(int(spec.Duration.Seconds())),
		"--warm-up-time", strconv.Itoa(int(spec.Warmup.Seconds())),
		"--header", "content-type: application/grpc",
		"--header", "te: trailers",
		"--data", bodyFile,
		"http://" + spec.Target + path,
	}
}

var (
	h2loadFinished = regexp.MustCompile(`finished in [\d.]+(?:ms|s), ([\d.]+) req/s`)
	h2loadRequests = regexp.MustCompile(`requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded`)
	h2loadLatency  = regexp.MustCompile(`time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)`)
)

// Parse reads h2load's report into a Result: req/s of succeeded
// requests over the main duration (h2load's own figure, less failures), and
// the mean and max latency it prints.
func Parse(out string) (load.Result, error) {
	fin := h2loadFinished.FindStringSubmatch(out)
	req := h2loadRequests.FindStringSubmatch(out)
	lat := h2loadLatency.FindStringSubmatch(out)
	if fin == nil || req == nil || lat == nil {
		return load.Result{}, fmt.Errorf("h2load printed no report: %q", lastLines(out, 5))
	}
	rps, _ := strconv.ParseFloat(fin[1], 64)
	done, _ := strconv.ParseUint(req[2], 10, 64)
	ok, _ := strconv.ParseUint(req[3], 10, 64)
	res := load.Result{
		Tool:     name,
		Requests: done,
		OK:       ok,
		Statuses: map[string]uint64{codes.OK.String(): ok},
		Latency:  load.Latency{Count: ok, Mean: duration(lat[5], lat[6]), Max: duration(lat[3], lat[4])},
		Notes:    []string{"h2load counts HTTP 2xx answers as successes; it does not read grpc-status"},
	}
	if done > ok {
		res.Statuses["Failed"] = done - ok
	}
	if done > 0 {
		res.RPS = rps * float64(ok) / float64(done)
	}
	return res, nil
}

func duration(v, unit string) time.Duration {
	f, _ := strconv.ParseFloat(v, 64)
	switch unit {
	case "us":
		return time.Duration(f * float64(time.Microsecond))
	case "ms":
		return time.Duration(f * float64(time.Millisecond))
	default:
		return time.Duration(f * float64(time.Second))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
