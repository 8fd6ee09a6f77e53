package session

import (
	"bufio"
	"os"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// hardwareOf describes a host's machine, for the record. The CPU model
// comes from /proc/cpuinfo, which a container shares with its host.
func hardwareOf(facts backend.Facts) record.Hardware {
	h := record.Hardware{
		HostID:        facts.ID,
		CPUModel:      cpuModel("/proc/cpuinfo"),
		CPUs:          facts.CPUs,
		MemoryBytes:   facts.Memory,
		Kernel:        facts.Kernel,
		OS:            facts.OS,
		DockerVersion: facts.Version,
		CgroupVersion: facts.Cgroup,
		StorageDriver: facts.Storage,
		Backend:       facts.Backend,
	}
	if c := facts.Cluster; c != nil {
		h.Cluster = &record.Cluster{Context: c.Context, Version: c.Version, Node: c.Node, Kubelet: c.Kubelet, Runtime: c.Runtime,
			AllocatableCPU: c.AllocatableCPU, CPUManager: c.CPUManager, PodPidsLimit: c.PodPidsLimit}
	}
	return h
}

func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
