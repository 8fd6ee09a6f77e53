package session

import (
	"bufio"
	"os"
	"strings"

	"github.com/docker/docker/api/types/system"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// hardwareOf describes a host's machine, for the record. The CPU model
// comes from /proc/cpuinfo, which a container shares with its host.
func hardwareOf(info system.Info) record.Hardware {
	return record.Hardware{
		CPUModel:      cpuModel("/proc/cpuinfo"),
		CPUs:          info.NCPU,
		MemoryBytes:   info.MemTotal,
		Kernel:        info.KernelVersion,
		OS:            info.OperatingSystem,
		DockerVersion: info.ServerVersion,
		CgroupVersion: info.CgroupVersion,
		StorageDriver: info.Driver,
	}
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
