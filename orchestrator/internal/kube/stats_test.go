package kube

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// TestSamplesAreTheChangeBetweenReadings: each sample is the CPU time and
// throttling between two readings, the memory at the later; the first
// reading, and one whose counters went backwards, give none; the raw
// readings read back to the same samples.
func TestSamplesAreTheChangeBetweenReadings(t *testing.T) {
	at := func(s float64) time.Time { return time.Unix(1000, 0).Add(time.Duration(s * float64(time.Second))) }
	readings := []reading{
		{Read: at(0), CPUNanos: 1e9, Periods: 10, MemoryBytes: 1},
		{Read: at(1), CPUNanos: 1.5e9, Periods: 20, Throttled: 5, ThrottledNanos: 2e6, MemoryBytes: 2},
		{Read: at(2), CPUNanos: 1e9, MemoryBytes: 3}, // a new cgroup: backwards
		{Read: at(4), CPUNanos: 3e9, MemoryBytes: 4},
	}
	var s sampler
	var got []backend.Sample
	var raw bytes.Buffer
	for _, r := range readings {
		json.NewEncoder(&raw).Encode(r)
		if sm, ok := s.add(r); ok {
			got = append(got, sm)
		}
	}
	want := []backend.Sample{
		{Read: at(1), PreRead: at(0), CPUPercent: 50, CPUNanos: 5e8, Periods: 10, Throttled: 5, ThrottledNanos: 2e6, MemoryBytes: 2},
		{Read: at(4), PreRead: at(2), CPUPercent: 100, CPUNanos: 2e9, MemoryBytes: 4},
	}
	if len(got) != len(want) {
		t.Fatalf("samples %+v, want %+v", got, want)
	}
	for i := range want {
		if !got[i].Read.Equal(want[i].Read) || !got[i].PreRead.Equal(want[i].PreRead) || got[i].CPUNanos != want[i].CPUNanos || got[i].CPUPercent != want[i].CPUPercent ||
			got[i].Periods != want[i].Periods || got[i].Throttled != want[i].Throttled || got[i].ThrottledNanos != want[i].ThrottledNanos || got[i].MemoryBytes != want[i].MemoryBytes {
			t.Errorf("sample %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	var again []backend.Sample
	if err := ReadStats(&raw, func(s backend.Sample) { again = append(again, s) }); err != nil || len(again) != 2 || again[1].CPUNanos != 2e9 {
		t.Errorf("ReadStats = %+v, %v", again, err)
	}
}

// TestCgroupsAreFoundAndRead: a container's cgroup under the kubelet's
// cgroupfs layout (v1, a Burstable pod) and its systemd layout (v2); the
// counters as Docker reads them (memory less inactive file cache).
func TestCgroupsAreFoundAndRead(t *testing.T) {
	v1 := cgroups{Root: t.TempDir()}
	dir := func(controller string) string {
		return filepath.Join(v1.Root, controller, "kubepods", "burstable", "podu-1", "c1")
	}
	writeFile(t, filepath.Join(dir("cpuacct"), "cpuacct.usage"), "123456789\n")
	writeFile(t, filepath.Join(dir("cpu"), "cpu.stat"), "nr_periods 100\nnr_throttled 7\nthrottled_time 9000\n")
	writeFile(t, filepath.Join(dir("memory"), "memory.usage_in_bytes"), "10000\n")
	writeFile(t, filepath.Join(dir("memory"), "memory.stat"), "cache 5000\ntotal_inactive_file 4000\n")
	writeFile(t, filepath.Join(dir("memory"), "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
	writeFile(t, filepath.Join(dir("cpuset"), "cpuset.cpus"), "1\n")
	ct, err := v1.find("u-1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ct.read()
	if err != nil {
		t.Fatal(err)
	}
	if r.CPUNanos != 123456789 || r.Periods != 100 || r.Throttled != 7 || r.ThrottledNanos != 9000 || r.MemoryBytes != 6000 || r.OOMKills != 2 {
		t.Errorf("v1 reading %+v", r)
	}
	if cpus, err := ct.cpus(); cpus != "1" || err != nil {
		t.Errorf("cpus = %q, %v", cpus, err)
	}

	v2 := cgroups{Root: t.TempDir()}
	writeFile(t, filepath.Join(v2.Root, "cgroup.controllers"), "cpu memory cpuset\n")
	scope := filepath.Join(v2.Root, "kubepods.slice", "kubepods-besteffort.slice", "kubepods-besteffort-podu_2.slice", "cri-containerd-c2.scope")
	writeFile(t, filepath.Join(scope, "cpu.stat"), "usage_usec 2000\nnr_periods 4\nnr_throttled 1\nthrottled_usec 30\n")
	writeFile(t, filepath.Join(scope, "memory.current"), "8192\n")
	writeFile(t, filepath.Join(scope, "memory.stat"), "inactive_file 4096\n")
	writeFile(t, filepath.Join(scope, "memory.events"), "oom 1\noom_kill 1\n")
	if v2.version() != "2" || v1.version() != "1" {
		t.Errorf("versions %s and %s", v1.version(), v2.version())
	}
	ct, err = v2.find("u-2", "c2")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := ct.read(); err != nil || r.CPUNanos != 2e6 || r.ThrottledNanos != 3e4 || r.MemoryBytes != 4096 || r.OOMKills != 1 {
		t.Errorf("v2 reading %+v, %v", r, err)
	}
	if _, err := v2.find("u-3", "c3"); err == nil {
		t.Error("found the cgroup of a container that has none")
	}
}
