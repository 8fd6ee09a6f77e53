package kube

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroups are the node's cgroup file systems, read here: the node is this
// machine. Root is where they are mounted; Boot the kernel's boot id.
type cgroups struct {
	Root, Boot string
}

// localCgroups are this machine's.
var localCgroups = cgroups{Root: "/sys/fs/cgroup", Boot: "/proc/sys/kernel/random/boot_id"}

func (c cgroups) bootID() string {
	b, err := os.ReadFile(c.Boot)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// unified says the cgroups are version 2 (cgroup.controllers at the root);
// else the kubelet uses the v1 hierarchies.
func (c cgroups) unified() bool {
	_, err := os.Stat(filepath.Join(c.Root, "cgroup.controllers"))
	return err == nil
}

func (c cgroups) version() string {
	if c.unified() {
		return "2"
	}
	return "1"
}

// container is one container's cgroup, in each hierarchy it is read from.
type container struct {
	v2                   bool
	cpu, cpuacct, memory string // v1: one folder per controller; v2: all one
	cpuset               string
}

// find is the cgroup of the container id of the pod uid, under the
// kubelet's cgroupfs layout (kubepods/[burstable|besteffort/]pod<uid>/<id>)
// or its systemd one (kubepods-…-pod<uid with _>.slice/cri-containerd-<id>.scope).
func (c cgroups) find(uid, id string) (container, error) {
	v2 := c.unified()
	dir := func(controller string) (string, error) {
		base := filepath.Join(c.Root, controller)
		if v2 {
			base = c.Root
		}
		slice := "*pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
		for _, pattern := range []string{
			filepath.Join(base, "kubepods", "pod"+uid, id),
			filepath.Join(base, "kubepods", "*", "pod"+uid, id),
			filepath.Join(base, "kubepods.slice", slice, "*"+id+".scope"),
			filepath.Join(base, "kubepods.slice", "*", slice, "*"+id+".scope"),
		} {
			if m, _ := filepath.Glob(pattern); len(m) == 1 {
				return m[0], nil
			}
		}
		return "", fmt.Errorf("no cgroup of container %.12s of pod %s under %s", id, uid, base)
	}
	var ct container
	var err error
	ct.v2 = v2
	if v2 {
		ct.cpu, err = dir("")
		ct.cpuacct, ct.memory, ct.cpuset = ct.cpu, ct.cpu, ct.cpu
		return ct, err
	}
	for _, f := range []struct {
		dir        *string
		controller string
	}{{&ct.cpu, "cpu"}, {&ct.cpuacct, "cpuacct"}, {&ct.memory, "memory"}, {&ct.cpuset, "cpuset"}} {
		if *f.dir, err = dir(f.controller); err != nil {
			return ct, err
		}
	}
	return ct, nil
}

// reading is one read of a container's cgroup: its cumulative counters
// and the memory in use. It is the raw document the backend keeps.
type reading struct {
	Read time.Time `json:"read"`
	// CPUNanos is the CPU time used since the container started; Periods,
	// Throttled and ThrottledNanos the CFS counters.
	CPUNanos       uint64 `json:"cpu_ns"`
	Periods        uint64 `json:"periods"`
	Throttled      uint64 `json:"throttled_periods"`
	ThrottledNanos uint64 `json:"throttled_ns"`
	// MemoryBytes is usage less inactive file cache, as `docker stats`.
	MemoryBytes uint64 `json:"memory_bytes"`
	// OOMKills counts the kernel's OOM kills in the cgroup.
	OOMKills uint64 `json:"oom_kills"`
}

// read reads the counters now.
func (ct container) read() (reading, error) {
	r := reading{Read: time.Now()}
	if ct.v2 {
		cpu, err := keyed(filepath.Join(ct.cpu, "cpu.stat"))
		if err != nil {
			return r, err
		}
		r.CPUNanos, r.Periods, r.Throttled, r.ThrottledNanos = cpu["usage_usec"]*1000, cpu["nr_periods"], cpu["nr_throttled"], cpu["throttled_usec"]*1000
		current, err := number(filepath.Join(ct.memory, "memory.current"))
		if err != nil {
			return r, err
		}
		mem, err := keyed(filepath.Join(ct.memory, "memory.stat"))
		if err != nil {
			return r, err
		}
		r.MemoryBytes = less(current, mem["inactive_file"])
		events, err := keyed(filepath.Join(ct.memory, "memory.events"))
		r.OOMKills = events["oom_kill"]
		return r, err
	}
	var err error
	if r.CPUNanos, err = number(filepath.Join(ct.cpuacct, "cpuacct.usage")); err != nil {
		return r, err
	}
	cpu, err := keyed(filepath.Join(ct.cpu, "cpu.stat"))
	if err != nil {
		return r, err
	}
	r.Periods, r.Throttled, r.ThrottledNanos = cpu["nr_periods"], cpu["nr_throttled"], cpu["throttled_time"]
	usage, err := number(filepath.Join(ct.memory, "memory.usage_in_bytes"))
	if err != nil {
		return r, err
	}
	mem, err := keyed(filepath.Join(ct.memory, "memory.stat"))
	if err != nil {
		return r, err
	}
	r.MemoryBytes = less(usage, mem["total_inactive_file"])
	oom, err := keyed(filepath.Join(ct.memory, "memory.oom_control"))
	r.OOMKills = oom["oom_kill"]
	return r, err
}

// cpus are the cores the container may run on (cpuset.cpus, or
// cpuset.cpus.effective on v2).
func (ct container) cpus() (string, error) {
	name := "cpuset.cpus"
	if ct.v2 {
		name = "cpuset.cpus.effective"
	}
	b, err := os.ReadFile(filepath.Join(ct.cpuset, name))
	return strings.TrimSpace(string(b)), err
}

func less(a, b uint64) uint64 {
	if b < a {
		return a - b
	}
	return a
}

// number reads a file that holds one number.
func number(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// keyed reads a file of "key value" lines.
func keyed(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	values := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
				values[k] = n
			}
		}
	}
	return values, nil
}
