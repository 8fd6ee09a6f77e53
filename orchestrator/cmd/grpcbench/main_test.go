package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// exitCase is a command line, the status it must exit with, and text its
// stdout and stderr must hold.
type exitCase struct {
	name   string
	args   []string
	code   int
	stdout string
	stderr string
}

func checkExits(t *testing.T, cases []exitCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout.String(), stderr.String())
			}
		})
	}
}

// TestExitStatuses runs the command line without an engine: what each kind
// of outcome exits with.
func TestExitStatuses(t *testing.T) {
	notARepo := t.TempDir() // a folder without servers/
	// servers/ without a server, beside a real scenario: a fault would
	// get as far as the engine, which is not there.
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv("GRPC_RESULTS_DIR", t.TempDir())
	empty := t.TempDir()
	if err := os.MkdirAll(filepath.Join(empty, "servers", "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"helloworld.proto", "payload.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "scenarios", "complex_proto", f))
		if err != nil {
			t.Fatal(err)
		}
		testfiles.Write(t, filepath.Join(empty, "scenarios", "complex_proto", f), string(b))
	}
	checkExits(t, []exitCase{
		{"help", []string{"--help"}, exitOK, "Usage: grpcbench", ""},
		{"settings", []string{"env"}, exitOK, "#GRPC_BENCHMARK_ROUNDS=4", ""},
		{"unknown flag", []string{"--bogus"}, exitBadInput, "", "unknown flag --bogus"},
		{"unknown command", []string{"benchmark"}, exitBadInput, "", "unexpected argument benchmark"},
		{"the old name of tools", []string{"engines", "--server", "go_grpc"}, exitBadInput, "", "renamed to tools"},
		{"a tool not registered", []string{"tools", "--tool", "wrk"}, exitBadInput, "", "--tool"},
		{"compare without a run", []string{"compare", "/nonexistent/a", "/nonexistent/b"}, exitBadInput, "", `run-a="/nonexistent/a"`},
		{"bench at a folder without servers/", []string{"bench", "--root", notARepo}, exitBadInput, "", `--root="` + notARepo + `"`},
		{"images at a folder without servers/", []string{"images", "--root", notARepo}, exitBadInput, "", "servers"},
		{"check at a folder without servers/", []string{"check", "--root", notARepo}, exitBadInput, "", "servers"},
		{"bench at an empty servers/", []string{"bench", "--root", empty}, exitBadInput, "", `--root="` + empty + `": servers/ holds no server`},
		{"check at an empty servers/", []string{"check", "--root", empty}, exitBadInput, "", "servers/ holds no server"},
		{"load spec missing", []string{"loadgen", "--spec", "/nonexistent/spec.json"}, exitBadInput, "", "--spec"},
	})
}

// TestSourceURLThatIsAnOptionIsRefused: a server folder whose sources.json
// URL git would take for an option (--upload-pack runs a command on this
// machine) is bad input, refused naming the file and the entry before an
// engine is even asked for, and the command never runs.
func TestSourceURLThatIsAnOptionIsRefused(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock") // a fault would get as far as this
	root := t.TempDir()
	pwned := filepath.Join(root, "pwned")
	testfiles.Write(t, filepath.Join(root, "servers", "evil", "Dockerfile"), "FROM scratch\n")
	testfiles.Write(t, filepath.Join(root, "servers", "evil", "server.json"), testfiles.Manifest)
	testfiles.Write(t, filepath.Join(root, "servers", "evil", "sources.json"),
		`[{"url": "--upload-pack=touch `+pwned+`;:", "commit": "`+strings.Repeat("ab", 20)+`", "dir": "x"}]`)
	testfiles.Write(t, filepath.Join(root, "scenarios", "complex_proto", "helloworld.proto"), "")
	checkExits(t, []exitCase{
		{"bench", []string{"bench", "--root", root}, exitBadInput, "", filepath.Join(root, "servers", "evil", "sources.json") + `: entry 1: url="--upload-pack`},
		{"images", []string{"images", "--root", root}, exitBadInput, "", "entry 1: url"},
	})
	if _, err := os.Stat(pwned); err == nil {
		t.Error("the URL's command ran")
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

// TestCompareExitStatuses: compare exits 0 whatever it finds unless told
// to fail on a regression, then 4; a bad threshold is bad input.
func TestCompareExitStatuses(t *testing.T) {
	folder := func(state string, rps ...float64) string {
		s := record.Server{Name: "go_grpc"}
		for i, v := range rps {
			s.Rounds = append(s.Rounds, record.Round{Round: i + 1, Measurement: record.Measurement{
				Load: &record.Result{Tool: "h2", RPS: v, Requests: 10, OK: 10}}})
		}
		f := record.Folder{Dir: t.TempDir()}
		run := record.Run{ID: filepath.Base(f.Dir), Cells: []record.Cell{{Scenario: "complex_proto", ServerCPUs: 1, ClientCPUs: 1, Servers: []record.Server{s}}}}
		switch state {
		case "finished":
			run.State, run.Ended = record.Finished, time.Now()
		case "interrupted":
			run.State, run.Ended = record.Interrupted, time.Now()
		default:
			run.State = record.Running
		}
		if err := record.Save(f, run); err != nil {
			t.Fatal(err)
		}
		return f.Dir
	}
	before, same, slower := folder("finished", 1000, 1010, 990), folder("finished", 1005, 995, 1000), folder("finished", 800, 810, 790)
	interrupted, running := folder("interrupted", 1005, 995, 1000), folder("running", 1005, 995)
	checkExits(t, []exitCase{
		{"no gate", []string{"compare", before, slower}, exitOK, "regressions: 1", ""},
		{"gate, no regression", []string{"compare", "--fail-on", "regression", before, same}, exitOK, "regressions: none", ""},
		{"gate, regression", []string{"compare", "--fail-on", "regression", before, slower}, exitRegression, "- go_grpc: slower by more than 10%", "regression: 1 found (a server slower beyond 10%, or failing now)"},
		{"gate, above the threshold", []string{"compare", "--fail-on", "regression", "--threshold", "25%", before, slower}, exitOK, "regressions: none", ""},
		{"json", []string{"compare", "--format", "json", before, slower}, exitOK, `"regressions": 1`, ""},
		{"bad threshold", []string{"compare", "--threshold", "0%", before, slower}, exitBadInput, "", `--threshold="0%"`},
		{"bad gate", []string{"compare", "--fail-on", "slowdown", before, slower}, exitBadInput, "", "--fail-on"},
		// A run cut short is flagged, and fails the gate as its own status.
		{"an interrupted run", []string{"compare", before, interrupted}, exitOK, "! " + filepath.Base(interrupted) + " was interrupted (grpcbench bench --resume finishes it): rounds are missing", ""},
		{"gate, an interrupted run", []string{"compare", "--fail-on", "regression", before, interrupted}, exitUnfinished, "regressions: none", "cannot judge: run-b interrupted; the gate judges finished runs only"},
		{"gate, a run not finished", []string{"compare", "--fail-on", "regression", running, before}, exitUnfinished, "! " + filepath.Base(running) + " did not finish", "cannot judge: run-a not finished"},
		{"gate, regression and an interrupted run", []string{"compare", "--fail-on", "regression", interrupted, slower}, exitUnfinished, "regressions: 1", "cannot judge: run-a interrupted"},
		{"json", []string{"compare", "--format", "json", before, interrupted}, exitOK, `"unfinished": [`, ""},
	})
}
