package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestExitStatuses runs the command line without an engine: what each kind
// of outcome exits with.
func TestExitStatuses(t *testing.T) {
	notARepo := t.TempDir() // a folder without servers/
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"help", []string{"--help"}, exitOK, "Usage: grpcbench", ""},
		{"settings", []string{"env"}, exitOK, "#GRPC_BENCHMARK_ROUNDS=3", ""},
		{"unknown flag", []string{"--bogus"}, exitBadInput, "", "unknown flag --bogus"},
		{"unknown command", []string{"benchmark"}, exitBadInput, "", "unexpected argument benchmark"},
		{"compare without a run", []string{"compare", "/nonexistent/a", "/nonexistent/b"}, exitBadInput, "", `run-a="/nonexistent/a"`},
		{"bench at a folder without servers/", []string{"bench", "--root", notARepo}, exitBadInput, "", `--root="` + notARepo + `"`},
		{"images at a folder without servers/", []string{"images", "--root", notARepo}, exitBadInput, "", "servers"},
		{"check at a folder without servers/", []string{"check", "--root", notARepo}, exitBadInput, "", "servers"},
		{"load spec missing", []string{"loadgen", "--spec", "/nonexistent/spec.json"}, exitBadInput, "", "--spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout.String(), stderr.String())
			}
		})
	}
}

type panicking struct{}

func (panicking) Run() error { panic("index out of range [3] with length 3") }

// TestPanicBecomesAReason turns a command's panic into an error that names
// the command and what went wrong: inside a client container, the run
// reports that line as the reason.
func TestPanicBecomesAReason(t *testing.T) {
	var c struct {
		Loadgen panicking `cmd:""`
	}
	parser, err := kong.New(&c)
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := parser.Parse([]string{"loadgen"})
	if err != nil {
		t.Fatal(err)
	}
	err = runCommand(kctx)
	if err == nil || err.Error() != "loadgen failed inside: index out of range [3] with length 3" {
		t.Errorf("runCommand of a panicking command = %v", err)
	}
}
