package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/docker/go-units"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// The containers of a pod: the server, the companion its clients run in,
// and the init container that leaves the pod's network loopback only.
const (
	serverName  = "server"
	clientName  = "client"
	isolateName = "isolate"
)

// Folders of the companion that the backend uses: execDir holds each
// exec's pid file, for Remove to kill it.
const (
	execDir = "/run/grpcbench"
	// The sizes of the memory-backed folders of the companion's files and
	// pid files: a client's files are its scenario, CA and spec.
	inputSize = 64 << 20
	execSize  = 1 << 20
)

// IsolateCommand is what the isolate init container runs, in the
// companion's image (the orchestrator's, whose entrypoint is grpcbench):
// the hidden command that sets every interface but loopback down.
var IsolateCommand = []string{"isolate"}

// podOf is the pod of a container spec and, when the spec has a
// companion, the container its clients run in; secret is the name of the
// Secret that holds the spec's files ("" without files). images are the
// configs of the server's and the companion's images.
func (h *Host) podOf(spec backend.ContainerSpec, images map[string]backend.ImageConfig, secret string) (*corev1.Pod, error) {
	switch {
	case spec.NetworkOf != "":
		return nil, fmt.Errorf("a pod cannot join another's network namespace")
	case len(spec.Publish) > 0 || spec.HostNetwork:
		return nil, fmt.Errorf("the Kubernetes backend runs a server and its clients in one pod: " +
			"a server published for clients elsewhere (GRPC_SERVER_ADDRESS, two hosts) is not supported yet (docs/scale-out.md)")
	}
	v := volumes{}
	server, err := v.container(serverName, spec, images[spec.Image])
	if err != nil {
		return nil, err
	}
	if len(spec.Files) > 0 {
		mode := int32(0o444) // the files are root's in Docker's volume: here no one may change them, the server may read them
		v.list = append(v.list, corev1.Volume{Name: "files", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret, DefaultMode: &mode}}})
		server.VolumeMounts = append(server.VolumeMounts, corev1.VolumeMount{Name: "files", MountPath: spec.InputDir, ReadOnly: true})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: podPrefix(spec.Labels),
			Namespace:    h.opts.Namespace,
			Labels:       labelsOf(spec.Labels),
			Annotations:  maps.Clone(spec.Labels),
		},
		Spec: corev1.PodSpec{
			Containers:    []corev1.Container{server},
			RestartPolicy: corev1.RestartPolicyNever,
			// No credentials of the cluster, no variables naming its
			// services, no DNS but the node's: a server sees nothing of
			// the cluster.
			AutomountServiceAccountToken:  new(false),
			EnableServiceLinks:            new(false),
			DNSPolicy:                     corev1.DNSDefault,
			TerminationGracePeriodSeconds: new(int64(1)),
			NodeSelector:                  map[string]string{corev1.LabelHostname: h.hostname},
		},
	}
	if c := spec.Companion; c != nil {
		client, err := v.container(clientName, *c, images[c.Image])
		if err != nil {
			return nil, err
		}
		// The agent waits for the execs that are the clients.
		client.Command, client.Args = []string{"sleep", "infinity"}, nil
		client.VolumeMounts = append(client.VolumeMounts, v.memory(c.InputDir, inputSize), v.memory(execDir, execSize))
		pod.Spec.Containers = append(pod.Spec.Containers, client)
		if spec.NoNetwork {
			pod.Spec.InitContainers = []corev1.Container{isolate(c.Image)}
		}
	}
	pod.Spec.Volumes = v.list
	return pod, nil
}

// isolate is the init container that sets the pod's interfaces but
// loopback down, before the server and its clients start: what Docker's
// network "none" gives, on any network plugin. It alone may administer
// the pod's network, and it exits before them.
func isolate(image string) corev1.Container {
	return corev1.Container{
		Name: isolateName, Image: image, ImagePullPolicy: corev1.PullNever, Args: IsolateCommand,
		// Guaranteed QoS needs limits on every container.
		Resources: resources(100e6, 32<<20),
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: new(int64(0)), RunAsNonRoot: new(false),
			ReadOnlyRootFilesystem: new(true), AllowPrivilegeEscalation: new(false),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_ADMIN"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// volumes are a pod's volumes as its containers are made.
type volumes struct {
	list []corev1.Volume
}

// memory is a new memory-backed emptyDir of size bytes mounted at dir: a
// tmpfs, whose pages count against the container's memory limit.
func (v *volumes) memory(dir string, size int64) corev1.VolumeMount {
	name := "tmpfs-" + strconv.Itoa(len(v.list))
	v.list = append(v.list, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(size, resource.BinarySI)}}})
	return corev1.VolumeMount{Name: name, MountPath: dir}
}

// container is a container of the spec, contained as the Docker backend
// contains it: its user, a read-only root with a tmpfs at each of the
// spec's tmpfs paths and over each of its image's volumes, no
// capabilities, no privilege escalation, the runtime's default seccomp
// profile, requests equal to its limits.
func (v *volumes) container(name string, spec backend.ContainerSpec, image backend.ImageConfig) (corev1.Container, error) {
	c := corev1.Container{
		Name: name, Image: spec.Image, ImagePullPolicy: corev1.PullNever, Args: spec.Cmd,
		Resources: resources(spec.NanoCPUs, spec.Memory),
		SecurityContext: &corev1.SecurityContext{
			ReadOnlyRootFilesystem: new(spec.ReadOnly), AllowPrivilegeEscalation: new(false),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	if spec.User != "" {
		uid, gid, err := user(spec.User)
		if err != nil {
			return c, err
		}
		c.SecurityContext.RunAsUser, c.SecurityContext.RunAsGroup, c.SecurityContext.RunAsNonRoot = &uid, gid, new(uid != 0)
	}
	for _, kv := range spec.Env {
		k, val, _ := strings.Cut(kv, "=")
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: val})
	}
	tmpfs := spec.TmpfsWith(image.Volumes)
	for _, dir := range slices.Sorted(maps.Keys(tmpfs)) {
		size, err := tmpfsSize(tmpfs[dir])
		if err != nil {
			return c, fmt.Errorf("tmpfs at %s: %w", dir, err)
		}
		c.VolumeMounts = append(c.VolumeMounts, v.memory(path.Clean(dir), size))
	}
	return c, nil
}

// resources are requests equal to limits, which with every container of
// a pod so makes it Guaranteed; 0 sets no limit.
func resources(nanoCPUs, memory int64) corev1.ResourceRequirements {
	limits := corev1.ResourceList{}
	if nanoCPUs > 0 {
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(nanoCPUs/1e6, resource.DecimalSI)
	}
	if memory > 0 {
		limits[corev1.ResourceMemory] = *resource.NewQuantity(memory, resource.BinarySI)
	}
	return corev1.ResourceRequirements{Limits: limits, Requests: limits.DeepCopy()}
}

// user reads uid[:gid]: Kubernetes takes numbers only.
func user(s string) (int64, *int64, error) {
	u, g, hasGroup := strings.Cut(s, ":")
	uid, err := strconv.ParseInt(u, 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("user %q: Kubernetes runs a container as a numeric uid[:gid]", s)
	}
	if !hasGroup {
		return uid, nil, nil
	}
	gid, err := strconv.ParseInt(g, 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("user %q: Kubernetes runs a container as a numeric uid[:gid]", s)
	}
	return uid, &gid, nil
}

// tmpfsSize is the size= of tmpfs mount options; none is the default of a
// tmpfs, 64 MiB here as Docker's.
func tmpfsSize(opts string) (int64, error) {
	for opt := range strings.SplitSeq(opts, ",") {
		if v, ok := strings.CutPrefix(opt, "size="); ok {
			return units.RAMInBytes(v)
		}
	}
	return 64 << 20, nil
}

// secretOf is the Secret that holds a spec's files, by their paths under
// its InputDir.
func (h *Host) secretOf(spec backend.ContainerSpec) (*corev1.Secret, error) {
	data := map[string][]byte{}
	for name, content := range spec.Files {
		rel, ok := strings.CutPrefix(name, spec.InputDir+"/")
		if !ok || strings.Contains(rel, "/") {
			return nil, fmt.Errorf("file %s is not directly under %s", name, spec.InputDir)
		}
		data[rel] = content
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "grpcbench-files-", Namespace: h.opts.Namespace, Labels: labelsOf(spec.Labels), Annotations: maps.Clone(spec.Labels)},
		Data:       data,
		Immutable:  new(true),
	}, nil
}

// podPrefix starts a pod's name: the backend's, the server's and the
// container's role, as far as a name may hold them.
func podPrefix(labels map[string]string) string {
	name := "grpcbench"
	for _, part := range []string{labels["io.grpcbench.server"], labels[backend.RoleLabel]} {
		part = strings.Trim(unsafeInName.ReplaceAllString(strings.ToLower(part), "-"), "-")
		if part != "" && len(name)+len(part) < 40 {
			name += "-" + part
		}
	}
	return name + "-"
}

var (
	unsafeInName  = regexp.MustCompile(`[^a-z0-9-]+`)
	unsafeInLabel = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
)

// labelsOf are labels as a label's value may hold them: a value that may
// not is made safe and told apart from others by a hash of it (the
// annotations keep them as given).
func labelsOf(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = labelValue(v)
	}
	out[managedLabel] = "true"
	return out
}

func labelValue(v string) string {
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	safe := strings.Trim(unsafeInLabel.ReplaceAllString(v, "_"), "_.-")
	if len(safe) > 50 {
		safe = strings.Trim(safe[:50], "_.-")
	}
	if safe == "" {
		return hex.EncodeToString(sum[:6])
	}
	return safe + "-" + hex.EncodeToString(sum[:6])
}
