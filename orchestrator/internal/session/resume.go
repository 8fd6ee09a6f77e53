package session

import (
	"errors"
	"fmt"
	"maps"
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
	// engine that fell back on it.
	if e := prior.Hosts; e != nil {
		switch {
		case vars["GRPC_SERVER_DOCKER_HOST"] == "":
			vars["DOCKER_HOST"] = e.Servers
		case vars["GRPC_CLIENT_DOCKER_HOST"] == "":
			vars["DOCKER_HOST"] = e.Clients
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

// fingerprints hashes the build context of each server for the scenarios.
func fingerprints(cat catalog.Catalog, servers, scenarios []string) (map[string]string, error) {
	out := map[string]string{}
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
// code here: the commit, the list of servers, each server's build context.
func changes(prior record.Run, commit string, servers []string, contexts map[string]string) []string {
	var out []string
	if commit != prior.Commit {
		out = append(out, fmt.Sprintf("the commit was %q, it is now %q", prior.Commit, commit))
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
		out = append(out, "build context changed (servers/<name>/ or the scenarios): "+strings.Join(changed, ", "))
	}
	return out
}

// checkResume refuses to resume prior with other code than it started
// with, unless anyway says to go on, and returns what changed.
func checkResume(prior record.Run, anyway bool, commit string, servers []string, contexts map[string]string) ([]string, error) {
	diff := changes(prior, commit, servers, contexts)
	if len(diff) == 0 || anyway {
		return diff, nil
	}
	return nil, &config.Error{Var: "--resume", Value: prior.Dir, Reason: "the code changed since the run started: " + strings.Join(diff, "; "),
		Allowed: "the folder of an interrupted run of this code; add --resume-anyway to go on with the code as it is now (the record notes it)"}
}
