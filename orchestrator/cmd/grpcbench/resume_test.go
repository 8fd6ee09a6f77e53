package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// TestResumeOfAFinishedRunDoesNothing: it says so and exits 0, before any
// engine is reached (DOCKER_HOST points nowhere) or anything is built.
func TestResumeOfAFinishedRunDoesNothing(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	dir := saveRun(t, record.Run{ID: "2026-01-02_03-04-05", State: record.Finished, Ended: time.Date(2026, 1, 2, 3, 9, 0, 0, time.UTC)})
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--resume", dir}, &stdout, &stderr)
	if want := "run 2026-01-02_03-04-05 finished at 2026-01-02T03:09:00Z: nothing to resume"; code != exitOK || !strings.Contains(stdout.String(), want) {
		t.Errorf("exit %d, want 0 and %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout.String(), stderr.String())
	}
}

// TestResumeWithOtherCodeIsRefused: a server's folder changed since the
// run started: exit 2 naming it, before any engine is reached; with
// --resume-anyway the resume goes on (here to the engine, which is not
// there). A run killed outright, even during a resume, is still running
// by its record: it resumes as an interrupted one does.
func TestResumeWithOtherCodeIsRefused(t *testing.T) {
	for _, state := range []record.State{record.Interrupted, record.Running} {
		t.Run(string(state), func(t *testing.T) { resumeWithOtherCode(t, state) })
	}
}

func resumeWithOtherCode(t *testing.T, state record.State) {
	root := t.TempDir()
	// A resume takes the recorded settings, so the default results folder,
	// relative to the working directory: not this package's folder, which
	// the user running the tests may not be able to write to.
	t.Chdir(t.TempDir())
	for name, content := range map[string]string{"servers/a/Dockerfile": "FROM scratch\n", "servers/a/server.json": testfiles.Manifest, "scenarios/complex_proto/helloworld.proto": "syntax = \"proto3\";\n"} {
		testfiles.Write(t, filepath.Join(root, name), content)
	}
	dir := saveRun(t, record.Run{ID: "r", Commit: "unknown commit (no git history here)", State: state,
		Hosts:    &record.HostAddresses{Servers: "unix:///nonexistent/docker.sock", Clients: "unix:///nonexistent/docker.sock"},
		Contexts: map[string]string{"a": "the hash of another servers/a"},
		Cells:    []record.Cell{{Servers: []record.Server{{Name: "a"}}}}})
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--root", root, "--resume", dir}, &stdout, &stderr)
	if want := "build context changed (servers/<name>/, the scenarios or tools/): a"; code != exitBadInput || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, want 2 and %q\nstderr:\n%s", code, want, stderr.String())
	}
	stderr.Reset()
	code = run(context.Background(), []string{"bench", "--root", root, "--resume", dir, "--resume-anyway"}, &stdout, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "/nonexistent/docker.sock") {
		t.Errorf("with --resume-anyway: exit %d, want 1 from the recorded engine, which is not there\nstderr:\n%s", code, stderr.String())
	}
}

func saveRun(t *testing.T, r record.Run) string {
	t.Helper()
	dir := t.TempDir()
	if err := record.Save(record.Folder{Dir: dir}, r); err != nil {
		t.Fatal(err)
	}
	return dir
}
