package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportRefusesABadFolder(t *testing.T) {
	dir := t.TempDir()
	garbled := filepath.Join(dir, "garbled")
	if err := os.Mkdir(garbled, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(garbled, "results.json"), []byte(`{"id": "x", "cells": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir, says string }{
		{"missing", filepath.Join(dir, "no-such-run"), "no such file or directory"},
		{"malformed", garbled, "results.json: unexpected end of JSON input"},
		{"empty", dir, "no such file or directory"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"report", tc.dir}, &stdout, &stderr)
		if code != exitBadInput {
			t.Errorf("%s folder: exit %d, want %d; stderr: %s", tc.name, code, exitBadInput, stderr.String())
		}
		for _, s := range []string{"run-folder=", tc.dir, tc.says, "a run folder that holds a results.json"} {
			if !strings.Contains(stderr.String(), s) {
				t.Errorf("%s folder: stderr %q does not say %q", tc.name, stderr.String(), s)
			}
		}
		if entries, _ := os.ReadDir(tc.dir); tc.name == "malformed" && len(entries) != 1 {
			t.Errorf("%s folder: report wrote files beside a record it could not read", tc.name)
		}
	}
}

func TestReportRewritesTheFiles(t *testing.T) {
	dir := t.TempDir()
	js, err := os.ReadFile(filepath.Join("..", "..", "internal", "record", "testdata", "legacy", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"report", dir}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	for _, name := range []string{"bench.txt", "summary.txt", "results.csv", "results.md", "report.html"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Contains(b, []byte("python_grpc")) {
			t.Errorf("%s: %v, or it does not name python_grpc", name, err)
		}
		if !strings.Contains(stdout.String(), filepath.Join(dir, name)) {
			t.Errorf("stdout %q does not name %s", stdout.String(), name)
		}
	}
}
