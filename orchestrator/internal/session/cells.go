package session

import (
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/suite"
)

// newCells sets a new run's cells up, the one place a record's cells are
// made (a resume reads them from the record): config's cells, the product
// of the list-valued settings, each with its footer and its placement on
// the cores of the servers' and the clients' hosts (one host: the same
// count twice).
func newCells(cfg config.Config, serverCPUs, clientCPUs int) []record.Cell {
	var cells []record.Cell
	for _, c := range cfg.Cells(config.Facts{EngineCPUs: serverCPUs, ClientCPUs: clientCPUs}) {
		placement := suite.Place(serverCPUs, c.ServerCPUs, c.ClientCPUs)
		if cfg.TwoEngines() {
			placement = suite.PlaceApart(serverCPUs, clientCPUs, c.ServerCPUs, c.ClientCPUs)
		}
		cells = append(cells, record.Cell{Cell: c, Settings: cfg.Settings(c), Placement: placement})
	}
	return cells
}
