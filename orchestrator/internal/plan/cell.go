package plan

import (
	"fmt"
	"strconv"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// Cell is one combination of the list-valued settings (scenario, server
// CPUs, load profile, TLS, rate) with the load shape and GRPC_CLIENT_CPUS
// resolved: what one section of bench.txt describes. The record keeps it
// as a record.Cell; Of reads it back.
type Cell struct {
	Scenario   string      `json:"scenario"`
	ServerCPUs config.CPUs `json:"server_cpus"`
	// ClientCPUs is the client's limit, auto resolved.
	ClientCPUs config.CPUs `json:"client_cpus"`
	// Profile is the load shape's name, "" when the shape comes from
	// GRPC_CLIENT_CONNECTIONS and GRPC_CLIENT_CONCURRENCY.
	Profile     string `json:"profile,omitempty"`
	Connections int    `json:"connections"`
	Concurrency int    `json:"concurrency"`
	// Rate is a rate cell's target (GRPC_LOAD_RATES); zero in the cell of
	// the saturation load.
	Rate config.Rate `json:"rate,omitzero"`
	// Probe is, from 1, which probe of a latency objective's search the
	// cell is: its rate is each server's own, from the probes before.
	Probe int  `json:"probe,omitempty"`
	TLS   bool `json:"tls,omitempty"`
}

// SLOProbes is how many rates the search of a latency objective's
// sustainable throughput probes: a bisection of the share of capacity,
// 1/16 of it apart at the end.
const SLOProbes = 4

// Of is the cell a record's cell ran.
func Of(c record.Cell) Cell {
	return Cell{Scenario: c.Scenario, ServerCPUs: config.CPUs(c.ServerCPUs), ClientCPUs: config.CPUs(c.ClientCPUs),
		Profile: c.Profile, Connections: c.Connections, Concurrency: c.Concurrency,
		Rate: config.Rate{PerSecond: c.Rate.PerSecond, Share: c.Rate.Share}, Probe: c.Probe, TLS: c.TLS}
}

// Record is the cell as the record keeps it, without its footer, placement
// and servers.
func (cell Cell) Record() record.Cell {
	return record.Cell{Scenario: cell.Scenario, ServerCPUs: float64(cell.ServerCPUs), ClientCPUs: float64(cell.ClientCPUs),
		Profile: cell.Profile, Connections: cell.Connections, Concurrency: cell.Concurrency,
		Rate: record.Rate{PerSecond: cell.Rate.PerSecond, Share: cell.Rate.Share}, Probe: cell.Probe, TLS: cell.TLS}
}

// Cells sets a new run's cells up, the one place a record's cells are
// made (a resume reads them from the record): the product of the
// list-valued settings, each with its footer and its placement on the
// cores of the servers' and the clients' hosts (one host: the same count
// twice).
func Cells(cfg config.Config, serverCPUs, clientCPUs int) []record.Cell {
	var cells []record.Cell
	for _, c := range product(cfg, serverCPUs, clientCPUs) {
		placement := Place(serverCPUs, c.ServerCPUs, c.ClientCPUs)
		if cfg.TwoHosts() {
			placement = PlaceApart(serverCPUs, clientCPUs, c.ServerCPUs, c.ClientCPUs)
		}
		rc := c.Record()
		rc.Settings, rc.Placement = Settings(Footer(cfg, c)), placement
		cells = append(cells, rc)
	}
	return cells
}

// product is the product of the list-valued settings: scenarios outermost,
// then server CPUs, then load profiles, then TLS modes (so that a cell's
// plaintext and TLS sections stand side by side), each in the order
// given, and innermost the saturation load and then each rate of a sweep
// (or each probe of a latency objective's search).
func product(cfg config.Config, serverCPUs, clientCPUs int) []Cell {
	profiles := cfg.LoadProfiles
	if len(profiles) == 0 {
		profiles = config.Names{""}
	}
	var cells []Cell
	for _, sc := range cfg.Scenarios {
		for _, cpus := range cfg.ServerCPUs {
			for _, p := range profiles {
				for _, mode := range cfg.TLS {
					cell := Cell{Scenario: sc, ServerCPUs: cpus, ClientCPUs: clientLimit(cfg, serverCPUs, clientCPUs, cpus),
						Connections: cfg.Connections, Concurrency: cfg.Concurrency, TLS: mode == config.TLSOn}
					cell = cell.WithProfile(p)
					cells = append(cells, cell)
					for _, r := range cfg.Rates {
						cells = append(cells, cell.WithRate(r))
					}
					for k := 1; len(cfg.Rates) == 0 && cfg.SLO.Set() && k <= SLOProbes; k++ {
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

// clientLimit resolves the client's limit beside a server of the given
// limit: auto is every whole core of the client's machine the server does
// not take, less one for the host's engine and the orchestrator when two or
// more are left, and at least 1.
func clientLimit(cfg config.Config, serverCPUs, clientCPUs int, server config.CPUs) config.CPUs {
	if !cfg.ClientCPUs.Auto {
		return cfg.ClientCPUs.CPUs
	}
	left := serverCPUs - server.Cores()
	if cfg.TwoHosts() {
		left = clientCPUs
	}
	if left >= 2 {
		left--
	}
	return config.CPUs(max(1, left))
}

// WithProfile is the cell under another load shape; "" keeps its own.
func (cell Cell) WithProfile(name string) Cell {
	if p, ok := config.Profiles[name]; ok {
		cell.Profile, cell.Connections, cell.Concurrency = name, p.Connections, p.Connections*p.Streams
	}
	return cell
}

// WithRate is the cell loaded at a rate.
func (cell Cell) WithRate(r config.Rate) Cell {
	cell.Rate = r
	return cell
}

// Swept says the cell loads at a rate: one of a sweep's, or a probe's.
func (cell Cell) Swept() bool { return cell.Rate != (config.Rate{}) || cell.Probe > 0 }

// Saturation is the cell of the saturation load a rate cell sweeps below
// and above.
func (cell Cell) Saturation() Cell {
	cell.Rate, cell.Probe = config.Rate{}, 0
	return cell
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
		return config.TLSOn
	}
	return config.TLSOff
}

// Footer lists every variable as the cell ran it: the list-valued ones
// with the cell's value, the shape as connections and concurrency, and
// GRPC_CLIENT_CPUS resolved (with "(auto)" when it was). It is the footer
// of the cell's section of bench.txt.
func Footer(cfg config.Config, cell Cell) []config.Setting {
	values := map[string]string{
		"GRPC_REQUEST_SCENARIO":   cell.Scenario,
		"GRPC_SERVER_CPUS":        cell.ServerCPUs.String(),
		"GRPC_LOAD_PROFILE":       cell.Profile,
		"GRPC_TLS":                cell.TLSMode(),
		"GRPC_CLIENT_CONNECTIONS": strconv.Itoa(cell.Connections),
		"GRPC_CLIENT_CONCURRENCY": strconv.Itoa(cell.Concurrency),
		"GRPC_CLIENT_CPUS":        cell.ClientCPUs.String(),
	}
	if cfg.ClientCPUs.Auto {
		values["GRPC_CLIENT_CPUS"] += " (auto)"
	}
	if len(cfg.Rates) > 0 {
		values["GRPC_LOAD_RATES"] = ""
		if cell.Rate != (config.Rate{}) {
			values["GRPC_LOAD_RATES"] = cell.Rate.String()
		}
	}
	return cfg.With(values)
}

// Settings are settings as the record keeps them.
func Settings(list []config.Setting) []record.Setting {
	out := make([]record.Setting, len(list))
	for i, s := range list {
		out[i] = record.Setting{Name: s.Name, Value: s.Value, Help: s.Help, Default: s.Default, Given: s.Given}
	}
	return out
}

// Design is how the run's rankings' pairs are tested: one look at the end
// of its rounds, or under GRPC_BENCHMARK_ROUNDS=auto the looks of a
// sequential design.
func Design(cfg config.Config) stats.Design {
	if cfg.Rounds.Auto {
		return stats.Sequential(stats.AutoLooks, cfg.Margin)
	}
	return stats.Fixed(cfg.Rounds.N, cfg.Margin)
}
