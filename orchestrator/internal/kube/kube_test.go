package kube

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	backendfake "github.com/grpcbench/grpcbench/orchestrator/internal/backend/fake"

	// The builder's scheme, as main links it in.
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/docker"
)

// The unit tests run the backend against client-go's fake clientset, a
// fake builder, importer and execer, and cgroup files in a folder: they
// check its sequencing only; the e2e test (TestCluster) is the proof.

const testBoot = "boot-1"

// testBuilder is a fake Docker engine that also reads image configs.
type testBuilder struct {
	*backendfake.Host
	configs map[string]backend.ImageConfig
}

func (b testBuilder) ImageConfig(_ context.Context, ref string) (backend.ImageConfig, error) {
	return b.configs[ref], nil
}

// testImporter is a node's image store in memory: image name → id.
type testImporter struct {
	mu     sync.Mutex
	images map[string]string
	loads  int
	// next is the id a load of each image name imports.
	next map[string]string
}

func (i *testImporter) has(_ context.Context, name, id string) (bool, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.images[name] == id, nil
}

// load takes what the fake builder's Save wrote: the image's reference.
func (i *testImporter) load(_ context.Context, r io.Reader) error {
	ref, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	name, err := fullName(string(ref))
	if err != nil {
		return err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.loads++
	i.images[name] = i.next[name]
	return nil
}

// testExecer records the execs and answers them with run.
type testExecer struct {
	mu   sync.Mutex
	cmds [][]string
	run  func(cmd []string, stdin io.Reader, stdout, stderr io.Writer) error
}

func (e *testExecer) exec(_ context.Context, _, _, _ string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e.mu.Lock()
	e.cmds = append(e.cmds, cmd)
	run := e.run
	e.mu.Unlock()
	if stdin != nil {
		io.Copy(io.Discard, stdin)
	}
	if run == nil {
		return nil
	}
	return run(cmd, stdin, stdout, stderr)
}

func (e *testExecer) commands() [][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]string(nil), e.cmds...)
}

// testHost is a Host on a fake cluster of one node, this machine.
type testHost struct {
	*Host
	api      *fake.Clientset
	builder  testBuilder
	importer *testImporter
	execer   *testExecer
	cgroups  string
}

func newTestHost(t *testing.T, objects ...runtime.Object) testHost {
	t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{corev1.LabelHostname: "node-1"}},
		Status: corev1.NodeStatus{
			NodeInfo:    corev1.NodeSystemInfo{BootID: testBoot, KubeletVersion: "v1.36.3", ContainerRuntimeVersion: "containerd://1.6.20", Architecture: "amd64", KernelVersion: "6.1", OSImage: "Debian"},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	system := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem, UID: "cluster-uid"}}
	api := fake.NewClientset(append([]runtime.Object{node, system}, objects...)...)
	// The fake keeps no generated names or uids: make them as the API
	// server does.
	var n atomic.Int64
	api.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject()
		m, err := metaOf(obj)
		if err == nil && m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(fmt.Sprintf("%s%d", m.GetGenerateName(), n.Add(1)))
			m.SetUID(types.UID(fmt.Sprintf("uid-%d", n.Load())))
		}
		return false, nil, nil
	})
	root := t.TempDir()
	boot := filepath.Join(root, "boot_id")
	writeFile(t, boot, testBoot+"\n")
	cg := cgroups{Root: filepath.Join(root, "cgroup"), Boot: boot}
	b := testBuilder{Host: backendfake.New("unix:///builder.sock", backend.Facts{Version: "28.5.2"}), configs: map[string]backend.ImageConfig{}}
	imp := &testImporter{images: map[string]string{}, next: map[string]string{}}
	ex := &testExecer{}
	o, err := parse("k8s://test")
	if err != nil {
		t.Fatal(err)
	}
	o.Context = "test"
	h, err := connect(context.Background(), api, o, b, imp, cg, ex)
	if err != nil {
		t.Fatal(err)
	}
	h.address = "k8s://test"
	return testHost{Host: h, api: api, builder: b, importer: imp, execer: ex, cgroups: cg.Root}
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object meta", obj)
	}
	return m, nil
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeCgroup writes the v1 cgroup files of a container of a pod.
func (th testHost) fakeCgroup(t *testing.T, uid, id string, cpuNanos, memory, oomKills uint64) {
	t.Helper()
	for _, f := range []struct{ controller, file, content string }{
		{"cpuacct", "cpuacct.usage", fmt.Sprint(cpuNanos)},
		{"cpu", "cpu.stat", "nr_periods 10\nnr_throttled 2\nthrottled_time 5000\n"},
		{"memory", "memory.usage_in_bytes", fmt.Sprint(memory)},
		{"memory", "memory.stat", "cache 0\ntotal_inactive_file 1000\n"},
		{"memory", "memory.oom_control", fmt.Sprintf("oom_kill_disable 0\nunder_oom 0\noom_kill %d\n", oomKills)},
		{"cpuset", "cpuset.cpus", "1"},
	} {
		writeFile(t, filepath.Join(th.cgroups, f.controller, "kubepods", "pod"+uid, id, f.file), f.content)
	}
}

// TestConnectPicksTheNodeThatIsThisMachine: of two nodes, the one whose
// boot id is this machine's; a node named that is not this machine is
// refused, saying why; the namespace is made.
func TestConnectPicksTheNodeThatIsThisMachine(t *testing.T) {
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0", Labels: map[string]string{corev1.LabelHostname: "node-0"}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: "elsewhere"}}}
	th := newTestHost(t, other)
	if th.node != "node-1" {
		t.Errorf("picked node %s, want node-1, this machine", th.node)
	}
	if _, err := th.api.CoreV1().Namespaces().Get(context.Background(), DefaultNamespace, metav1.GetOptions{}); err != nil {
		t.Errorf("the namespace was not made: %v", err)
	}
	o := th.opts
	o.Node = "node-0"
	_, err := connect(context.Background(), th.api, o, th.builder, th.importer, th.Host.cgroups, th.execer)
	if err == nil || !strings.Contains(err.Error(), "node node-0 is not this machine") {
		t.Errorf("connect to node-0 = %v, want refused: not this machine", err)
	}
}

// TestFactsAreTheNodesAndTheClusters: CPUs and memory are the node's
// capacity; the versions the cluster's, the kubelet's, the runtime's and
// the builder's.
func TestFactsAreTheNodesAndTheClusters(t *testing.T) {
	th := newTestHost(t)
	f, err := th.Facts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := f.Cluster
	if f.CPUs != 2 || f.Memory != 4<<30 || f.Backend != "kubernetes" || f.Version != "28.5.2" || f.ID != "cluster-uid/node-1" ||
		c == nil || c.Node != "node-1" || c.Kubelet != "v1.36.3" || c.Runtime != "containerd://1.6.20" || c.AllocatableCPU != "1500m" || c.Context != "test" {
		t.Errorf("facts %+v, cluster %+v", f, c)
	}
}

// TestPingSaysARebootAndANodeNotReady: a node that rebooted since the
// connection lost every pod; one not Ready cannot run them.
func TestPingSaysARebootAndANodeNotReady(t *testing.T) {
	th := newTestHost(t)
	if err := th.Ping(context.Background()); err != nil {
		t.Fatalf("Ping = %v", err)
	}
	nodes := th.api.CoreV1().Nodes()
	node, _ := nodes.Get(context.Background(), "node-1", metav1.GetOptions{})
	node.Status.Conditions[0].Status, node.Status.Conditions[0].Message = corev1.ConditionUnknown, "Kubelet stopped posting node status."
	nodes.UpdateStatus(context.Background(), node, metav1.UpdateOptions{})
	if err := th.Ping(context.Background()); err == nil || !strings.Contains(err.Error(), "is not Ready") {
		t.Errorf("Ping of a node not Ready = %v", err)
	}
	node.Status.NodeInfo.BootID = "boot-2"
	nodes.UpdateStatus(context.Background(), node, metav1.UpdateOptions{})
	if err := th.Ping(context.Background()); err == nil || !strings.Contains(err.Error(), "rebooted") {
		t.Errorf("Ping of a rebooted node = %v", err)
	}
}
