package config

import (
	"fmt"
	"maps"
	"strconv"
)

// Cell is one combination of the list-valued settings (scenario, server
// CPUs, load profile) with the load shape and GRPC_CLIENT_CPUS resolved:
// what one section of bench.txt describes.
type Cell struct {
	Scenario   string `json:"scenario"`
	ServerCPUs CPUs   `json:"server_cpus"`
	// ClientCPUs is the client's limit, auto resolved.
	ClientCPUs CPUs `json:"client_cpus"`
	// Profile is the load shape's name, "" when the shape comes from
	// GRPC_CLIENT_CONNECTIONS and GRPC_CLIENT_CONCURRENCY.
	Profile     string `json:"profile,omitempty"`
	Connections int    `json:"connections"`
	Concurrency int    `json:"concurrency"`
	// Rate is a rate cell's target (GRPC_LOAD_RATES); zero in the cell
	// of the saturation load.
	Rate Rate `json:"rate,omitzero"`
	// Probe is, from 1, which probe of a latency objective's search the
	// cell is: its rate is each server's own, from the probes before.
	Probe int `json:"probe,omitempty"`
	// TLS says the load went over TLS (GRPC_TLS=on); a record without it
	// ran plaintext.
	TLS bool `json:"tls,omitempty"`
}

// Cells is the product of the list-valued settings: scenarios outermost,
// then server CPUs, then load profiles, then TLS modes (so that a cell's
// plaintext and TLS sections stand side by side), each in the order
// given, and innermost the saturation load and then each rate of a sweep
// (or each probe of a latency objective's search). The client engine's
// CPU count resolves GRPC_CLIENT_CPUS=auto.
func (c Config) Cells(f Facts) []Cell {
	profiles := c.LoadProfiles
	if len(profiles) == 0 {
		profiles = Names{""}
	}
	var cells []Cell
	for _, sc := range c.Scenarios {
		for _, cpus := range c.ServerCPUs {
			for _, p := range profiles {
				for _, mode := range c.TLS {
					cell := Cell{Scenario: sc, ServerCPUs: cpus, ClientCPUs: c.clientCPUs(f, cpus),
						Connections: c.Connections, Concurrency: c.Concurrency, TLS: mode == TLSOn}
					cell = cell.WithProfile(p)
					cells = append(cells, cell)
					for _, r := range c.Rates {
						cells = append(cells, cell.WithRate(r))
					}
					for k := 1; len(c.Rates) == 0 && c.SLO.Set() && k <= SLOProbes; k++ {
						probe := cell
						probe.Probe = k
						cells = append(cells, probe)
					}
				}
			}
		}
	}
	return cells
}

// WithProfile is the cell under another load shape; "" keeps its own.
func (cell Cell) WithProfile(name string) Cell {
	if p, ok := Profiles[name]; ok {
		cell.Profile, cell.Connections, cell.Concurrency = name, p.Connections, p.Connections*p.Streams
	}
	return cell
}

// WithRate is the cell loaded at a rate.
func (cell Cell) WithRate(r Rate) Cell {
	cell.Rate = r
	return cell
}

// Swept says the cell loads at a rate: one of a sweep's, or a probe's.
func (cell Cell) Swept() bool { return cell.Rate != (Rate{}) || cell.Probe > 0 }

// Saturation is the cell of the saturation load a rate cell sweeps
// below and above.
func (cell Cell) Saturation() Cell {
	cell.Rate, cell.Probe = Rate{}, 0
	return cell
}

// clientCPUs resolves the client's limit beside a server of the given
// limit: auto is every whole core of the client's machine the server does
// not take, less one for dockerd and the orchestrator when two or more are
// left, and at least 1.
func (c Config) clientCPUs(f Facts, server CPUs) CPUs {
	if !c.ClientCPUs.Auto {
		return c.ClientCPUs.CPUs
	}
	left := f.HostCPUs - server.Cores()
	if c.TwoHosts() {
		left = f.ClientCPUs
	}
	if left >= 2 {
		left--
	}
	return CPUs(max(1, left))
}

// Name says what sets the cell apart, for headings and progress lines.
func (cell Cell) Name() string {
	shape := fmt.Sprintf("%d×%d", cell.Connections, cell.Concurrency)
	if cell.Profile != "" {
		shape = cell.Profile + " (" + shape + ")"
	}
	name := fmt.Sprintf("%s, server %s CPU, client %s CPU, shape %s", cell.Scenario, cell.ServerCPUs, cell.ClientCPUs, shape)
	switch {
	case cell.Rate.Share > 0:
		name += ", rate " + cell.Rate.String() + " of capacity"
	case cell.Rate.PerSecond > 0:
		name += ", rate " + cell.Rate.String() + " req/s"
	case cell.Probe > 0:
		name += fmt.Sprintf(", latency objective probe %d", cell.Probe)
	}
	if cell.TLS {
		name += ", TLS"
	}
	return name
}

// TLSMode is the cell's GRPC_TLS value.
func (cell Cell) TLSMode() string {
	if cell.TLS {
		return TLSOn
	}
	return TLSOff
}

// Settings lists every variable as the cell ran it: the list-valued ones
// with the cell's value, the shape as connections and concurrency, and
// GRPC_CLIENT_CPUS resolved (with "(auto)" when it was). It is the
// footer of the cell's section of bench.txt.
func (c Config) Settings(cell Cell) []Setting {
	c.given = maps.Clone(c.given)
	if c.given == nil {
		c.given = map[string]string{}
	}
	c.given["GRPC_REQUEST_SCENARIO"] = cell.Scenario
	c.given["GRPC_SERVER_CPUS"] = cell.ServerCPUs.String()
	c.given["GRPC_LOAD_PROFILE"] = cell.Profile
	c.given["GRPC_TLS"] = cell.TLSMode()
	c.given["GRPC_CLIENT_CONNECTIONS"] = strconv.Itoa(cell.Connections)
	c.given["GRPC_CLIENT_CONCURRENCY"] = strconv.Itoa(cell.Concurrency)
	if len(c.Rates) > 0 {
		c.given["GRPC_LOAD_RATES"] = ""
		if cell.Rate != (Rate{}) {
			c.given["GRPC_LOAD_RATES"] = cell.Rate.String()
		}
	}
	client := cell.ClientCPUs.String()
	if c.ClientCPUs.Auto {
		client += " (auto)"
	}
	c.given["GRPC_CLIENT_CPUS"] = client
	return c.All()
}
