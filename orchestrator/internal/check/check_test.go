package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend/fake"
	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/harness"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// gate is how each server of the test meets the conformance gate, by name:
// it passes, passes with a warning, fails the gate, exits before it
// answers, or does not build.
func gate(spec backend.ContainerSpec) fake.Behaviour {
	server := spec.Labels["io.grpcbench.server"]
	switch spec.Labels[backend.RoleLabel] {
	case "server":
		return fake.Behaviour{Runs: server != "exits", Exit: 2, Stdout: "grpcbench-server: workers=1\n"}
	case "conform":
		v := probe.Verdict{Passed: true, Checks: []probe.Check{{Name: "echo", Passed: true}}}
		switch server {
		case "warns":
			v.Warnings = []string{"unknown method: Unimplemented (12), want NotFound (5)"}
		case "wrong":
			v = probe.Verdict{Checks: []probe.Check{{Name: "echo", Detail: "answer is not the echo of the request"}}}
		}
		js, _ := json.Marshal(v)
		return fake.Behaviour{Stdout: string(js)}
	}
	return fake.Behaviour{}
}

// newCheck is a check of servers on a fake host, from a repository of
// their own with the real scenarios.
func newCheck(t *testing.T, h *fake.Host, servers ...string) (*Check, *bytes.Buffer) {
	t.Helper()
	root := t.TempDir()
	for _, dir := range append([]string{"."}, servers...) {
		if dir != "." {
			dir = filepath.Join("servers", dir)
		}
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "Dockerfile"), []byte("FROM debian:bookworm-slim\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse(map[string]string{"GRPC_IMAGE_NAME": "chk"}, []config.Tool{{Name: "ghz"}, {Name: "h2"}})
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.Catalog{Root: root, Servers: servers}
	b := images.Builder{Host: h, Catalog: cat, Name: "chk"}
	kit := &session.Kit{Config: cfg, Catalog: cat, Folder: record.Folder{Dir: t.TempDir()}, Builder: b, ClientBuilder: b,
		Harness: harness.New(harness.Options{Servers: h, ServerCPUs: 4, Images: harness.Images{Client: b.ClientTag()}})}
	var out bytes.Buffer
	return &Check{Kit: kit, Cells: plan.Cells(cfg, 4, 4)[:1], Out: progress.Plain(&out)}, &out
}

func scenarios(t *testing.T, names ...string) []*scenario.Scenario {
	t.Helper()
	var list []*scenario.Scenario
	for _, name := range names {
		sc, err := scenario.Load(context.Background(), filepath.Join("..", "..", "..", "scenarios", name))
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, sc)
	}
	return list
}

// TestVerdictsInOrder: every server meets the gate for every scenario, in
// scenario order, each row saying how it ended; nothing is left running,
// and the table lists the failures and warnings.
func TestVerdictsInOrder(t *testing.T) {
	h := fake.New("fake://check", backend.Facts{CPUs: 4})
	h.Script = gate
	h.BuildErr = func(opts backend.BuildOptions) error {
		if strings.Contains(opts.Tag, "broken") {
			return errors.New("compile error")
		}
		return nil
	}
	c, out := newCheck(t, h, "passes", "warns", "wrong", "exits", "broken")
	rows, err := c.Servers(context.Background(), c.Kit.Catalog.Servers, scenarios(t, "complex_proto", "string_10B"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Scenario+"/"+r.Server+": "+verdictText(r))
	}
	want := []string{}
	for _, sc := range []string{"complex_proto", "string_10B"} {
		want = append(want, sc+"/passes: pass", sc+"/warns: pass (warning)", sc+"/wrong: FAIL (conformance)", sc+"/exits: FAIL (readiness)", sc+"/broken: FAIL (build)")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(out.String(), "warns / string_10B: pass (warning)") {
		t.Errorf("progress does not say each verdict as it comes:\n%s", out)
	}
	if left := h.Left(); len(left) > 0 {
		t.Errorf("%d containers left running", len(left))
	}
	var table bytes.Buffer
	if err := WriteTable(&table, rows); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"! wrong / complex_proto: conformance failed: echo: answer is not the echo of the request",
		"! exits / string_10B: readiness failed: server exited with code 2 (see server.log)",
		"! warns / complex_proto: conformance warning: unknown method: Unimplemented (12), want NotFound (5)",
	} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}
}

// TestInterruptedCheckKeepsItsRows: a check cancelled while a server is at
// the gate returns the rows so far and the cancellation, and checks no
// server after it.
func TestInterruptedCheckKeepsItsRows(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := fake.New("fake://check", backend.Facts{CPUs: 4})
	h.Script = func(spec backend.ContainerSpec) fake.Behaviour {
		if spec.Labels[backend.RoleLabel] == "conform" && spec.Labels["io.grpcbench.server"] == "first" {
			cancel() // ^C while the first server is at the gate
		}
		return gate(spec)
	}
	c, _ := newCheck(t, h, "first", "second")
	rows, err := c.Servers(ctx, c.Kit.Catalog.Servers, scenarios(t, "complex_proto"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Servers = %v, want cancelled", err)
	}
	if len(rows) != 1 || rows[0].Server != "first" {
		t.Errorf("rows = %+v, want the first server's", rows)
	}
	for _, ctr := range h.Containers() {
		if ctr.Spec().Labels["io.grpcbench.server"] == "second" {
			t.Error("the second server was started after the interruption")
		}
	}
	if left := h.Left(); len(left) > 0 {
		t.Errorf("%d containers left running", len(left))
	}
}

// TestEachServerCPUCount: under GRPC_SERVER_CPUS=1,2 every server is
// checked at both counts, its logs in a folder per count and its rows named
// with it; a server that starts one worker whatever its CPUs passes at 1
// and fails at 2, saying why.
func TestEachServerCPUCount(t *testing.T) {
	h := fake.New("fake://check", backend.Facts{CPUs: 4})
	h.Script = gate
	c, _ := newCheck(t, h, "passes")
	cfg, err := config.Parse(map[string]string{"GRPC_IMAGE_NAME": "chk", "GRPC_SERVER_CPUS": "1,2", "GRPC_REQUEST_SCENARIO": "complex_proto,string_10B"},
		[]config.Tool{{Name: "ghz"}, {Name: "h2"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Kit.Config = cfg
	if c.Cells = ByServerCPUs(plan.Cells(cfg, 4, 4)); len(c.Cells) != 2 {
		t.Fatalf("ByServerCPUs kept %d cells, want one per count", len(c.Cells))
	}
	rows, err := c.Servers(context.Background(), c.Kit.Catalog.Servers, scenarios(t, "complex_proto"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || !rows[0].Passed || rows[0].CPUs != 1 || rows[1].Passed || rows[1].CPUs != 2 {
		t.Fatalf("rows = %+v, want a pass at 1 CPU and a failure at 2", rows)
	}
	for _, cpus := range []string{"1", "2"} {
		if _, err := os.Stat(c.Kit.Folder.Path("cpus-"+cpus, "complex_proto", "passes", "server.log")); err != nil {
			t.Errorf("no server log for %s CPUs: %v", cpus, err)
		}
	}
	var table bytes.Buffer
	if err := WriteTable(&table, rows); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"passes (1 CPU)  pass",
		"passes (2 CPU)  FAIL (conformance)",
		"! passes (2 CPU) / complex_proto: conformance failed: workers: the server started workers=1, where GRPC_SERVER_CPUS=2 on 4 CPUs asks for 2",
	} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}
}

// TestUnsupportedIsNeitherBuiltNorFailed: a scenario the server's
// server.json declares unsupported is listed with the reason, and nothing
// of it is built or started; the check does not fail over it.
func TestUnsupportedIsNeitherBuiltNorFailed(t *testing.T) {
	h := fake.New("fake://check", backend.Facts{CPUs: 4})
	h.Script = gate
	var built []string
	h.BuildErr = func(opts backend.BuildOptions) error {
		built = append(built, opts.Tag)
		return nil
	}
	c, out := newCheck(t, h, "nostreams")
	root := c.Kit.Catalog.Root
	testfiles.Write(t, filepath.Join(root, "servers", "nostreams", catalog.ManifestFile),
		`{"stack": "test", "library": "none", "version": "0", "pinned": {"unchecked": "a test server"}, "unsupported": {"stream_pingpong": "no bidi streams"}}`)
	for _, sc := range []string{"complex_proto", "stream_pingpong"} {
		testfiles.Write(t, filepath.Join(root, "scenarios", sc, scenario.ProtoFile), "")
	}
	cat, err := catalog.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	c.Kit.Catalog, c.Kit.Builder.Catalog, c.Kit.ClientBuilder.Catalog = cat, cat, cat
	rows, err := c.Servers(context.Background(), []string{"nostreams"}, scenarios(t, "complex_proto", "stream_pingpong"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || !rows[0].Passed || rows[1].Unsupported != "no bidi streams" || rows[1].Failed() {
		t.Fatalf("rows %+v: want complex_proto passed, stream_pingpong not supported and not failed", rows)
	}
	for _, tag := range built {
		if strings.Contains(tag, "stream_pingpong") {
			t.Errorf("built %s, an unsupported cell", tag)
		}
	}
	for _, ct := range h.Containers() {
		if strings.Contains(ct.Spec().Image, "stream_pingpong") {
			t.Errorf("started %s, a container of the unsupported cell", ct.Spec().Image)
		}
	}
	var table bytes.Buffer
	if err := WriteTable(&table, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "! nostreams / stream_pingpong: not supported: no bidi streams") ||
		!strings.Contains(out.String(), "nostreams / stream_pingpong: not supported") {
		t.Errorf("table:\n%s\nprogress:\n%s\nwant the cell listed as not supported, with the reason", table.String(), out)
	}
}

// TestEachTLSMode: under GRPC_TLS=off,on every server is checked in
// plaintext and over TLS, the TLS row named so, its logs under tls/, and
// only its server given the certificate.
func TestEachTLSMode(t *testing.T) {
	h := fake.New("fake://check", backend.Facts{CPUs: 4})
	h.Script = gate
	c, _ := newCheck(t, h, "passes")
	cfg, err := config.Parse(map[string]string{"GRPC_IMAGE_NAME": "chk", "GRPC_TLS": "off,on"}, []config.Tool{{Name: "ghz"}, {Name: "h2"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Kit.Config = cfg
	if c.Cells = ByServerCPUs(plan.Cells(cfg, 4, 4)); len(c.Cells) != 2 {
		t.Fatalf("ByServerCPUs kept %d cells, want one per TLS mode", len(c.Cells))
	}
	rows, err := c.Servers(context.Background(), c.Kit.Catalog.Servers, scenarios(t, "complex_proto"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].TLS || !rows[1].TLS {
		t.Fatalf("rows = %+v, want plaintext then TLS", rows)
	}
	if _, err := os.Stat(c.Kit.Folder.Path("tls", "complex_proto", "passes", "server.log")); err != nil {
		t.Errorf("no server log of the TLS check: %v", err)
	}
	var withCert int
	for _, ctr := range h.Containers() {
		if ctr.Spec().Labels[backend.RoleLabel] == "server" && slices.Contains(ctr.Spec().Env, "GRPC_TLS_CERT=/tls/server.crt") {
			withCert++
		}
	}
	if withCert != 1 {
		t.Errorf("%d servers got a certificate, want the TLS check's alone", withCert)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, rows); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"passes      pass", "passes TLS  pass"} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}
}
