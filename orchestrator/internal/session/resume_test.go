package session

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

var facts = config.Facts{Servers: []string{"go_grpc", "rust_tonic_st", "python_grpc"},
	Scenarios: []string{"complex_proto", "string_100B"}, HostCPUs: 8, HostMemory: 16 << 30, ClientCPUs: 8}

// TestResumeUsesTheSettingsAsGiven records a run as results.json holds it,
// reads it back and sets up its resume: each list-valued setting, a load
// profile (whose recorded GRPC_CLIENT_CONNECTIONS default used to be taken
// as given, and refused), and the engines, one or two, resume with exactly
// the settings, cells and engines the run had.
func TestResumeUsesTheSettingsAsGiven(t *testing.T) {
	for _, tc := range []struct {
		name  string
		given map[string]string
	}{
		{"server CPUs", map[string]string{"GRPC_SERVER_CPUS": "1,2"}},
		{"scenarios", map[string]string{"GRPC_REQUEST_SCENARIO": "complex_proto,string_100B"}},
		{"servers", map[string]string{"GRPC_BENCHMARKS": "go_grpc rust_tonic_st"}},
		{"load profiles", map[string]string{"GRPC_LOAD_PROFILE": "1a,2b"}},
		{"a matrix", map[string]string{"GRPC_LOAD_PROFILE": "1a,2b", "GRPC_SERVER_CPUS": "1,2", "GRPC_REQUEST_SCENARIO": "complex_proto,string_100B"}},
		{"DOCKER_HOST", map[string]string{"DOCKER_HOST": "tcp://10.0.0.9:2375"}},
		{"two engines", map[string]string{"GRPC_SERVER_DOCKER_HOST": "tcp://10.0.0.2:2375", "GRPC_SERVER_ADDRESS": "10.0.0.2:50051"}},
		{"two engines by DOCKER_HOST", map[string]string{"DOCKER_HOST": "tcp://10.0.0.3:2375", "GRPC_CLIENT_DOCKER_HOST": "ssh://bench@client",
			"GRPC_SERVER_ADDRESS": "10.0.0.3:50051"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse(tc.given, tools)
			if err == nil {
				err = cfg.Validate(facts)
			}
			if err != nil {
				t.Fatalf("the run itself is refused: %v", err)
			}
			servers, clients := cfg.DockerHosts()
			resumed := recordAndResume(t, record.Run{ID: "r", Settings: plan.Settings(cfg.All()), Hosts: &record.HostAddresses{Servers: servers, Clients: clients}})
			assertSameRun(t, cfg, resumed)
		})
	}
}

// tools stand for the load registry's.
var tools = []config.Tool{{Name: "ghz", Help: "one"}, {Name: "h2", Help: "two"}}

// TestResumeOfARecordOfTheOldToolNames: a record whose settings name the
// load tools by the names before GRPC_LOAD_TOOL resumes with them under the
// new names, not refused for the old ones.
func TestResumeOfARecordOfTheOldToolNames(t *testing.T) {
	settings := []record.Setting{{Name: "GRPC_LOAD_ENGINE", Value: "h2", Given: true}, {Name: "GRPC_CAPACITY_ENGINE", Value: "off", Given: true}}
	resumed := recordAndResume(t, record.Run{ID: "r", Settings: settings})
	if resumed.LoadTool != "h2" || resumed.CapacityTool != config.CapacityOff {
		t.Errorf("resumed with GRPC_LOAD_TOOL=%s GRPC_CAPACITY_TOOL=%s, want h2 and off as recorded", resumed.LoadTool, resumed.CapacityTool)
	}
}

// TestResumeOfAnOlderRecord: a record written before settings said
// whether they were given takes the values other than the defaults as
// given, so that a profile run of then resumes too.
func TestResumeOfAnOlderRecord(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_LOAD_PROFILE": "1a,2b", "GRPC_BENCHMARK_ROUNDS": "5"}, tools)
	if err != nil {
		t.Fatal(err)
	}
	settings := plan.Settings(cfg.All())
	for i := range settings {
		settings[i].Given = false
	}
	assertSameRun(t, cfg, recordAndResume(t, record.Run{ID: "r", Settings: settings}))
}

// recordAndResume saves run as results.json, loads it and parses the
// settings a resume of it uses.
func recordAndResume(t *testing.T, run record.Run) config.Config {
	t.Helper()
	f := record.Folder{Dir: t.TempDir()}
	if err := record.Save(f, run); err != nil {
		t.Fatal(err)
	}
	prior, err := record.Load(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := config.Parse(resumeVars(prior), tools)
	if err == nil {
		err = resumed.Validate(facts)
	}
	if err != nil {
		t.Fatalf("the resume is refused: %v", err)
	}
	return resumed
}

func assertSameRun(t *testing.T, cfg, resumed config.Config) {
	t.Helper()
	values := func(c config.Config) map[string]string {
		m := map[string]string{}
		for _, s := range c.All() {
			m[s.Name] = s.Value
		}
		return m
	}
	if got, want := values(resumed), values(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("resumed settings %v\nwant %v", got, want)
	}
	if got, want := plan.Cells(resumed, facts.HostCPUs, facts.ClientCPUs), plan.Cells(cfg, facts.HostCPUs, facts.ClientCPUs); !reflect.DeepEqual(got, want) {
		t.Errorf("resumed cells %+v\nwant %+v", got, want)
	}
	gs, gc := resumed.DockerHosts()
	ws, wc := cfg.DockerHosts()
	if gs != ws || gc != wc {
		t.Errorf("resumed on engines %s and %s, want %s and %s", gs, gc, ws, wc)
	}
}

// TestResumeRefusesOtherCode: a changed commit, orchestrator binary,
// server list, build context or tools/ refuses the resume as a bad setting
// naming what changed, unless told to go on anyway.
func TestResumeRefusesOtherCode(t *testing.T) {
	root := t.TempDir()
	for name, content := range map[string]string{"servers/a/Dockerfile": "FROM scratch\n", "servers/b/Dockerfile": "FROM scratch\n",
		"servers/c/Dockerfile": "FROM scratch\n", "servers/a/server.json": testfiles.Manifest, "servers/b/server.json": testfiles.Manifest,
		"servers/c/server.json": testfiles.Manifest, "scenarios/s/helloworld.proto": "syntax = \"proto3\";\n",
		"tools/h2load/Dockerfile": "FROM scratch\n"} {
		testfiles.Write(t, filepath.Join(root, name), content)
	}
	cat, err := catalog.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	started, err := fingerprints(cat, []string{"a", "b"}, []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	prior := record.Run{ID: "r", Dir: "results/r", Commit: "abc1234 first", Client: "c0ffee", Contexts: started,
		Cells: []record.Cell{{Servers: []record.Server{{Name: "a"}, {Name: "b"}}}}}
	if diff, err := checkResume(prior, false, prior.Commit, prior.Client, []string{"a", "b"}, started); err != nil || diff != nil {
		t.Fatalf("the same code is refused: %v %v", diff, err)
	}

	testfiles.Write(t, filepath.Join(root, "servers/b/main.go"), "package main\n")
	testfiles.Write(t, filepath.Join(root, "scenarios/s/payload.json"), "{}\n") // every server's context
	now, err := fingerprints(cat, []string{"a", "b", "c"}, []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	testfiles.Write(t, filepath.Join(root, "tools/h2load/Dockerfile"), "FROM debian:bookworm-slim\n")
	tools, err := fingerprints(cat, []string{"a", "b"}, []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	tools["a"], tools["b"] = started["a"], started["b"]
	for _, tc := range []struct {
		name, commit, client string
		servers              []string
		contexts             map[string]string
		want                 string
	}{
		{"commit", "def5678 second", prior.Client, []string{"a", "b"}, started, `the commit was "abc1234 first", it is now "def5678 second"`},
		{"binary", prior.Commit, "beef", []string{"a", "b"}, started, "the orchestrator's binary, which the load client's image is made of, was c0ffee, it is now beef"},
		{"server added", prior.Commit, prior.Client, []string{"a", "b", "c"}, started, "servers added: c"},
		{"server gone", prior.Commit, prior.Client, []string{"a"}, started, "servers gone: b"},
		{"build context", prior.Commit, prior.Client, []string{"a", "b"}, now, "build context changed (servers/<name>/, the scenarios or tools/): a, b"},
		{"tools", prior.Commit, prior.Client, []string{"a", "b"}, tools, "build context changed (servers/<name>/, the scenarios or tools/): tools/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkResume(prior, false, tc.commit, tc.client, tc.servers, tc.contexts)
			var cfgErr *config.Error
			if !errors.As(err, &cfgErr) || cfgErr.Var != "--resume" || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "--resume-anyway") {
				t.Errorf("refusal %v, want a --resume error saying %q", err, tc.want)
			}
			diff, err := checkResume(prior, true, tc.commit, tc.client, tc.servers, tc.contexts)
			if err != nil || len(diff) != 1 || diff[0] != tc.want {
				t.Errorf("with --resume-anyway: %q, %v; want the change %q noted", diff, err, tc.want)
			}
		})
	}
}

// TestResumeRefusesOtherHosts: another engine, or a machine of other CPUs
// or memory, whose cores the recorded placement does not fit, refuses the
// resume unless told to go on; a record from before engines were told
// apart is judged by its CPUs and memory.
func TestResumeRefusesOtherHosts(t *testing.T) {
	was := record.Hardware{HostID: "A", CPUs: 4, MemoryBytes: 8 << 30}
	prior := record.Run{ID: "r", Dir: "results/r", Hardware: was}
	if diff, err := checkHosts(prior, false, was, was); err != nil || diff != nil {
		t.Fatalf("the same host is refused: %v %v", diff, err)
	}
	fewer := was
	fewer.CPUs = 2
	other := was
	other.HostID = "B"
	old := prior
	old.Hardware.HostID = ""
	for _, tc := range []struct {
		name  string
		prior record.Run
		now   record.Hardware
		want  string
	}{
		{"fewer CPUs", prior, fewer, "the servers' host has 2 CPUs and 8589934592 bytes of memory, it had 4 and 8589934592"},
		{"another engine", prior, other, "the servers' host is another engine (ID B, it was A)"},
		{"fewer CPUs, an old record", old, fewer, "the servers' host has 2 CPUs"},
	} {
		_, err := checkHosts(tc.prior, false, tc.now, tc.now)
		if !strings.Contains(fmt.Sprint(err), tc.want) || !strings.Contains(fmt.Sprint(err), "--resume-anyway") {
			t.Errorf("%s: %v, want a refusal saying %q", tc.name, err, tc.want)
		}
		if diff, err := checkHosts(tc.prior, true, tc.now, tc.now); err != nil || len(diff) != 1 {
			t.Errorf("%s with --resume-anyway: %q, %v; want the change noted", tc.name, diff, err)
		}
	}
	if _, err := checkHosts(old, false, other, other); err != nil {
		t.Errorf("an old record's host without an ID refused for its ID: %v", err)
	}
}

// TestResumeReachesTheHostsAsTheRunDid: a run on a tcp:// engine with TLS
// resumes with the same DOCKER_TLS_VERIFY and DOCKER_CERT_PATH.
func TestResumeReachesTheHostsAsTheRunDid(t *testing.T) {
	vars := resumeVars(record.Run{Hosts: &record.HostAddresses{Servers: "tcp://10.0.0.2:2376", Clients: "tcp://10.0.0.2:2376", TLSVerify: true, CertPath: "/certs"}})
	if vars["DOCKER_HOST"] != "tcp://10.0.0.2:2376" || vars["DOCKER_TLS_VERIFY"] != "1" || vars["DOCKER_CERT_PATH"] != "/certs" {
		t.Errorf("resume variables %v, want the engine with TLS verified from /certs", vars)
	}
}
