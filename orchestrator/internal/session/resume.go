package session

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// ErrFinished says the run to resume had finished: there is nothing to do.
var ErrFinished = errors.New("nothing to resume")

// resumeVars are the variables a resumed run is set up with: the settings
// the run was given (not their defaults) and the engines it used.
func resumeVars(prior record.Run) map[string]string {
	// Records written before settings said whether they were given: a
	// value other than the default was.
	marked := slices.ContainsFunc(prior.Settings, func(s record.Setting) bool { return s.Given })
	vars := map[string]string{}
	for _, st := range prior.Settings {
		if st.Given || !marked && st.Value != st.Default {
			vars[config.Current(st.Name)] = st.Value // a record may hold a setting's old name
		}
	}
	// The engines: DOCKER_HOST, which the settings do not hold, as the
	// engine that fell back on it, reached as it was.
	if e := prior.Hosts; e != nil {
		switch {
		case vars["GRPC_SERVER_DOCKER_HOST"] == "":
			vars["DOCKER_HOST"] = e.Servers
		case vars["GRPC_CLIENT_DOCKER_HOST"] == "":
			vars["DOCKER_HOST"] = e.Clients
		}
		if e.TLSVerify {
			vars["DOCKER_TLS_VERIFY"] = "1"
		}
		if e.CertPath != "" {
			vars["DOCKER_CERT_PATH"] = e.CertPath
		}
	}
	return vars
}

// recordedServers lists the servers of a record's cells, in order.
func recordedServers(run record.Run) []string {
	var names []string
	for _, c := range run.Cells {
		for _, s := range c.Servers {
			if !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	return names
}

// toolsContext is the key of tools/'s hash among a record's build contexts.
const toolsContext = "tools/"

// fingerprints hashes the build context of each server for the scenarios,
// and tools/, which the load tools' own images are built from.
func fingerprints(cat catalog.Catalog, servers, scenarios []string) (map[string]string, error) {
	out := map[string]string{}
	if fp, err := cat.ToolsFingerprint(); err != nil {
		return nil, err
	} else if fp != "" {
		out[toolsContext] = fp
	}
	// An unknown scenario is refused by Validate, with what is allowed.
	known := slices.DeleteFunc(slices.Clone(scenarios), func(sc string) bool { return !slices.Contains(cat.Scenarios, sc) })
	for _, name := range servers {
		if !slices.Contains(cat.Servers, name) {
			continue // refused by Validate, or gone from servers/: said by changes
		}
		fp, err := cat.Fingerprint(name, known)
		if err != nil {
			return nil, err
		}
		out[name] = fp
	}
	return out, nil
}

// changes lists what differs between the code a run started with and the
// code here: the commit, the orchestrator's binary (the load client's
// image), the list of servers, each server's build context and tools/.
func changes(prior record.Run, commit, client string, servers []string, contexts map[string]string) []string {
	var out []string
	if commit != prior.Commit {
		out = append(out, fmt.Sprintf("the commit was %q, it is now %q", prior.Commit, commit))
	}
	if prior.Client != "" && client != prior.Client {
		out = append(out, fmt.Sprintf("the orchestrator's binary, which the load client's image is made of, was %s, it is now %s", prior.Client, client))
	}
	before := recordedServers(prior)
	var added, gone []string
	for _, s := range servers {
		if !slices.Contains(before, s) {
			added = append(added, s)
		}
	}
	for _, s := range before {
		if !slices.Contains(servers, s) {
			gone = append(gone, s)
		}
	}
	if len(added) > 0 {
		out = append(out, "servers added: "+strings.Join(added, ", "))
	}
	if len(gone) > 0 {
		out = append(out, "servers gone: "+strings.Join(gone, ", "))
	}
	var changed []string
	for _, s := range slices.Sorted(maps.Keys(prior.Contexts)) {
		if now, ok := contexts[s]; ok && now != prior.Contexts[s] {
			changed = append(changed, s)
		}
	}
	if len(changed) > 0 {
		out = append(out, "build context changed (servers/<name>/, the scenarios or tools/): "+strings.Join(changed, ", "))
	}
	return out
}

// hostChanges lists what differs between the hosts a run started on and
// those it would resume on: another engine, or a machine of other CPUs or
// memory, whose cores the recorded placement does not fit.
func hostChanges(prior record.Run, servers, clients record.Hardware) []string {
	var out []string
	differ := func(role string, was, is record.Hardware) {
		switch {
		case was.HostID != "" && is.HostID != was.HostID:
			out = append(out, fmt.Sprintf("the %s' host is another engine (ID %s, it was %s)", role, is.HostID, was.HostID))
		case was.CPUs != is.CPUs || was.MemoryBytes != is.MemoryBytes:
			out = append(out, fmt.Sprintf("the %s' host has %d CPUs and %d bytes of memory, it had %d and %d", role, is.CPUs, is.MemoryBytes, was.CPUs, was.MemoryBytes))
		}
	}
	differ("servers", prior.Hardware, servers)
	if prior.ClientHardware != nil {
		differ("clients", *prior.ClientHardware, clients)
	}
	return out
}

// checkResume refuses to resume prior with other code than it started
// with, unless anyway says to go on, and returns what changed.
func checkResume(prior record.Run, anyway bool, commit, client string, servers []string, contexts map[string]string) ([]string, error) {
	diff := changes(prior, commit, client, servers, contexts)
	if len(diff) == 0 || anyway {
		return diff, nil
	}
	return nil, &config.Error{Var: "--resume", Value: prior.Dir, Reason: "the code changed since the run started: " + strings.Join(diff, "; "),
		Allowed: "the folder of an interrupted run of this code; add --resume-anyway to go on with the code as it is now (the record notes it)"}
}

// checkHosts refuses to resume prior on other hosts than it started on,
// unless anyway says to go on, and returns what changed.
func checkHosts(prior record.Run, anyway bool, servers, clients record.Hardware) ([]string, error) {
	diff := hostChanges(prior, servers, clients)
	if len(diff) == 0 || anyway {
		return diff, nil
	}
	return nil, &config.Error{Var: "--resume", Value: prior.Dir, Reason: "the hosts changed since the run started: " + strings.Join(diff, "; "),
		Allowed: "the folder of an interrupted run on these hosts; add --resume-anyway to go on here (the record notes it; the cells keep their placement)"}
}

// binaryHash is a hash of the orchestrator's own binary, "" when it
// cannot be read.
func binaryHash() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
