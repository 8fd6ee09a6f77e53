package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
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

// HardwareOf describes the engine's machine. The CPU model comes from
// /proc/cpuinfo, which a container shares with its host.
func HardwareOf(facts backend.Facts) Hardware {
	return Hardware{
		CPUModel:      cpuModel("/proc/cpuinfo"),
		CPUs:          facts.CPUs,
		MemoryBytes:   facts.Memory,
		Kernel:        facts.Kernel,
		OS:            facts.OS,
		DockerVersion: facts.Version,
		CgroupVersion: facts.Cgroup,
		StorageDriver: facts.Storage,
	}
}

// WriteHardware writes hardware.txt.
func WriteHardware(w io.Writer, h Hardware) error {
	_, err := fmt.Fprintf(w, "CPU:       %s, %d cores\nMemory:    %.1f GiB\nKernel:    %s\nOS:        %s\nDocker:    %s (cgroup v%s, %s)\n",
		h.CPUModel, h.CPUs, float64(h.MemoryBytes)/(1<<30), h.Kernel, h.OS, h.DockerVersion, h.CgroupVersion, h.StorageDriver)
	return err
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

// SaveHardware writes hardware.txt: the run's machine, or its servers' and
// its clients' machines.
func SaveHardware(f Folder, run Run) error {
	var b bytes.Buffer
	if run.ClientHardware != nil {
		b.WriteString("Servers' machine:\n")
	}
	if err := WriteHardware(&b, run.Hardware); err != nil {
		return err
	}
	if run.ClientHardware != nil {
		b.WriteString("\nClients' machine:\n")
		if err := WriteHardware(&b, *run.ClientHardware); err != nil {
			return err
		}
	}
	return f.Write("hardware.txt", b.Bytes())
}
