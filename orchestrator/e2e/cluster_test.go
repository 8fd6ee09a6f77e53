//go:build e2e && cluster

package e2e_test

// The Kubernetes backend (k8s://) against the real single-node cluster of
// scripts/local-cluster: real pods, images built by the Docker engine and
// imported into the cluster's containerd, real gRPC traffic. The test
// starts the cluster when it does not run (as root; ~15 s with the
// binaries cached, ~16 min to build them cold) and stops it again at the
// end when it started it. `make e2e-cluster` runs it.

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
)

// The local cluster's context, and the namespace the backend uses.
const (
	clusterContext   = "grpcbench-local"
	clusterNamespace = "grpcbench"
)

// kubeCluster is the local cluster as the tests reach it.
type kubeCluster struct {
	api        kubernetes.Interface
	cfg        *rest.Config
	kubeconfig string
}

// address is the cluster as a run's setting names it.
func (c kubeCluster) address() string {
	return "k8s://" + clusterContext + "?kubeconfig=" + c.kubeconfig
}

// localCluster is the cluster of scripts/local-cluster, started when it
// does not run and, then, stopped at the end of the test (down checks that
// nothing of it is left).
func localCluster(t *testing.T) kubeCluster {
	t.Helper()
	script := filepath.Join(repoRoot(t), "scripts", "local-cluster")
	env := runProgram(t, repoRoot(t), script, "env")
	kubeconfig, ok := strings.CutPrefix(strings.TrimSpace(env.stdout), "KUBECONFIG=")
	if env.code != 0 || !ok {
		t.Fatalf("scripts/local-cluster env: %d %q %s", env.code, env.stdout, env.stderr)
	}
	if status := runProgram(t, repoRoot(t), script, "status"); status.code != 0 {
		if os.Geteuid() != 0 {
			t.Fatal("the local cluster does not run, and starting it needs root: run the test as root, or `sudo scripts/local-cluster up` first")
		}
		start := time.Now()
		up := runProgram(t, repoRoot(t), script, "up")
		if up.code != 0 {
			t.Fatalf("scripts/local-cluster up: exit %d\n%s\n%s", up.code, up.stdout, up.stderr)
		}
		t.Logf("the local cluster started in %s:\n%s", time.Since(start).Round(time.Second), up.stdout)
		t.Cleanup(func() {
			if down := runProgram(t, repoRoot(t), script, "down"); down.code != 0 {
				t.Errorf("scripts/local-cluster down: exit %d\n%s\n%s", down.code, down.stdout, down.stderr)
			}
		})
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: clusterContext}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	api, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kubeCluster{api: api, cfg: cfg, kubeconfig: kubeconfig}
}

// clusterEnv are the settings of a short run on the cluster: servers and
// clients on it, a server of one whole CPU (pinned) and a client of half
// of one, which fit the 1.5 CPUs the local cluster's node leaves
// allocatable.
func clusterEnv(t *testing.T, c kubeCluster, overrides map[string]string) []string {
	t.Helper()
	vars := map[string]string{
		"GRPC_SERVER_DOCKER_HOST": c.address(), "GRPC_CLIENT_DOCKER_HOST": c.address(),
		"GRPC_SERVER_CPUS": "1", "GRPC_CLIENT_CPUS": "0.5",
		"GRPC_BENCHMARK_DURATION": "3s", "GRPC_BENCHMARK_WARMUP": "1s",
	}
	for k, v := range overrides {
		vars[k] = v
	}
	return benchEnv(t, vars)
}

// ownPods are the pods of this test's image name.
func (c kubeCluster) ownPods(t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := c.api.CoreV1().Pods(clusterNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "io.grpcbench.images=" + testImageName})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// assertNothingLeft checks that a run left no pod, secret or lock.
func (c kubeCluster) assertNothingLeft(t *testing.T) {
	t.Helper()
	if pods := c.ownPods(t); len(pods) > 0 {
		t.Errorf("pods left behind by the run: %v", podNames(pods))
	}
	secrets, err := c.api.CoreV1().Secrets(clusterNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "io.grpcbench.images=" + testImageName})
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) > 0 {
		t.Errorf("%d secrets left behind by the run", len(secrets.Items))
	}
	leases, err := c.api.CoordinationV1().Leases(clusterNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if l.Annotations["io.grpcbench.lock"] == testImageName {
			t.Errorf("the run's lock %s is still there", l.Name)
		}
	}
}

func podNames(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}

// exec runs a command in a container of a pod and returns its stdout and
// stderr, and the error of a command that failed.
func (c kubeCluster) exec(pod, container string, cmd ...string) (string, string, error) {
	u := c.api.CoreV1().RESTClient().Post().Resource("pods").Namespace(clusterNamespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	ex, err := remotecommand.NewWebSocketExecutor(c.cfg, http.MethodGet, u.String())
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

func TestCluster(t *testing.T) {
	c := localCluster(t)
	t.Run("ThreeServers", func(t *testing.T) { clusterThreeServers(t, c) })
	t.Run("PodWhileRunning", func(t *testing.T) { clusterPodWhileRunning(t, c) })
	t.Run("OutOfMemory", func(t *testing.T) { clusterOutOfMemory(t, c) })
}

// clusterThreeServers runs go_grpc, node_grpcjs_st and python_grpc on the
// cluster (three languages whose images build in seconds; a Rust server's
// first build would add some 10 minutes to CI on a fresh machine): each is
// ranked, the record names the backend and the cluster, the pod a killed
// run left is removed first, and nothing is left after.
func clusterThreeServers(t *testing.T, c kubeCluster) {
	leftover := c.leavePod(t)
	env := clusterEnv(t, c, map[string]string{"GRPC_BENCHMARKS": "go_grpc,node_grpcjs_st,python_grpc"})
	res := runBinary(t, repoRoot(t), env, "bench")
	if res.code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	bench, run := readRun(t, runFolder(t, env))
	rows := parseRows(t, bench)
	for _, name := range []string{"go_grpc", "node_grpcjs_st", "python_grpc"} {
		if r, ok := rows[name]; !ok || r.rps <= 0 || r.cpuPercent <= 0 || r.memoryMiB <= 0 {
			t.Errorf("%s: row %+v, want req/s, CPU and memory:\n%s", name, r, bench)
		}
	}
	hw := run.Hardware
	if hw.Backend != "kubernetes" || hw.Cluster == nil || hw.Cluster.Context != clusterContext || !strings.HasPrefix(hw.Cluster.Version, "v1.36.") ||
		!strings.HasPrefix(hw.Cluster.Kubelet, "v1.36.") || !strings.HasPrefix(hw.Cluster.Runtime, "containerd://") || hw.Cluster.CPUManager != "static" ||
		hw.Cluster.Node == "" || hw.CPUs <= 0 {
		t.Errorf("hardware = %+v, cluster %+v; want the cluster's versions, node and static CPU manager", hw, hw.Cluster)
	}
	if !strings.Contains(res.stdout, "removed 1 containers left behind by an earlier run") {
		t.Errorf("the run did not say it removed the leftover pod:\n%s", res.stdout)
	}
	if _, err := c.api.CoreV1().Pods(clusterNamespace).Get(context.Background(), leftover, metav1.GetOptions{}); err == nil {
		t.Errorf("the pod %s left by a killed run is still there", leftover)
	}
	c.assertNothingLeft(t)
}

// leavePod starts a pod labelled as a killed run of this image name left
// it, and returns its name.
func (c kubeCluster) leavePod(t *testing.T) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "grpcbench-leftover-", Labels: map[string]string{"io.grpcbench.images": testImageName, "io.grpcbench.run": "killed"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "localhost/grpcbench/pause:3.10.2", ImagePullPolicy: corev1.PullNever}},
			AutomountServiceAccountToken: new(false), TerminationGracePeriodSeconds: new(int64(1))},
	}
	if _, err := c.api.CoreV1().Namespaces().Get(context.Background(), clusterNamespace, metav1.GetOptions{}); err != nil {
		if _, err := c.api.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	created, err := c.api.CoreV1().Pods(clusterNamespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created.Name
}

// clusterPodWhileRunning reads the server's pod back while it is loaded:
// Guaranteed, its limits and the client's, the server alone on a core
// (its cgroup's cpuset) and the client off it, contained (no root, a
// read-only root, no capabilities, no privilege escalation, the default
// seccomp profile, no token, /tmp a small tmpfs), and loopback only: the
// node's address is out of reach. A second run of the image name meanwhile
// is refused by the Lease. results.json records the cgroups' cpusets.
func clusterPodWhileRunning(t *testing.T, c kubeCluster) {
	env := clusterEnv(t, c, map[string]string{"GRPC_BENCHMARK_DURATION": "20s"})
	var out strings.Builder
	_, done := benchInBackground(t, repoRoot(t), env, &out)
	pod := c.awaitLoad(t, done)

	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("QoS class %s, want Guaranteed", pod.Status.QOSClass)
	}
	limits := map[string]string{}
	for _, ct := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		r := ct.Resources
		limits[ct.Name] = r.Limits.Cpu().String() + "/" + r.Limits.Memory().String()
		if !r.Limits.Cpu().Equal(*r.Requests.Cpu()) || !r.Limits.Memory().Equal(*r.Requests.Memory()) {
			t.Errorf("container %s: requests %v differ from limits %v", ct.Name, r.Requests, r.Limits)
		}
		sc := ct.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s: security context %+v, want a read-only root, no capabilities, no escalation, RuntimeDefault seccomp", ct.Name, sc)
			continue
		}
		if ct.Name == "isolate" {
			if !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN"}) {
				t.Errorf("the isolate init container adds %v, want NET_ADMIN alone", sc.Capabilities.Add)
			}
			continue
		}
		if len(sc.Capabilities.Add) > 0 || sc.RunAsUser == nil || *sc.RunAsUser != 65534 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("container %s: security context %+v, want uid 65534, non-root, no capability added", ct.Name, sc)
		}
	}
	if want := map[string]string{"isolate": "100m/32Mi", "server": "1/512Mi", "client": "500m/1Gi"}; !maps.Equal(limits, want) {
		t.Errorf("limits (cpu/memory) %v, want %v", limits, want)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Error("the pod mounts a service-account token")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil || v.HostPath != nil || v.EmptyDir != nil && (v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit == nil) {
			t.Errorf("volume %s: %+v, want memory-backed emptyDirs with a size limit only", v.Name, v.VolumeSource)
		}
	}

	server, client := c.cpuset(t, pod, "server"), c.cpuset(t, pod, "client")
	t.Logf("cpusets: server %s, client %s", server, client)
	if strings.ContainsAny(server, ",-") || server == "" || strings.Contains(","+client+",", ","+server+",") {
		t.Errorf("server's cpuset %q, client's %q: want the server alone on one core, the client off it", server, client)
	}
	if state, _, err := c.exec(pod.Name, "client", "cat", "/sys/class/net/eth0/operstate"); err != nil || strings.TrimSpace(state) != "down" {
		t.Errorf("the pod's eth0 is %q (%v), want down: loopback only", state, err)
	}
	for _, f := range []string{"/var/run/secrets/kubernetes.io/serviceaccount/token", "/run/secrets/kubernetes.io/serviceaccount/token"} {
		if _, _, err := c.exec(pod.Name, "client", "cat", f); err == nil {
			t.Errorf("the client container can read %s", f)
		}
	}
	nodeIP := ""
	if node, err := c.api.CoreV1().Nodes().Get(context.Background(), pod.Spec.NodeName, metav1.GetOptions{}); err == nil {
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				nodeIP = a.Address
			}
		}
	}
	if nodeIP == "" {
		t.Error("the node has no internal IP")
	} else if stdout, stderr, err := c.exec(pod.Name, "client", "grpcbench", "rtt", "--target", nodeIP+":10250", "--count", "1"); err == nil {
		t.Errorf("the pod reached the kubelet at %s:10250: %s", nodeIP, stdout)
	} else {
		t.Logf("the node out of reach: %s", strings.TrimSpace(stderr))
	}

	second := runBinary(t, repoRoot(t), clusterEnv(t, c, nil), "bench")
	if second.code == 0 || !strings.Contains(second.stderr, "another grpcbench run uses GRPC_IMAGE_NAME="+testImageName+" on this cluster") ||
		!strings.Contains(second.stderr, "kubectl -n grpcbench delete lease") {
		t.Errorf("a second run during the first: exit %d, stderr:\n%s\nwant refused by the lock, naming its Lease", second.code, second.stderr)
	}

	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	bench, run := readRun(t, runFolder(t, env))
	if r, ok := parseRows(t, bench)["go_grpc"]; !ok || r.rps <= 0 {
		t.Errorf("go_grpc is not ranked:\n%s", bench)
	}
	// The record says where the CPU manager put them, not the placement.
	for _, cell := range run.Cells {
		for _, s := range cell.Servers {
			for _, r := range s.Rounds {
				if r.ServerCPUSet != server || r.ClientCPUSet != client {
					t.Errorf("%s round %d recorded cores %q (server) and %q (client), want %q and %q, their cgroups'; placement %+v",
						s.Name, r.Round, r.ServerCPUSet, r.ClientCPUSet, server, client, cell.Placement)
				}
			}
		}
	}
	c.assertNothingLeft(t)
}

// awaitLoad waits until a server's pod of this test runs under load (the
// load client's exec started: its role's samples file) and returns it.
func (c kubeCluster) awaitLoad(t *testing.T, done <-chan error) *corev1.Pod {
	t.Helper()
	deadline := time.After(10 * time.Minute)
	for {
		for _, p := range c.ownPods(t) {
			running := 0
			for _, st := range p.Status.ContainerStatuses {
				if st.State.Running != nil {
					running++
				}
			}
			if running == 2 && p.Labels["io.grpcbench.role"] == "server" {
				time.Sleep(3 * time.Second) // past readiness and the gate, into the load
				return &p
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended (%v) before its server's pod ran", err)
		case <-deadline:
			t.Fatal("no server's pod running after 10 minutes")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// cpuset is the cores a container of a pod may run on, from its cgroup
// on this machine, the node.
func (c kubeCluster) cpuset(t *testing.T, pod *corev1.Pod, name string) string {
	t.Helper()
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name != name {
			continue
		}
		_, id, _ := strings.Cut(st.ContainerID, "://")
		for _, pattern := range []string{
			fmt.Sprintf("/sys/fs/cgroup/cpuset/kubepods/pod%s/%s/cpuset.cpus", pod.UID, id),
			fmt.Sprintf("/sys/fs/cgroup/kubepods/pod%s/%s/cpuset.cpus.effective", pod.UID, id),
		} {
			if b, err := os.ReadFile(pattern); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
		t.Fatalf("no cgroup of container %s of pod %s", name, pod.Name)
	}
	t.Fatalf("pod %s has no container %s", pod.Name, name)
	return ""
}

// clusterOutOfMemory runs a server whose first process outgrows
// GRPC_SERVER_RAM (testdata/servers/eats_memory): the kernel kills it, and
// the run names the kill, not a vague exit.
func clusterOutOfMemory(t *testing.T, c kubeCluster) {
	root := testServerRepo(t, "eats_memory")
	env := clusterEnv(t, c, map[string]string{"GRPC_BENCHMARKS": "eats_memory", "GRPC_SERVER_RAM": "256m"})
	res := runBinary(t, root, env, "bench")
	if res.code != 3 {
		t.Errorf("exit code %d, want 3 (a server not ranked)\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	bench, run := readRun(t, runFolder(t, env))
	if !strings.Contains(bench, "eats_memory: not ranked, round 1, readiness failed: server was killed for going over GRPC_SERVER_RAM=256m") {
		t.Errorf("bench.txt does not name the OOM kill:\n%s", bench)
	}
	for _, s := range servers(t, run) {
		for _, r := range s.Rounds {
			if r.OOMKills < 1 {
				t.Errorf("round %d of %s records %d OOM kills, want the kill", r.Round, s.Name, r.OOMKills)
			}
		}
	}
	c.assertNothingLeft(t)
}
