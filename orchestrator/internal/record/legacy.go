package record

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The layouts before version 3 had no version key: version 1 kept the
// servers at the top level with one measurement each, version 2 cells of
// servers of rounds. Both named the hosts "engines" and a load's tool
// "engine", wrote CPU counts as strings, and said how a run ended by a
// "finished" time and an "interrupted" flag; fromUnversioned rewrites those
// keys and values, then reads the document as version 3 (version 2) or
// converts it (version 1).

// fromUnversioned reads a results.json of layout 1 or 2.
func fromUnversioned(js []byte) (Run, error) {
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return Run{}, err
	}
	if hosts, ok := doc["engines"]; ok {
		doc["hosts"] = hosts
		delete(doc, "engines")
	}
	renameToolKeys(doc)
	// How the run ended, from its interrupted flag and its finish time.
	state := Running
	if f, _ := doc["finished"].(string); f != "" && f != "0001-01-01T00:00:00Z" {
		state, doc["ended"] = Finished, f
	}
	if interrupted, _ := doc["interrupted"].(bool); interrupted {
		state = Interrupted
	}
	doc["state"] = state
	delete(doc, "finished")
	delete(doc, "interrupted")
	for _, c := range list(doc["cells"]) {
		if cell, ok := c.(map[string]any); ok {
			for _, key := range []string{"server_cpus", "client_cpus"} {
				if s, ok := cell[key].(string); ok {
					cell[key], _ = strconv.ParseFloat(s, 64)
				}
			}
		}
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return Run{}, err
	}
	_, cells := doc["cells"]
	_, servers := doc["servers"]
	if servers && !cells {
		return fromLayout1(js)
	}
	var run Run
	err = json.Unmarshal(js, &run)
	return run, err
}

// renameToolKeys renames "engine" to "tool" in every load result of the
// document: objects under a "load" key.
func renameToolKeys(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, inner := range v {
			if m, ok := inner.(map[string]any); ok && k == "load" {
				if tool, ok := m["engine"]; ok {
					m["tool"] = tool
					delete(m, "engine")
				}
			}
			renameToolKeys(inner)
		}
	case []any:
		for _, inner := range v {
			renameToolKeys(inner)
		}
	}
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// layout1Run is results.json as layout 1 wrote it.
type layout1Run struct {
	ID        string          `json:"id"`
	Started   time.Time       `json:"started"`
	State     State           `json:"state"`
	Ended     time.Time       `json:"ended"`
	Commit    string          `json:"commit"`
	Settings  []Setting       `json:"settings"`
	Hardware  Hardware        `json:"hardware"`
	Placement Placement       `json:"placement"`
	Servers   []layout1Server `json:"servers"`
}

type layout1Server struct {
	Name     string   `json:"name"`
	Scenario string   `json:"scenario"`
	Image    string   `json:"image"`
	ImageID  string   `json:"image_id"`
	Failure  *Failure `json:"failure"`
	Measurement
	Phases      []Phase      `json:"phases"`
	Conformance *Conformance `json:"conformance"`
	ClientBound bool         `json:"client_bound"`
}

// fromLayout1 converts layout 1 to one cell whose servers have one round
// each; the cell's shape comes from the run's settings.
func fromLayout1(js []byte) (Run, error) {
	var old layout1Run
	if err := json.Unmarshal(js, &old); err != nil {
		return Run{}, err
	}
	cell := layout1Cell(old)
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
	return Run{ID: old.ID, Started: old.Started, State: old.State, Ended: old.Ended, Commit: old.Commit, Settings: old.Settings,
		Hardware: old.Hardware, Cells: []Cell{cell}}, nil
}

// layout1Cell reads the cell's figures from the settings as they were
// given; a value that does not read stays zero.
func layout1Cell(old layout1Run) Cell {
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
	return Cell{
		Scenario:    get("GRPC_REQUEST_SCENARIO"),
		ServerCPUs:  num("GRPC_SERVER_CPUS"),
		ClientCPUs:  num("GRPC_CLIENT_CPUS"),
		Profile:     get("GRPC_LOAD_PROFILE"),
		Connections: int(num("GRPC_CLIENT_CONNECTIONS")),
		Concurrency: int(num("GRPC_CLIENT_CONCURRENCY")),
		Settings:    old.Settings,
		Placement:   old.Placement,
	}
}
