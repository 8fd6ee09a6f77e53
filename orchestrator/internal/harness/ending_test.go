package harness

import "testing"

// TestEndingSaysWhatHappened: how a container ended is said in words, a
// signal as a signal, never as the last line the process printed.
func TestEndingSaysWhatHappened(t *testing.T) {
	for _, tc := range []struct {
		name   string
		who    string
		code   int
		oom    bool
		memory int64
		want   string
	}{
		{"killed load client", "the load client", 137, false, 1 << 30, "the load client was killed (signal 9)"},
		{"terminated probe", "the readiness probe", 143, false, 256 << 20, "the readiness probe was killed (signal 15)"},
		{"out of memory", "the load client", 137, true, 1 << 30, "the load client was killed for going over its memory limit of 1GiB"},
		{"an error of its own", "the conformance gate", 1, false, 0, "the conformance gate exited with code 1"},
		{"a server's exit status", "server", 3, false, 0, "server exited with code 3"},
		{"a status above the signals", "server", 255, false, 0, "server exited with code 255"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ending(tc.who, tc.code, tc.oom, tc.memory); got != tc.want {
				t.Errorf("ending(%q, %d, %v) = %q, want %q", tc.who, tc.code, tc.oom, got, tc.want)
			}
		})
	}
}
