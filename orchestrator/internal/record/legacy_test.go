package record_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// TestLoadLegacyLayout reads a results.json of the older layout as one
// cell with one round per measured server.
func TestLoadLegacyLayout(t *testing.T) {
	run, err := record.Load(filepath.Join("testdata", "legacy"))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) != 1 {
		t.Fatalf("%d cells, want 1", len(run.Cells))
	}
	c := run.Cells[0]
	if c.Scenario != "complex_proto" || c.ServerCPUs != 1 || c.ClientCPUs != 1 || c.Connections != 50 || c.Concurrency != 1000 || c.Profile != "" {
		t.Errorf("cell = %+v, want complex_proto, 1 and 1 CPU, 50×1000", c)
	}
	if len(c.Settings) != 9 || c.Placement.Shared != true {
		t.Errorf("settings %v, placement %+v: want the run's", c.Settings, c.Placement)
	}
	var ranked []string
	for _, s := range c.Servers {
		if s.Ranked() {
			ranked = append(ranked, s.Name)
		}
	}
	if !slices.Equal(ranked, []string{"go_grpc", "python_grpc"}) {
		t.Errorf("ranked servers = %v, want go_grpc and python_grpc", ranked)
	}
	g := c.Servers[0]
	if len(g.Rounds) != 1 || g.Rounds[0].Round != 1 || !g.Rounds[0].ClientBound || len(g.Rounds[0].Phases) != 3 ||
		g.Rounds[0].Load.RPS != 21560.1 || g.Rounds[0].Server.CPUAvgPercent != 61.2 || g.Rounds[0].Load.Tool != "ghz" {
		t.Errorf("go_grpc = %+v, want one round with the old measurement", g)
	}
	if !g.Rounds[0].Start.Equal(time.Date(2026, 11, 28, 9, 14, 30, 0, time.UTC)) {
		t.Errorf("round start = %v, want the first phase's", g.Rounds[0].Start)
	}
	if j := c.Servers[2]; j.Failure == nil || j.Failure.Phase != "build" || len(j.Rounds) != 0 {
		t.Errorf("java_grpc = %+v, want its build failure and no round", j)
	}
}

// TestLoadLayout2 reads a results.json of layout 2 (cells, no version
// key): the hosts from its "engines", each load's tool from its "engine",
// the CPU counts from strings.
func TestLoadLayout2(t *testing.T) {
	dir := t.TempDir()
	js := `{"id": "r", "engines": {"servers": "unix:///a.sock", "clients": "unix:///b.sock"},
		"cells": [{"scenario": "complex_proto", "server_cpus": "1.5", "client_cpus": "2", "connections": 1, "concurrency": 1,
			"servers": [{"name": "s", "rounds": [{"round": 1, "load": {"engine": "ghz", "rps": 10},
				"capacity": {"load": {"engine": "h2", "rps": 20}}}]}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := record.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := run.Cells[0]
	r := c.Servers[0].Rounds[0]
	if run.Hosts == nil || run.Hosts.Servers != "unix:///a.sock" || run.Hosts.Clients != "unix:///b.sock" ||
		c.ServerCPUs != 1.5 || c.ClientCPUs != 2 || r.Load.Tool != "ghz" || r.Capacity.Load.Tool != "h2" || r.Capacity.Load.RPS != 20 {
		t.Errorf("layout 2 read as hosts %+v, cell %+v, round %+v", run.Hosts, c, r)
	}
}

// TestLayout2States: how a run of layout 2 ended, from its "finished" time
// and its "interrupted" flag: finished, interrupted, or, with neither (a
// run killed outright), still running.
func TestLayout2States(t *testing.T) {
	for js, want := range map[string]record.State{
		`{"id": "r", "cells": [], "finished": "2026-11-30T10:00:00Z"}`:                      record.Finished,
		`{"id": "r", "cells": [], "finished": "2026-11-30T10:00:00Z", "interrupted": true}`: record.Interrupted,
		`{"id": "r", "cells": []}`: record.Running,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		run, err := record.Load(dir)
		if err != nil || run.State != want || (want != record.Running) == run.Ended.IsZero() {
			t.Errorf("%s: state %q, ended %v (%v); want %q", js, run.State, run.Ended, err, want)
		}
	}
}
