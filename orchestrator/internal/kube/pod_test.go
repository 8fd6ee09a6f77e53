package kube

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// serverSpec is a server as the harness starts it beside its clients.
func serverSpec() backend.ContainerSpec {
	contained := func(s backend.ContainerSpec) backend.ContainerSpec {
		s.User, s.ReadOnly, s.Tmpfs, s.VolumeTmpfs, s.PidsLimit = "65534:65534", true, map[string]string{"/tmp": "rw,size=64m"}, "rw,size=32m", 1024
		return s
	}
	companion := contained(backend.ContainerSpec{Image: "bench:client", NanoCPUs: 5e8, Memory: 1 << 30, InputDir: "/input"})
	return contained(backend.ContainerSpec{
		Image: "bench:go_grpc", Env: []string{"GRPC_SERVER_CPUS=1"}, NanoCPUs: 1e9, Memory: 512 << 20, NoNetwork: true,
		Labels:    map[string]string{backend.RoleLabel: "server", "io.grpcbench.server": "go_grpc", backend.ImagesLabel: "registry.local/team/bench"},
		Files:     map[string][]byte{"/tls/server.crt": []byte("cert")},
		InputDir:  "/tls",
		Companion: &companion,
	})
}

// TestPodOfAServer: a server and its companion are one pod, each with
// requests equal to its limits (Guaranteed), contained as in Docker, the
// image's volumes and /tmp memory-backed and bounded, the files a
// read-only Secret, the network left to the isolate init container.
func TestPodOfAServer(t *testing.T) {
	th := newTestHost(t)
	images := map[string]backend.ImageConfig{"bench:go_grpc": {Volumes: []string{"/data/"}}, "bench:client": {Entrypoint: []string{"grpcbench"}}}
	pod, err := th.podOf(serverSpec(), images, "files-1")
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	if s.RestartPolicy != corev1.RestartPolicyNever || *s.AutomountServiceAccountToken || *s.EnableServiceLinks || s.NodeSelector[corev1.LabelHostname] != "node-1" {
		t.Errorf("pod spec %+v", s)
	}
	if len(s.Containers) != 2 || s.Containers[0].Name != "server" || s.Containers[1].Name != "client" || len(s.InitContainers) != 1 {
		t.Fatalf("containers %v, init %v", s.Containers, s.InitContainers)
	}
	server, client, isolate := s.Containers[0], s.Containers[1], s.InitContainers[0]
	for _, c := range []struct {
		c        corev1.Container
		cpu, mem string
	}{{server, "1", "512Mi"}, {client, "500m", "1Gi"}, {isolate, "100m", "32Mi"}} {
		r := c.c.Resources
		if r.Limits.Cpu().String() != c.cpu || r.Limits.Memory().String() != c.mem || !r.Limits.Cpu().Equal(*r.Requests.Cpu()) || !r.Limits.Memory().Equal(*r.Requests.Memory()) {
			t.Errorf("%s: resources %+v, want %s and %s, requests equal", c.c.Name, r, c.cpu, c.mem)
		}
		sc := c.c.SecurityContext
		if !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: security context %+v", c.c.Name, sc)
		}
		if c.c.ImagePullPolicy != corev1.PullNever {
			t.Errorf("%s pulls: %s", c.c.Name, c.c.ImagePullPolicy)
		}
	}
	for _, c := range []corev1.Container{server, client} {
		sc := c.SecurityContext
		if *sc.RunAsUser != 65534 || *sc.RunAsGroup != 65534 || !*sc.RunAsNonRoot || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s runs as %v:%v, non-root %v, adds %v", c.Name, *sc.RunAsUser, *sc.RunAsGroup, *sc.RunAsNonRoot, sc.Capabilities.Add)
		}
	}
	if !slices.Equal(isolate.SecurityContext.Capabilities.Add, []corev1.Capability{"NET_ADMIN"}) || isolate.Image != "bench:client" || !slices.Equal(isolate.Args, IsolateCommand) {
		t.Errorf("isolate %+v", isolate)
	}
	if !slices.Equal(client.Command, []string{"sleep", "infinity"}) || server.Command != nil || server.Env[0].Name != "GRPC_SERVER_CPUS" {
		t.Errorf("server command %v env %v, client command %v", server.Command, server.Env, client.Command)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range s.Volumes {
		volumes[v.Name] = v
	}
	mounts := func(c corev1.Container) map[string]string {
		m := map[string]string{}
		for _, vm := range c.VolumeMounts {
			v := volumes[vm.Name]
			switch {
			case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
				m[vm.MountPath] = "tmpfs " + v.EmptyDir.SizeLimit.String()
			case v.Secret != nil && vm.ReadOnly && *v.Secret.DefaultMode == 0o444:
				m[vm.MountPath] = "secret " + v.Secret.SecretName
			default:
				m[vm.MountPath] = "other"
			}
		}
		return m
	}
	if got, want := mounts(server), map[string]string{"/tmp": "tmpfs 64Mi", "/data": "tmpfs 32Mi", "/tls": "secret files-1"}; !maps.Equal(got, want) {
		t.Errorf("server mounts %v, want %v", got, want)
	}
	if got, want := mounts(client), map[string]string{"/tmp": "tmpfs 64Mi", "/input": "tmpfs 64Mi", execDir: "tmpfs 1Mi"}; !maps.Equal(got, want) {
		t.Errorf("client mounts %v, want %v", got, want)
	}
	for k, v := range pod.Labels {
		if bad := validation.IsValidLabelValue(v); len(bad) > 0 {
			t.Errorf("label %s=%q: %v", k, v, bad)
		}
	}
	if pod.Annotations[backend.ImagesLabel] != "registry.local/team/bench" || !strings.HasPrefix(pod.GenerateName, "grpcbench-go-grpc-server-") {
		t.Errorf("annotations %v, name %s", pod.Annotations, pod.GenerateName)
	}

	published := serverSpec()
	published.NoNetwork, published.Publish = false, map[int]int{50051: 0}
	if _, err := th.podOf(published, images, ""); err == nil || !strings.Contains(err.Error(), "not supported yet") {
		t.Errorf("a published server: %v, want refused", err)
	}
	if _, err := th.podOf(backend.ContainerSpec{Image: "x", User: "nobody"}, images, ""); err == nil || !strings.Contains(err.Error(), "numeric") {
		t.Errorf("a user by name: %v, want refused", err)
	}
}

// TestLabelValues: a value a label may hold stays; another is made safe,
// and two such values stay apart.
func TestLabelValues(t *testing.T) {
	if v := labelValue("grpc_bench"); v != "grpc_bench" {
		t.Errorf("labelValue(grpc_bench) = %q", v)
	}
	a, b := labelValue("registry.local/team/bench"), labelValue("registry.local/team_bench")
	if a == b || len(validation.IsValidLabelValue(a)) > 0 || len(validation.IsValidLabelValue(b)) > 0 {
		t.Errorf("labelValue: %q and %q", a, b)
	}
	if v := labelValue(strings.Repeat("x/", 60)); len(validation.IsValidLabelValue(v)) > 0 {
		t.Errorf("labelValue of a long name: %q", v)
	}
}
