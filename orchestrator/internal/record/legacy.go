package record

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
)

// legacyRun is results.json as runs wrote it before cells and rounds: one
// measurement per server, the servers at the top level.
type legacyRun struct {
	ID          string           `json:"id"`
	Started     time.Time        `json:"started"`
	Finished    time.Time        `json:"finished"`
	Commit      string           `json:"commit"`
	Settings    []config.Setting `json:"settings"`
	Hardware    Hardware         `json:"hardware"`
	Placement   Placement        `json:"placement"`
	Servers     []legacyServer   `json:"servers"`
	Interrupted bool             `json:"interrupted"`
}

type legacyServer struct {
	Name     string   `json:"name"`
	Scenario string   `json:"scenario"`
	Image    string   `json:"image"`
	ImageID  string   `json:"image_id"`
	Failure  *Failure `json:"failure"`
	Measurement
	Phases      []Phase        `json:"phases"`
	Conformance *probe.Verdict `json:"conformance"`
	ClientBound bool           `json:"client_bound"`
}

// isLegacy tells the older layout by its servers at the top level and no
// cells.
func isLegacy(js []byte) bool {
	var keys map[string]json.RawMessage
	if json.Unmarshal(js, &keys) != nil {
		return false
	}
	_, cells := keys["cells"]
	_, servers := keys["servers"]
	return servers && !cells
}

// fromLegacy converts the older layout to one cell whose servers have one
// round each; the cell's shape comes from the run's settings.
func fromLegacy(js []byte) (Run, error) {
	var old legacyRun
	if err := json.Unmarshal(js, &old); err != nil {
		return Run{}, err
	}
	cell := Cell{Cell: legacyCell(old), Settings: old.Settings, Placement: old.Placement}
	for _, s := range old.Servers {
		if s.Scenario != "" {
			cell.Scenario = s.Scenario
		}
		srv := Server{Name: s.Name, Image: s.Image, ImageID: s.ImageID, Failure: s.Failure, Conformance: s.Conformance}
		// A server that failed before its load has nothing to put in a
		// round; one that was measured gets its measurement as round 1.
		if s.Load != nil || len(s.Phases) > 0 {
			r := Round{Round: 1, Phases: s.Phases, Measurement: s.Measurement, ClientBound: s.ClientBound}
			if len(s.Phases) > 0 {
				r.Start = s.Phases[0].Start
			}
			srv.Rounds = []Round{r}
		}
		cell.Servers = append(cell.Servers, srv)
	}
	return Run{ID: old.ID, Started: old.Started, Finished: old.Finished, Commit: old.Commit, Settings: old.Settings,
		Hardware: old.Hardware, Cells: []Cell{cell}, Interrupted: old.Interrupted}, nil
}

// legacyCell reads the cell's figures from the settings as they were
// given; a value that does not read stays zero.
func legacyCell(old legacyRun) config.Cell {
	get := func(name string) string {
		for _, s := range old.Settings {
			if s.Name == name {
				// "2 (auto)": the number is the first word.
				if f := strings.Fields(s.Value); len(f) > 0 {
					return f[0]
				}
			}
		}
		return ""
	}
	num := func(name string) float64 {
		f, _ := strconv.ParseFloat(get(name), 64)
		return f
	}
	return config.Cell{
		Scenario:    get("GRPC_REQUEST_SCENARIO"),
		ServerCPUs:  config.CPUs(num("GRPC_SERVER_CPUS")),
		ClientCPUs:  config.CPUs(num("GRPC_CLIENT_CPUS")),
		Profile:     get("GRPC_LOAD_PROFILE"),
		Connections: int(num("GRPC_CLIENT_CONNECTIONS")),
		Concurrency: int(num("GRPC_CLIENT_CONCURRENCY")),
	}
}
