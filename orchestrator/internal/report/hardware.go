package report

import (
	"bytes"
	"fmt"
	"io"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// WriteHardware writes hardware.txt.
func WriteHardware(w io.Writer, h record.Hardware) error {
	_, err := fmt.Fprintf(w, "CPU:       %s, %d cores\nMemory:    %.1f GiB\nKernel:    %s\nOS:        %s\nDocker:    %s (cgroup v%s, %s)\n",
		h.CPUModel, h.CPUs, float64(h.MemoryBytes)/(1<<30), h.Kernel, h.OS, h.DockerVersion, h.CgroupVersion, h.StorageDriver)
	return err
}

// SaveHardware writes hardware.txt: the run's machine, or its servers' and
// its clients' machines.
func SaveHardware(f record.Folder, run record.Run) error {
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
