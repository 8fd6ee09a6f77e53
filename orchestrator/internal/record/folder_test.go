package record_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

func TestNewFolderNeverShares(t *testing.T) {
	parent := t.TempDir()
	seen := map[string]bool{}
	for range 3 {
		f, err := record.NewFolder(parent, "2026-11-30_07-32-20")
		if err != nil {
			t.Fatal(err)
		}
		if seen[f.Dir] {
			t.Fatalf("%s handed out twice", f.Dir)
		}
		seen[f.Dir] = true
	}
	for _, name := range []string{"2026-11-30_07-32-20", "2026-11-30_07-32-20-2", "2026-11-30_07-32-20-3"} {
		if !seen[filepath.Join(parent, name)] {
			t.Errorf("no folder %s among %v", name, seen)
		}
	}
}

func TestWriteLeavesNoTemporary(t *testing.T) {
	f := record.Folder{Dir: t.TempDir()}
	if err := f.Write("bench.txt", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := f.Write("bench.txt", []byte("two")); err != nil {
		t.Fatal(err)
	}
	// A write that cannot succeed: the target is a folder.
	if err := os.Mkdir(f.Path("results.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Write("results.json", []byte("{}")); err == nil {
		t.Error("a write over a folder succeeded")
	}
	entries, err := os.ReadDir(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"bench.txt", "results.json"}) {
		t.Errorf("folder holds %v, want bench.txt and the results.json folder only", names)
	}
	if b, _ := os.ReadFile(f.Path("bench.txt")); string(b) != "two" {
		t.Errorf("bench.txt = %q", b)
	}
}

func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "results.json"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct{ name, dir string }{
		{"missing folder", filepath.Join(dir, "nope")},
		{"not JSON", write("garbled", "{\"id\": \"x\", \"cells\": [")},
		{"no run", write("empty", "{}")},
		{"old layout, wrong types", write("legacy", `{"id": "x", "servers": [{"name": 3}]}`)},
		{"a layout of a later version", write("later", `{"version": 4, "id": "x", "cells": []}`)},
	} {
		if _, err := record.Load(tc.dir); err == nil {
			t.Errorf("%s: Load returned no error", tc.name)
		}
	}
}

// TestSaveThenLoadIsTheSameRun saves the recorded run of report's test data
// (layout 2), reads it back (layout 3) and saves it again: the same run,
// the same bytes, every field of the record through results.json and back.
func TestSaveThenLoadIsTheSameRun(t *testing.T) {
	run, err := record.Load(filepath.Join("..", "report", "testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	first, second := record.Folder{Dir: t.TempDir()}, record.Folder{Dir: t.TempDir()}
	if err := record.Save(first, run); err != nil {
		t.Fatal(err)
	}
	back, err := record.Load(first.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Version != record.Version || back.Dir != first.Dir {
		t.Errorf("read back as version %d from %q, want %d from %q", back.Version, back.Dir, record.Version, first.Dir)
	}
	run.Version, run.Dir = back.Version, back.Dir
	if !reflect.DeepEqual(back, run) {
		t.Errorf("the run read back differs from the saved one:\n got %+v\nwant %+v", back, run)
	}
	if err := record.Save(second, back); err != nil {
		t.Fatal(err)
	}
	a, errA := os.ReadFile(first.Path("results.json"))
	b, errB := os.ReadFile(second.Path("results.json"))
	if errA != nil || errB != nil || !bytes.Equal(a, b) || len(a) == 0 {
		t.Errorf("results.json saved twice differs (%v, %v): %d and %d bytes", errA, errB, len(a), len(b))
	}
}

// TestCellDirNamesTheRate: every cell of a run has a folder of its own,
// a rate cell's and a probe's beside their saturation cell's.
func TestCellDirNamesTheRate(t *testing.T) {
	sat := record.Cell{Scenario: "complex_proto", ServerCPUs: 1}
	share, rate, probe := sat, sat, sat
	share.Rate, rate.Rate, probe.Probe = record.Rate{Share: 0.25}, record.Rate{PerSecond: 5000}, 2
	run := record.Run{Cells: []record.Cell{sat, share, rate, probe}}
	var got []string
	for _, c := range run.Cells {
		got = append(got, record.CellDir(run, c))
	}
	if want := "complex_proto_cpu1 complex_proto_cpu1_rate25pct complex_proto_cpu1_rate5000 complex_proto_cpu1_probe2"; strings.Join(got, " ") != want {
		t.Errorf("cell folders %q, want %q", strings.Join(got, " "), want)
	}
}
