package probe

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// WorkersCheckName names the gate's check of a server's start-up line.
const WorkersCheckName = "workers"

// startLine is the line every server prints once it has sized its workers
// (docs/adding-a-server.md#workers), after whatever its logger puts first:
// "grpcbench-server: workers=2"; "grpcbench-server: workers=1
// (single-threaded)" from a server that is single-threaded by design;
// "grpcbench-server: workers=library" from one whose library sizes its
// threads itself, with no setting for it.
var startLine = regexp.MustCompile(`(?m)grpcbench-server: workers=(\d+|library)( \(single-threaded\))?\s*$`)

// Workers is the rule of GRPC_SERVER_CPUS for a multi-threaded server:
// cpus rounded up, at most the CPUs the process sees, at least 1.
func Workers(cpus float64, visible int) int {
	return int(max(1, min(math.Ceil(cpus), float64(visible))))
}

// StartLine is what a server's start-up line says: its worker count, or
// that its library sizes them, and whether it declares itself
// single-threaded by design.
type StartLine struct {
	Workers        int
	Library        bool
	SingleThreaded bool
}

// ReadStartLine finds the start-up line in a server's log; the last one
// counts, as a restarted server's would.
func ReadStartLine(log []byte) (StartLine, bool) {
	m := startLine.FindAllSubmatch(log, -1)
	if len(m) == 0 {
		return StartLine{}, false
	}
	last := m[len(m)-1]
	line := StartLine{Library: string(last[1]) == "library", SingleThreaded: len(last[2]) > 0}
	if line.Library {
		return line, true
	}
	var err error
	line.Workers, err = strconv.Atoi(string(last[1]))
	return line, err == nil
}

// WorkersCheck compares the start-up line of a server's log with the rule
// for its GRPC_SERVER_CPUS and the CPUs it sees; a single-threaded server
// must say 1; one whose library sizes its threads passes with a warning.
func WorkersCheck(log []byte, cpus float64, visible int) Check {
	c := Check{Name: WorkersCheckName}
	line, ok := ReadStartLine(log)
	want := Workers(cpus, visible)
	switch {
	case !ok:
		c.Detail = `the server printed no start-up line "grpcbench-server: workers=N"`
	case line.Library && !line.SingleThreaded:
		c.Passed = true
		c.Detail = "the server's threads are sized by its library, not by GRPC_SERVER_CPUS"
	case line.SingleThreaded:
		c.Passed = line.Workers == 1
		if !c.Passed {
			c.Detail = "a server single-threaded by design must say workers=1"
		}
	default:
		c.Passed = line.Workers == want
		if !c.Passed {
			c.Detail = fmt.Sprintf("the server started workers=%d, where GRPC_SERVER_CPUS=%g on %d CPUs asks for %d", line.Workers, cpus, visible, want)
		}
	}
	return c
}
