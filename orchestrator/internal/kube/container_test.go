package kube

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// kubelet plays the node's kubelet for the fake cluster until the test
// ends: once a pod is created, it sets the status set says, after the
// pod's containers' cgroups were written.
func (th testHost) kubelet(t *testing.T, set func(*corev1.Pod)) {
	t.Helper()
	ctx := t.Context()
	done := make(chan struct{})
	t.Cleanup(func() { <-done }) // before the cgroups' folder is removed
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list, _ := th.api.CoreV1().Pods(DefaultNamespace).List(context.Background(), metav1.ListOptions{})
			for i := range list.Items {
				p := &list.Items[i]
				if p.Status.Phase != "" {
					continue
				}
				th.fakeCgroup(t, string(p.UID), "id-server-"+p.Name, 1e9, 100<<20, 0)
				th.fakeCgroup(t, string(p.UID), "id-client-"+p.Name, 2e9, 50<<20, 0)
				p.Status.Phase = corev1.PodPending
				set(p)
				th.api.CoreV1().Pods(DefaultNamespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

// running sets every container of a pod running.
func running(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, ContainerID: "containerd://id-" + c.Name + "-" + p.Name,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
}

func (th testHost) haveImages(refs ...string) {
	th.builder.Have(refs...)
	for _, ref := range refs {
		name, _ := fullName(ref)
		id, _ := th.builder.ImageID(context.Background(), ref)
		th.importer.next[name] = id
	}
}

// startedServer is a fake cluster with a server's pod started on it, of
// serverSpec, whose companion's image has grpcbench as its entrypoint.
func startedServer(t *testing.T) (testHost, backend.Container) {
	t.Helper()
	th := newTestHost(t)
	th.haveImages("bench:go_grpc", "bench:client")
	th.builder.configs["bench:client"] = backend.ImageConfig{Entrypoint: []string{"grpcbench"}}
	th.kubelet(t, running)
	c, err := th.Start(context.Background(), serverSpec())
	if err != nil {
		t.Fatal(err)
	}
	return th, c
}

// TestServerPodStartsWithItsImagesImported: the server's and the
// companion's images are imported when the node lacks them (once), the
// Secret of the files made, the pod's start awaited; Remove deletes both.
func TestServerPodStartsWithItsImagesImported(t *testing.T) {
	th, c := startedServer(t)
	ctx := context.Background()
	if th.importer.loads != 2 {
		t.Errorf("%d imports, want the server's and the companion's images", th.importer.loads)
	}
	secrets, _ := th.api.CoreV1().Secrets(DefaultNamespace).List(ctx, metav1.ListOptions{})
	if len(secrets.Items) != 1 || string(secrets.Items[0].Data["server.crt"]) != "cert" {
		t.Errorf("secrets %+v, want the server's file", secrets.Items)
	}
	if st, err := c.State(ctx); err != nil || !st.Running {
		t.Errorf("State = %+v, %v; want running", st, err)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	pods, _ := th.api.CoreV1().Pods(DefaultNamespace).List(ctx, metav1.ListOptions{})
	secrets, _ = th.api.CoreV1().Secrets(DefaultNamespace).List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 0 || len(secrets.Items) != 0 {
		t.Errorf("after Remove: %d pods, %d secrets", len(pods.Items), len(secrets.Items))
	}
	if _, err := th.Start(ctx, serverSpec()); err != nil {
		t.Fatal(err)
	}
	if th.importer.loads != 2 {
		t.Errorf("%d imports after a second pod of the same images, want 2", th.importer.loads)
	}
}

// TestPodThatCannotStart: a pod the scheduler cannot place, or whose
// image the node lacks, fails its start at once, saying so, and is
// removed.
func TestPodThatCannotStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status func(*corev1.Pod)
		want   string
	}{
		{"unschedulable", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/1 nodes are available: 1 Insufficient cpu."}}
		}, "the pod cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."},
		{"no image", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "server", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ErrImageNeverPull", Message: `Container image "bench:go_grpc" is not present with pull policy of Never`}}}}
		}, "container server of the pod cannot start: ErrImageNeverPull"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := newTestHost(t)
			th.haveImages("bench:go_grpc", "bench:client")
			th.kubelet(t, tc.status)
			_, err := th.Start(context.Background(), serverSpec())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start = %v, want %q", err, tc.want)
			}
			if pods, _ := th.api.CoreV1().Pods(DefaultNamespace).List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
				t.Errorf("%d pods left", len(pods.Items))
			}
		})
	}
}

// TestServerKilledForItsMemory: the kubelet's OOMKilled ends Wait and is
// State's, and counts as the kill WatchOOM saw when the cgroup went with
// the process.
func TestServerKilledForItsMemory(t *testing.T) {
	th, c := startedServer(t)
	ctx := context.Background()
	stop := c.WatchOOM(ctx)
	p, _ := th.api.CoreV1().Pods(DefaultNamespace).Get(ctx, c.ID(), metav1.GetOptions{})
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
	th.api.CoreV1().Pods(DefaultNamespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	code, err := c.Wait(ctx)
	if err != nil || code != 137 {
		t.Errorf("Wait = %d, %v; want 137", code, err)
	}
	if st, _ := c.State(ctx); st.Running || !st.OOMKilled || st.ExitCode != 137 {
		t.Errorf("State = %+v, want killed for its memory", st)
	}
	if n := stop(); n != 1 {
		t.Errorf("OOM kills %d, want 1", n)
	}
}

// TestClientsAreExecsInTheCompanion: a client started beside a server
// is an exec in the pod's companion, its files written first, its
// process's pid kept for Remove; its output, exit code and an OOM kill
// (SIGKILL while the companion's cgroup counted one) are its own; a client
// that does not fit the companion is refused.
func TestClientsAreExecsInTheCompanion(t *testing.T) {
	th, server := startedServer(t)
	ctx := context.Background()
	p := th.pods[server.ID()]
	th.execer.run = func(cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
		if slices.Contains(cmd, "probe") {
			io.WriteString(stdout, "ready\n")
			io.WriteString(stderr, "waited 1s\n")
			th.fakeCgroup(t, p.uid, "id-client-"+p.name, 3e9, 60<<20, 1) // killed
			return utilexec.CodeExitError{Err: errors.New("command terminated with exit code 137"), Code: 137}
		}
		return nil
	}
	probe := backend.ContainerSpec{Image: "bench:client", Cmd: []string{"probe", "--target", "127.0.0.1:50051"}, NetworkOf: server.ID(), Memory: 256 << 20,
		Files: map[string][]byte{"/input/scenario/payload.json": []byte("{}")}, InputDir: "/input", Env: []string{"A=1"}}
	c, err := th.Start(ctx, probe)
	if err != nil {
		t.Fatal(err)
	}
	code, err := c.Wait(ctx)
	if err != nil || code != 137 {
		t.Errorf("Wait = %d, %v", code, err)
	}
	var out, errOut bytes.Buffer
	if err := c.Logs(ctx, true, &out, &errOut); err != nil || out.String() != "ready\n" || errOut.String() != "waited 1s\n" {
		t.Errorf("Logs = %q, %q, %v", out.String(), errOut.String(), err)
	}
	if st, _ := c.State(ctx); !st.OOMKilled || st.ExitCode != 137 {
		t.Errorf("State = %+v, want killed for its memory", st)
	}
	cmds := th.execer.commands()
	if len(cmds) != 2 || !slices.Equal(cmds[0][:3], []string{"sh", "-c", `find "$0" -mindepth 1 -delete && tar -x -o -C "$0"`}) || cmds[0][3] != "/input" {
		t.Fatalf("execs %q, want the files written, then the client", cmds)
	}
	want := []string{"sh", "-c", `echo $$ >"$0" && exec "$@"`, execDir + "/1.pid", "env", "A=1", "grpcbench", "probe", "--target", "127.0.0.1:50051"}
	if !slices.Equal(cmds[1], want) {
		t.Errorf("the client's exec %q, want %q", cmds[1], want)
	}

	for _, bad := range []struct {
		spec backend.ContainerSpec
		want string
	}{
		{backend.ContainerSpec{Image: "bench:h2load", NetworkOf: server.ID(), Memory: 1 << 30}, "image of its own"},
		{backend.ContainerSpec{Image: "bench:client", NetworkOf: server.ID(), NanoCPUs: 1e9, Memory: 1 << 30}, "CPU limit, 0.5 CPUs, was set with the server; this one asks for 1 CPUs"},
		{backend.ContainerSpec{Image: "bench:client", NetworkOf: server.ID(), Memory: 2 << 30}, "memory limit"},
		{backend.ContainerSpec{Image: "bench:client", NetworkOf: "elsewhere"}, "was not started with a container for its clients"},
	} {
		if _, err := th.Start(ctx, bad.spec); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Start(%+v) = %v, want %q", bad.spec, err, bad.want)
		}
	}
}

// TestRemoveKillsARunningClient: a client that runs when removed is
// killed by its pid, not left in the companion.
func TestRemoveKillsARunningClient(t *testing.T) {
	th, server := startedServer(t)
	ctx := context.Background()
	killed := make(chan struct{})
	th.execer.run = func(cmd []string, _ io.Reader, _, _ io.Writer) error {
		switch {
		case slices.Contains(cmd, "loadgen"):
			<-killed
			return utilexec.CodeExitError{Code: 137}
		case slices.Contains(cmd, `kill -KILL "$(cat "$0")"`):
			if cmd[3] != execDir+"/1.pid" {
				t.Errorf("kill reads %s, want the client's pid file", cmd[3])
			}
			close(killed)
		}
		return nil
	}
	c, err := th.Start(ctx, backend.ContainerSpec{Image: "bench:client", Cmd: []string{"loadgen"}, NetworkOf: server.ID(), Memory: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := c.State(ctx); !st.Running {
		t.Errorf("State = %+v, want running", st)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.State(ctx); st.Running || st.ExitCode != 137 {
		t.Errorf("State after Remove = %+v, want killed", st)
	}
}

// TestReapDeletesTheLabelledPods: Reap deletes the pods and secrets of
// the label's value (made safe as the labels were) and no other.
func TestReapDeletesTheLabelledPods(t *testing.T) {
	th := newTestHost(t)
	ctx := context.Background()
	mine := map[string]string{backend.ImagesLabel: "registry.local/team/bench"}
	other := map[string]string{backend.ImagesLabel: "other"}
	for _, labels := range []map[string]string{mine, mine, other} {
		th.api.CoreV1().Pods(DefaultNamespace).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "p-", Labels: labelsOf(labels)}}, metav1.CreateOptions{})
		th.api.CoreV1().Secrets(DefaultNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "s-", Labels: labelsOf(labels)}}, metav1.CreateOptions{})
	}
	n, err := th.Reap(ctx, backend.ImagesLabel, "registry.local/team/bench")
	if err != nil || n != 2 {
		t.Errorf("Reap = %d, %v; want 2", n, err)
	}
	pods, _ := th.api.CoreV1().Pods(DefaultNamespace).List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 1 || pods.Items[0].Labels[backend.ImagesLabel] != "other" {
		t.Errorf("pods left: %+v, want the other image name's", pods.Items)
	}
}

// TestCPUSetsAreReadFromTheCgroups: the cores the server and a client in
// the companion run on are their cgroups' cpusets, where the kubelet's
// CPU manager put them, whatever the spec asked for.
func TestCPUSetsAreReadFromTheCgroups(t *testing.T) {
	spec := serverSpec()
	spec.CPUSet, spec.Companion.CPUSet = "0", "1"
	th := newTestHost(t)
	th.haveImages("bench:go_grpc", "bench:client")
	th.kubelet(t, running)
	server, err := th.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := th.pods[server.ID()]
	dir := filepath.Join(th.cgroups, "cpuset", "kubepods", "pod"+p.uid)
	writeFile(t, filepath.Join(dir, "id-server-"+p.name, "cpuset.cpus"), "1\n")
	writeFile(t, filepath.Join(dir, "id-client-"+p.name, "cpuset.cpus"), "0\n")
	th.execer.run = func([]string, io.Reader, io.Writer, io.Writer) error { return nil }
	client, err := th.Start(ctx, backend.ContainerSpec{Image: "bench:client", Cmd: []string{"loadgen"}, NetworkOf: server.ID(), Memory: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	type pinned interface {
		CPUSet(context.Context) (string, error)
	}
	for _, c := range []struct {
		name      string
		container backend.Container
		want      string
	}{{"server", server, "1"}, {"client", client, "0"}} {
		pc, ok := c.container.(pinned)
		if !ok {
			t.Fatalf("the %s's container has no CPUSet", c.name)
		}
		if cpus, err := pc.CPUSet(ctx); cpus != c.want || err != nil {
			t.Errorf("%s's CPUSet = %q, %v; want %q, its cgroup's", c.name, cpus, err, c.want)
		}
	}
}
