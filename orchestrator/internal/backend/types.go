package backend

import (
	"fmt"
	"maps"
	"path"
	"strconv"
	"time"

	"github.com/distribution/reference"
)

// Facts describe a host's machine, as the settings' checks and the record
// need them.
type Facts struct {
	// ID tells one host from another: a Docker engine's ID.
	ID     string
	CPUs   int
	Memory int64 // bytes
	// Arch is the machine's architecture as Go names it (amd64, arm64).
	Arch   string
	Kernel string
	OS     string
	// Version is the container runtime's (Docker's server version; on
	// Kubernetes, the version of the engine that builds the images), with
	// the cgroup version and storage driver it runs on.
	Version, Cgroup, Storage string
	// Backend names the kind of host: docker, kubernetes.
	Backend string
	// Cluster describes a Kubernetes host's cluster and node; nil for
	// other backends.
	Cluster *Cluster
}

// Cluster is a Kubernetes cluster and the node of it that runs the pods.
type Cluster struct {
	// Context is the kubeconfig's context; Version the API server's.
	Context, Version string
	// Node is the node's name; Kubelet and Runtime its kubelet's and
	// container runtime's versions (containerd://1.6.20).
	Node, Kubelet, Runtime string
	// AllocatableCPU is what the kubelet leaves to pods ("1500m");
	// CPUManager its CPU manager policy (static pins whole CPUs) and
	// PodPidsLimit its limit on a pod's processes, "" and 0 when the
	// kubelet's configuration cannot be read.
	AllocatableCPU, CPUManager string
	PodPidsLimit               int64
}

// Repository is an image name as Docker shortens it, by which a lock is
// taken: docker.io/library/x and x are one repository. A name that does
// not parse stays as it is.
func Repository(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return image
	}
	return reference.FamiliarName(named)
}

// Owner says who holds a lock: the process, on which machine and boot, in
// which PID namespace and container.
type Owner struct {
	Host string // hostname; a container's when the run is in one
	Boot string // the kernel's boot id
	// Machine is the machine's id (/etc/machine-id), which a reboot keeps;
	// "" in a container, whose file is its image's.
	Machine string
	// PID and Start (the process's start time, in clock ticks since boot)
	// name one process in the PID namespace PIDNamespace
	// (/proc/self/ns/pid), and only there.
	PIDNamespace string
	PID          int
	Start        uint64
	Run          string // the run's id
	// Token is random, and also in the run's folder Dir on the owner's
	// machine: a machine of the same name does not have that file.
	Token, Dir string
	// Container is the container the owner runs in, from its own mounts;
	// Started is when that container started, when the lock's host runs
	// it: a restarted container is the same container with another start.
	Container, Started string
}

func (o Owner) String() string {
	return fmt.Sprintf("run %s (pid %d on %s)", o.Run, o.PID, o.Host)
}

// The keys under which a lock keeps its owner, as labels or annotations.
const (
	ownerHost      = "io.grpcbench.owner.host"
	ownerBoot      = "io.grpcbench.owner.boot"
	ownerMachine   = "io.grpcbench.owner.machine"
	ownerPIDs      = "io.grpcbench.owner.pidns"
	ownerPID       = "io.grpcbench.owner.pid"
	ownerStart     = "io.grpcbench.owner.start"
	ownerRun       = "io.grpcbench.owner.run"
	ownerToken     = "io.grpcbench.owner.token"
	ownerDir       = "io.grpcbench.owner.dir"
	ownerContainer = "io.grpcbench.owner.container"
	ownerStarted   = "io.grpcbench.owner.started"
)

// Labels are the owner as a lock keeps it; OwnerOf reads them back.
func (o Owner) Labels() map[string]string {
	return map[string]string{ownerHost: o.Host, ownerBoot: o.Boot, ownerMachine: o.Machine, ownerPIDs: o.PIDNamespace, ownerPID: strconv.Itoa(o.PID), ownerStart: strconv.FormatUint(o.Start, 10),
		ownerRun: o.Run, ownerToken: o.Token, ownerDir: o.Dir, ownerContainer: o.Container, ownerStarted: o.Started}
}

// OwnerOf is the owner a lock's labels name.
func OwnerOf(labels map[string]string) Owner {
	pid, _ := strconv.Atoi(labels[ownerPID])
	start, _ := strconv.ParseUint(labels[ownerStart], 10, 64)
	return Owner{Host: labels[ownerHost], Boot: labels[ownerBoot], Machine: labels[ownerMachine], PIDNamespace: labels[ownerPIDs], PID: pid, Start: start, Run: labels[ownerRun],
		Token: labels[ownerToken], Dir: labels[ownerDir], Container: labels[ownerContainer], Started: labels[ownerStarted]}
}

// ContainerSpec is a container to start.
type ContainerSpec struct {
	Image  string
	Cmd    []string
	Env    []string
	Labels map[string]string
	// NanoCPUs is the CPU quota (1e9 = one core); 0 means none.
	NanoCPUs int64
	// CPUSet pins the container to these cores ("0", "1-2"); "" means any.
	CPUSet string
	// Memory is the memory limit in bytes (swap included); 0 means none.
	Memory int64
	// NetworkOf joins the network namespace of that container, so that
	// 127.0.0.1 is the same loopback for both; NoNetwork gives the
	// container a namespace with loopback only.
	NetworkOf string
	NoNetwork bool
	// HostNetwork runs the container in its host's network namespace: a
	// load client on a machine of its own, without NAT on its path.
	HostNetwork bool
	// Publish makes container ports (TCP) reachable from other machines
	// at host ports of PublishIP, an address of the host only (host port
	// 0: one the host picks, which State reads back), without NAT for what
	// the container sends out.
	Publish   map[int]int
	PublishIP string
	// Files are written into the container before it starts, by path
	// under InputDir, a volume of its own: a read-only root file system
	// takes no copy.
	Files    map[string][]byte
	InputDir string
	// Containment: the user to run as ("" is the image's), a read-only
	// root file system with tmpfs mounts (path → options) where the
	// process writes, and a limit on processes and threads. With ReadOnly,
	// each VOLUME the image declares is a tmpfs of VolumeTmpfs's options
	// too, not a folder on the host's disk.
	User        string
	ReadOnly    bool
	Tmpfs       map[string]string
	VolumeTmpfs string
	PidsLimit   int64
	// Companion, on a server's spec, is the container its clients will
	// run in (image, limits, containment, InputDir), for a host that
	// cannot start a container in a running container's network namespace
	// and makes the two at once instead (Kubernetes: the containers of a
	// pod are all created with it). A host that can start containers
	// with NetworkOf ignores it.
	Companion *ContainerSpec
}

// TmpfsWith are the spec's tmpfs mounts (path → options) with, on a
// read-only root, one of VolumeTmpfs's options over each of volumes (the
// VOLUMEs its image declares) that has none, but the folder of its files,
// which has a volume of its own: an image's VOLUME would otherwise be a
// writable folder on the host's disk, beyond the container's memory.
func (s ContainerSpec) TmpfsWith(volumes []string) map[string]string {
	if !s.ReadOnly {
		return s.Tmpfs
	}
	tmpfs := maps.Clone(s.Tmpfs)
	for _, volume := range volumes {
		volume = path.Clean(volume)
		if _, ok := tmpfs[volume]; !ok && (len(s.Files) == 0 || volume != s.InputDir) {
			if tmpfs == nil {
				tmpfs = map[string]string{}
			}
			tmpfs[volume] = s.VolumeTmpfs
		}
	}
	return tmpfs
}

// ImageConfig is what an image says of the containers it runs.
type ImageConfig struct {
	Entrypoint, Cmd []string
	// Volumes are the folders it declares VOLUME.
	Volumes []string
}

// State is what the host knows of a container's process, and the host
// ports its published ports are at (container port → host port).
type State struct {
	Running   bool
	ExitCode  int
	OOMKilled bool
	Ports     map[int]int
}

// Sample is one reading of a container's stats: the CPU used and the CFS
// throttling over [PreRead, Read], and the memory in use at Read.
type Sample struct {
	Read, PreRead time.Time
	// CPUPercent is the share of one core used over the interval: 100
	// means one core busy all the time.
	CPUPercent float64
	// MemoryBytes is usage less inactive file cache, the figure `docker
	// stats` shows.
	MemoryBytes uint64
	// CPUNanos is the CPU time used over the interval; Periods the CFS
	// periods in it, Throttled those in which the quota stopped the
	// container, ThrottledNanos the time it was stopped.
	CPUNanos           uint64
	Periods, Throttled uint64
	ThrottledNanos     uint64
}

// BuildOptions names the image to build and how.
type BuildOptions struct {
	Tag        string
	Dockerfile string // path inside the context; "" means Dockerfile
	BuildArgs  map[string]string
	Labels     map[string]string
	// Memory (bytes, swap included) and CPUs (cores) limit the container
	// of each step; 0 means none.
	Memory int64
	CPUs   float64
}
