package load

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
)

// H2LoadArgs is the h2load command line for a spec, with the request body
// (a gRPC frame) in bodyFile. h2load counts HTTP 2xx answers as successes;
// it does not read grpc-status.
func H2LoadArgs(spec Spec, bodyFile, path string) []string {
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

// ParseH2Load reads h2load's report into a Result: req/s of succeeded
// requests over the main duration (h2load's own figure, less failures), and
// the mean and max latency it prints.
func ParseH2Load(out string) (Result, error) {
	fin := h2loadFinished.FindStringSubmatch(out)
	req := h2loadRequests.FindStringSubmatch(out)
	lat := h2loadLatency.FindStringSubmatch(out)
	if fin == nil || req == nil || lat == nil {
		return Result{}, fmt.Errorf("h2load printed no report: %q", lastLines(out, 5))
	}
	rps, _ := strconv.ParseFloat(fin[1], 64)
	done, _ := strconv.ParseUint(req[2], 10, 64)
	ok, _ := strconv.ParseUint(req[3], 10, 64)
	res := Result{
		Engine:   "h2load",
		Requests: done,
		OK:       ok,
		Statuses: map[string]uint64{codeName(codes.OK): ok},
		Latency:  Latency{Count: ok, Mean: duration(lat[5], lat[6]), Max: duration(lat[3], lat[4])},
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
