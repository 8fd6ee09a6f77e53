package probe

import (
	"strings"
	"testing"
)

// TestWorkers: GRPC_SERVER_CPUS rounded up, capped at the CPUs the process
// sees, at least 1.
func TestWorkers(t *testing.T) {
	for _, tc := range []struct {
		cpus    float64
		visible int
		want    int
	}{
		{1, 2, 1},
		{2, 2, 2},
		{0.5, 2, 1},
		{1.5, 4, 2},
		{2.01, 4, 3},
		{3, 2, 2},
		{1e300, 8, 8},
		{0.01, 0, 1},
	} {
		if got := Workers(tc.cpus, tc.visible); got != tc.want {
			t.Errorf("Workers(%g, %d) = %d, want %d", tc.cpus, tc.visible, got, tc.want)
		}
	}
}

// TestWorkersCheck: the start-up line is found after a logger's prefix and
// among other lines; a count other than the rule's, a single-threaded
// server saying other than 1, or no line fails, saying why; a server whose
// library sizes its threads passes with a warning.
func TestWorkersCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		log     string
		cpus    float64
		visible int
		passed  bool
		detail  string
	}{
		{"the rule's count", "2026/12/01 13:00:00 grpcbench-server: workers=2\nserver listening at [::]:50051\n", 1.5, 2, true, ""},
		{"capped", "grpcbench-server: workers=2\n", 4, 2, true, ""},
		{"a logger's two lines", "Dec 01, 2026 io.grpcbench.HelloWorldServer main\nINFO: grpcbench-server: workers=1\r\n", 1, 2, true, ""},
		{"single-threaded at any count", "grpcbench-server: workers=1 (single-threaded)\n", 2, 2, true, ""},
		{"too many", "grpcbench-server: workers=2\n", 1, 2, false, "workers=2, where GRPC_SERVER_CPUS=1 on 2 CPUs asks for 1"},
		{"not capped", "grpcbench-server: workers=4\n", 4, 2, false, "asks for 2"},
		{"single-threaded with two", "grpcbench-server: workers=2 (single-threaded)\n", 2, 2, false, "single-threaded by design must say workers=1"},
		{"no line", "GOMAXPROCS=2\nserver listening\n", 2, 2, false, "no start-up line"},
		{"library-sized: a warning", "grpcbench-server: workers=library\n", 1, 2, true, "sized by its library"},
		{"library-sized and single-threaded", "grpcbench-server: workers=library (single-threaded)\n", 1, 2, false, "single-threaded by design must say workers=1"},
		{"not a count", "grpcbench-server: workers=default\n", 2, 2, false, "no start-up line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := WorkersCheck([]byte(tc.log), tc.cpus, tc.visible)
			if c.Name != WorkersCheckName || c.Passed != tc.passed || !strings.Contains(c.Detail, tc.detail) || (tc.detail == "" && c.Detail != "") {
				t.Errorf("WorkersCheck = %+v, want passed %t with a detail containing %q", c, tc.passed, tc.detail)
			}
		})
	}
}

// TestVerdictAdd: a failed check fails the verdict, a passed one with a
// detail is a warning.
func TestVerdictAdd(t *testing.T) {
	v := Verdict{Passed: true}
	v.Add(Check{Name: "echo", Passed: true})
	v.Add(Check{Name: "unknown method refused", Passed: true, Detail: "NotFound"})
	if !v.Passed || len(v.Warnings) != 1 {
		t.Fatalf("after two passed checks: %+v", v)
	}
	v.Add(Check{Name: WorkersCheckName, Detail: "no line"})
	if v.Passed || len(v.Checks) != 3 || v.Failures() != "workers: no line" {
		t.Errorf("after a failed check: %+v, failures %q", v, v.Failures())
	}
}
