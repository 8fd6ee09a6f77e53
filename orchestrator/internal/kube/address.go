package kube

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// Scheme is the address scheme of Kubernetes hosts: k8s://<context>.
const Scheme = "k8s"

// Defaults of an address's options.
const (
	// DefaultNamespace holds every object the backend makes.
	DefaultNamespace = "grpcbench"
	// DefaultContainerd is the socket of the containerd that
	// scripts/local-cluster starts for its node.
	DefaultContainerd = "/var/lib/grpcbench-cluster/containerd/containerd.sock"
	// DefaultBuilder is the Docker engine that builds the images.
	DefaultBuilder = "unix:///var/run/docker.sock"
)

// options are what an address says: k8s://<context>?namespace=…&….
type options struct {
	// Context is the kubeconfig's context; "" is its current one.
	Context string
	// Kubeconfig is the kubeconfig file; "" is KUBECONFIG's files, else
	// ~/.kube/config, as kubectl reads them.
	Kubeconfig string
	Namespace  string
	// Node is the node the pods run on; "" is the node that is this
	// machine.
	Node string
	// Containerd is the node's containerd socket, into which the images
	// are imported; Builder the Docker engine that builds them.
	Containerd, Builder string
}

// optionKeys are the options an address may set.
var optionKeys = []string{"builder", "containerd", "kubeconfig", "namespace", "node"}

// parse reads an address k8s://[context][?key=value&…].
func parse(address string) (options, error) {
	rest, ok := strings.CutPrefix(address, Scheme+"://")
	if !ok {
		return options{}, fmt.Errorf("not %s://[context][?option=value&…]", Scheme)
	}
	name, query, _ := strings.Cut(rest, "?")
	context, err := url.PathUnescape(name)
	if err != nil {
		return options{}, fmt.Errorf("the context %q: %w", name, err)
	}
	values, err := url.ParseQuery(query)
	if err != nil {
		return options{}, fmt.Errorf("the options %q: %w", query, err)
	}
	for key, v := range values {
		if !slices.Contains(optionKeys, key) {
			return options{}, fmt.Errorf("no option %q (known: %s)", key, strings.Join(optionKeys, ", "))
		}
		if len(v) > 1 {
			return options{}, fmt.Errorf("option %s given %d times", key, len(v))
		}
	}
	o := options{Context: context, Kubeconfig: values.Get("kubeconfig"), Namespace: values.Get("namespace"), Node: values.Get("node"),
		Containerd: values.Get("containerd"), Builder: values.Get("builder")}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Containerd == "" {
		o.Containerd = DefaultContainerd
	}
	if o.Builder == "" {
		o.Builder = DefaultBuilder
	}
	if bad := validation.IsDNS1123Label(o.Namespace); len(bad) > 0 {
		return options{}, fmt.Errorf("namespace %q: %s", o.Namespace, strings.Join(bad, "; "))
	}
	if strings.HasPrefix(o.Builder, Scheme+"://") {
		return options{}, fmt.Errorf("builder %s: the images are built by a Docker engine", o.Builder)
	}
	if err := backend.Check(o.Builder); err != nil {
		return options{}, fmt.Errorf("builder %s: %w", o.Builder, err)
	}
	return o, nil
}

// loadingRules are where the kubeconfig is read from: the file the address
// names, else KUBECONFIG's, else ~/.kube/config.
func (o options) loadingRules() *clientcmd.ClientConfigLoadingRules {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	return rules
}

// resolve fills in the current context of the kubeconfig when the address
// names none, and checks that the kubeconfig has the context.
func (o options) resolve() (options, error) {
	cfg, err := o.loadingRules().Load()
	if err != nil {
		return o, fmt.Errorf("read the kubeconfig: %w", err)
	}
	if o.Context == "" {
		o.Context = cfg.CurrentContext
	}
	if o.Context == "" {
		return o, fmt.Errorf("the kubeconfig (%s) has no current context: name one, k8s://<context>", where(o))
	}
	if _, ok := cfg.Contexts[o.Context]; !ok {
		return o, fmt.Errorf("the kubeconfig (%s) has no context %q (it has: %s)", where(o), o.Context, strings.Join(slices.Sorted(maps.Keys(cfg.Contexts)), ", "))
	}
	return o, nil
}

// where names the kubeconfig files read, for messages.
func where(o options) string {
	if o.Kubeconfig != "" {
		return o.Kubeconfig
	}
	return strings.Join(o.loadingRules().GetLoadingPrecedence(), ", ")
}

// check says why an address names no Kubernetes host, "" when it does: it
// parses, and the kubeconfig has its context.
func check(address string) string {
	o, err := parse(address)
	if err == nil {
		_, err = o.resolve()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// canonical writes an address by what names its host (the context, the
// current one filled in, the namespace and the node); the kubeconfig
// file, containerd socket and builder say how it is reached.
func canonical(address string) string {
	o, err := parse(address)
	if err != nil {
		return address
	}
	if r, err := o.resolve(); err == nil {
		o = r
	}
	q := url.Values{"namespace": {o.Namespace}}
	if o.Node != "" {
		q.Set("node", o.Node)
	}
	return Scheme + "://" + url.PathEscape(o.Context) + "?" + q.Encode()
}
