package record

import (
	"bufio"
	"os"
	"strings"

	"github.com/docker/docker/api/types/system"
)

// Hardware is the machine the servers ran on, as the Docker engine sees it
// (the orchestrator itself may run in a container).
type Hardware struct {
	CPUModel      string `json:"cpu_model"`
	CPUs          int    `json:"cpus"`
	MemoryBytes   int64  `json:"memory_bytes"`
	Kernel        string `json:"kernel"`
	OS            string `json:"os"`
	DockerVersion string `json:"docker_version"`
	CgroupVersion string `json:"cgroup_version"`
	StorageDriver string `json:"storage_driver"`
}

// HardwareOf describes the host's machine. The CPU model comes from
// /proc/cpuinfo, which a container shares with its host.
func HardwareOf(info system.Info) Hardware {
	return Hardware{
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
