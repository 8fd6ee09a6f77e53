// Package kube is the backend of hosts that are a Kubernetes cluster whose
// node is this machine (k8s://<context>): a server and its clients run as
// two containers of one pod, each under its own CPU and memory limits
// (Guaranteed QoS, whole CPUs pinned by the kubelet's static CPU manager),
// the clients as execs in the second container; images are built by a
// Docker engine and imported into the node's containerd; the lock of an
// image name is a Lease. See docs/scale-out.md.
package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

func init() {
	backend.Register(Scheme, backend.Backend{Open: func(ctx context.Context, t backend.Target) (backend.Host, error) {
		h, err := Open(ctx, t)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return h, nil
	}, Check: check, Canonical: canonical, Stats: ReadStats})
}

// callTimeout bounds an API call that answers at once when the cluster is
// well; waits, logs followed and execs take as long as they take.
const callTimeout = time.Minute

func quick(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, callTimeout)
}

// Builder is the Docker engine that builds a cluster's images and holds
// them until they are imported.
type Builder interface {
	backend.Host
	ImageConfig(ctx context.Context, ref string) (backend.ImageConfig, error)
}

// Host is a connection to a cluster and the one node of it the run uses.
type Host struct {
	api     kubernetes.Interface
	rest    *rest.Config
	address string
	opts    options
	// node is the node's name, hostname its kubernetes.io/hostname label,
	// which pods select it by; boot its boot id when connected.
	node, hostname, boot string
	builder              Builder
	images               importer
	cgroups              cgroups
	exec                 execer

	mu sync.Mutex
	// imported are the images imported into the node since Connect, by
	// reference: the id of the builder's image each is.
	imported map[string]string
	// pods are the pods this process started and has not removed, by
	// name: the clients started beside a server run in its pod.
	pods map[string]*pod
}

var _ backend.Host = (*Host)(nil)

// UnreachableError says which cluster was tried and how to get one.
type UnreachableError struct {
	Role    string
	Address string
	Err     error
}

// Is makes the error a backend.ErrUnreachable.
func (e *UnreachableError) Is(target error) bool { return target == backend.ErrUnreachable }

func (e *UnreachableError) Error() string {
	what := "the Kubernetes cluster"
	if e.Role != "" {
		what += " of the " + e.Role
	}
	return fmt.Sprintf("cannot reach %s at %s: %v\n"+
		"Start the local one (as root: `scripts/local-cluster up`, see docs/local-cluster.md), "+
		"or name a context of your kubeconfig that answers", what, e.Address, e.Err)
}

// Open connects to the cluster of t.Address's context, finds the node
// that is this machine (or the one the address names, which must be),
// makes the namespace when it is missing, and connects to the Docker
// engine that builds the images.
func Open(ctx context.Context, t backend.Target) (*Host, error) {
	o, err := parse(t.Address)
	if err == nil {
		o, err = o.resolve()
	}
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.Address, err)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(o.loadingRules(), &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.Address, err)
	}
	// A round polls and streams more than client-go's default of 5 calls a
	// second allows.
	cfg.QPS, cfg.Burst = 50, 100
	api, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.Address, err)
	}
	exec := apiExecer{cfg: cfg, api: api}
	if _, err := os.Stat(o.Containerd); err != nil {
		return nil, fmt.Errorf("connect to %s: the images are imported into the node's containerd, whose socket is not here (%w); "+
			"name it with ?containerd=/path/to/containerd.sock (a cluster of other machines needs a registry, which the backend does not support yet: docs/scale-out.md)", t.Address, err)
	}
	engine, err := backend.Connect(ctx, backend.Target{Address: o.Builder, Role: "images of " + t.Address, TLS: t.TLS})
	if err != nil {
		return nil, err
	}
	builder, ok := engine.(Builder)
	if !ok {
		engine.Close()
		return nil, fmt.Errorf("connect to %s: the builder %s cannot read an image's config", t.Address, o.Builder)
	}
	h, err := connect(ctx, api, o, builder, ctrImporter{socket: o.Containerd}, localCgroups, exec)
	if err != nil {
		builder.Close()
		if errors.Is(err, backend.ErrUnreachable) {
			return nil, &UnreachableError{Role: t.Role, Address: t.Address, Err: err}
		}
		return nil, fmt.Errorf("connect to %s: %w", t.Address, err)
	}
	h.address, h.rest = t.Address, cfg
	return h, nil
}

// connect checks that the cluster answers, picks its node and makes the
// namespace.
func connect(ctx context.Context, api kubernetes.Interface, o options, builder Builder, images importer, cg cgroups, exec execer) (*Host, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	if _, err := api.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("%w: %w", backend.ErrUnreachable, err)
	}
	h := &Host{api: api, opts: o, builder: builder, images: images, cgroups: cg, exec: exec, imported: map[string]string{}, pods: map[string]*pod{}}
	node, err := h.pickNode(ctx)
	if err != nil {
		return nil, err
	}
	h.node, h.hostname, h.boot = node.Name, node.Labels[corev1.LabelHostname], node.Status.NodeInfo.BootID
	if h.hostname == "" {
		return nil, fmt.Errorf("node %s has no %s label to place pods by", node.Name, corev1.LabelHostname)
	}
	if err := h.ensureNamespace(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// pickNode is the node the address names, or else the one node that is
// this machine: the backend imports images into its containerd and reads
// its containers' cgroups here.
func (h *Host) pickNode(ctx context.Context) (*corev1.Node, error) {
	boot := h.cgroups.bootID()
	nodes, err := h.api.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the nodes: %w", err)
	}
	var names []string
	for i := range nodes.Items {
		n := &nodes.Items[i]
		names = append(names, n.Name)
		if h.opts.Node == "" && n.Status.NodeInfo.BootID == boot || h.opts.Node != "" && n.Name == h.opts.Node {
			if n.Status.NodeInfo.BootID != boot {
				return nil, fmt.Errorf("node %s is not this machine (its boot id is %s, this machine's %s): "+
					"the backend imports images into the node's containerd and reads its cgroups, which needs the node here; "+
					"a cluster of other machines needs a registry and the kubelet's stats, not supported yet (docs/scale-out.md)", n.Name, n.Status.NodeInfo.BootID, boot)
			}
			return n, nil
		}
	}
	if h.opts.Node != "" {
		return nil, fmt.Errorf("no node %s (the cluster has: %s)", h.opts.Node, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("no node of the cluster is this machine (boot id %s; the nodes: %s): "+
		"the backend imports images into the node's containerd and reads its cgroups, which needs the node here (docs/scale-out.md)", boot, strings.Join(names, ", "))
}

// ensureNamespace makes the backend's namespace when it is missing.
func (h *Host) ensureNamespace(ctx context.Context) error {
	ns := h.opts.Namespace
	if _, err := h.api.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("read namespace %s: %w", ns, err)
	}
	_, err := h.api.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{managedLabel: "true"}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s (or create it yourself, and give this user the Role of docs/scale-out.md in it): %w", ns, err)
	}
	return nil
}

// managedLabel marks what the backend made.
const managedLabel = "app.kubernetes.io/managed-by-grpcbench"

// Address is the cluster's address, as given to Connect.
func (h *Host) Address() string { return h.address }

// Local is true: the node is this machine (Open refuses another).
func (h *Host) Local() bool { return true }

// Close releases the connection to the builder.
func (h *Host) Close() error { return h.builder.Close() }

// Facts describe the node and its cluster: the node's CPUs and memory
// (its capacity: the machine's, not what the kubelet leaves allocatable),
// kernel, OS and runtime, the cluster's and the kubelet's versions, and
// the builder engine's version.
func (h *Host) Facts(ctx context.Context) (backend.Facts, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	node, err := h.api.CoreV1().Nodes().Get(ctx, h.node, metav1.GetOptions{})
	if err != nil {
		return backend.Facts{}, fmt.Errorf("read node %s: %w", h.node, err)
	}
	version, err := h.api.Discovery().ServerVersion()
	if err != nil {
		return backend.Facts{}, fmt.Errorf("the cluster's version: %w", err)
	}
	system, err := h.api.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return backend.Facts{}, fmt.Errorf("read namespace %s: %w", metav1.NamespaceSystem, err)
	}
	built, err := h.builder.Facts(ctx)
	if err != nil {
		return backend.Facts{}, err
	}
	info := node.Status.NodeInfo
	kubelet := h.kubeletConfig(ctx)
	return backend.Facts{
		// The cluster (kube-system's uid is its customary id) and the node.
		ID:      string(system.UID) + "/" + node.Name,
		Backend: "kubernetes",
		CPUs:    int(node.Status.Capacity.Cpu().Value()),
		Memory:  node.Status.Capacity.Memory().Value(),
		Arch:    info.Architecture,
		Kernel:  info.KernelVersion,
		OS:      info.OSImage,
		Version: built.Version,
		Cgroup:  h.cgroups.version(),
		Cluster: &backend.Cluster{
			Context: h.opts.Context, Version: version.GitVersion, Node: node.Name,
			Kubelet: info.KubeletVersion, Runtime: info.ContainerRuntimeVersion,
			AllocatableCPU: node.Status.Allocatable.Cpu().String(), CPUManager: kubelet.CPUManagerPolicy, PodPidsLimit: kubelet.PodPidsLimit,
		},
	}, nil
}

// kubeletSettings are what the record keeps of the node's kubelet's
// configuration.
type kubeletSettings struct {
	CPUManagerPolicy string `json:"cpuManagerPolicy"`
	PodPidsLimit     int64  `json:"podPidsLimit"`
}

// kubeletConfig reads the node's kubelet's configuration through the API
// server (nodes/proxy): the zero settings when it cannot, which the
// record then shows as unknown.
func (h *Host) kubeletConfig(ctx context.Context) kubeletSettings {
	rc := h.api.CoreV1().RESTClient()
	if c, ok := rc.(*rest.RESTClient); !ok || c == nil { // client-go's fake has none
		return kubeletSettings{}
	}
	raw, err := rc.Get().AbsPath("/api/v1/nodes", h.node, "proxy", "configz").DoRaw(ctx)
	var doc struct {
		Config kubeletSettings `json:"kubeletconfig"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &doc)
	}
	if err != nil {
		slog.Debug("the kubelet's configuration", "node", h.node, "err", err)
	}
	return doc.Config
}

// Ping says whether the cluster answers and its node is Ready and has not
// rebooted since Connect (a reboot ends every pod). The API server, the
// kubelet, containerd or the builder restarting ends no pod: that is no
// failure of the host (a builder that is down fails the next pod's start,
// which imports its images, saying so).
func (h *Host) Ping(ctx context.Context) error {
	ctx, cancel := quick(ctx)
	defer cancel()
	node, err := h.api.CoreV1().Nodes().Get(ctx, h.node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read node %s: %w", h.node, err)
	}
	if boot := node.Status.NodeInfo.BootID; boot != h.boot {
		return fmt.Errorf("node %s rebooted since the run connected (boot id %s, it was %s), and every pod with it", h.node, boot, h.boot)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return fmt.Errorf("node %s is not Ready since %s: %s", h.node, c.LastTransitionTime.Format(time.TimeOnly), c.Message)
		}
	}
	return nil
}
