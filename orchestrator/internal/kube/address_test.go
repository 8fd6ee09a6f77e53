package kube

import (
	"path/filepath"
	"strings"
	"testing"
)

const testKubeconfig = `apiVersion: v1
kind: Config
current-context: a
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: x}
contexts:
- name: a
  context: {cluster: c, user: u}
- name: kubernetes-admin@b
  context: {cluster: c, user: u}
`

// TestAddresses: an address names a context of the kubeconfig (its
// current one when none), with options; what is wrong is said; two
// spellings of one host compare equal, another node or namespace not.
func TestAddresses(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "config")
	writeFile(t, kc, testKubeconfig)
	q := "?kubeconfig=" + kc
	for _, tc := range []struct{ address, why string }{
		{"k8s://a" + q, ""},
		{"k8s://" + q, ""},
		{"k8s://kubernetes-admin@b" + q + "&namespace=bench&node=n1", ""},
		{"k8s://z" + q, `has no context "z" (it has: a, kubernetes-admin@b)`},
		{"k8s://a" + q + "&nodes=n1", `no option "nodes" (known: builder, containerd, kubeconfig, namespace, node)`},
		{"k8s://a" + q + "&namespace=Bench", `namespace "Bench"`},
		{"k8s://a" + q + "&builder=k8s://b", "the images are built by a Docker engine"},
		{"k8s://a" + q + "&builder=http://x", "builder http://x: no backend serves http://"},
	} {
		if why := check(tc.address); tc.why == "" && why != "" || tc.why != "" && !strings.Contains(why, tc.why) {
			t.Errorf("check(%s) = %q, want %q", tc.address, why, tc.why)
		}
	}
	same := [][2]string{
		{"k8s://" + q, "k8s://a" + q + "&namespace=grpcbench"},
		{"k8s://a" + q + "&builder=unix:///run/docker.sock", "k8s://a" + q},
	}
	for _, p := range same {
		if canonical(p[0]) != canonical(p[1]) {
			t.Errorf("%s and %s name one host, canonical %s and %s", p[0], p[1], canonical(p[0]), canonical(p[1]))
		}
	}
	differ := [][2]string{
		{"k8s://a" + q + "&node=n1", "k8s://a" + q + "&node=n2"},
		{"k8s://a" + q, "k8s://a" + q + "&namespace=other"},
		{"k8s://a" + q, "k8s://kubernetes-admin@b" + q},
	}
	for _, p := range differ {
		if canonical(p[0]) == canonical(p[1]) {
			t.Errorf("%s and %s name two hosts, canonical %s for both", p[0], p[1], canonical(p[0]))
		}
	}
}
