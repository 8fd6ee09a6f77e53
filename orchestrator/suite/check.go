package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"

	"github.com/grpcbench/grpcbench/orchestrator/scenario"
)

// CheckRow is the gate's outcome for one server and one scenario.
type CheckRow struct {
	Server   string `json:"server"`
	Scenario string `json:"scenario"`
	Passed   bool   `json:"passed"`
	Phase    string `json:"phase,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// CheckServers builds every server for every scenario and passes it through
// the conformance gate, without measuring anything. Logs go to
// <run>/<scenario>/<server>/.
func (s *Suite) CheckServers(ctx context.Context, servers []string, scenarios []*scenario.Scenario) ([]CheckRow, error) {
	clientImage, err := s.buildClient(ctx)
	if err != nil {
		return nil, err
	}
	var rows []CheckRow
	for _, sc := range scenarios {
		sub := *s
		sub.Scenario, sub.Dir = sc, filepath.Join(s.Dir, sc.Name)
		if err := os.MkdirAll(sub.Dir, 0o755); err != nil {
			return rows, err
		}
		for _, name := range servers {
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			rows = append(rows, sub.check(ctx, name, clientImage))
		}
	}
	return rows, nil
}

func (s *Suite) check(ctx context.Context, name, clientImage string) CheckRow {
	r := s.newServerRun(name)
	defer r.removeContainers(ctx)
	server, phase, err := r.bringUp(ctx, clientImage)
	if server != nil {
		defer r.saveServerLogs(ctx, server)
	}
	row := CheckRow{Server: name, Scenario: s.Scenario.Name, Passed: err == nil}
	if err != nil {
		row.Phase, row.Reason = phase, err.Error()
	}
	fmt.Fprintf(s.Out, "%s / %s: %s\n", name, s.Scenario.Name, verdictText(row))
	return row
}

func verdictText(r CheckRow) string {
	if r.Passed {
		return "pass"
	}
	return "FAIL (" + r.Phase + ")"
}

// WriteCheckTable prints servers × scenarios, then why each failure failed.
func WriteCheckTable(w io.Writer, rows []CheckRow) error {
	var servers, scenarios []string
	cell := map[[2]string]CheckRow{}
	for _, r := range rows {
		if !slices.Contains(servers, r.Server) {
			servers = append(servers, r.Server)
		}
		if !slices.Contains(scenarios, r.Scenario) {
			scenarios = append(scenarios, r.Scenario)
		}
		cell[[2]string{r.Server, r.Scenario}] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "server")
	for _, sc := range scenarios {
		fmt.Fprint(tw, "\t"+sc)
	}
	fmt.Fprintln(tw)
	for _, srv := range servers {
		fmt.Fprint(tw, srv)
		for _, sc := range scenarios {
			fmt.Fprint(tw, "\t"+verdictText(cell[[2]string{srv, sc}]))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if !r.Passed {
			if _, err := fmt.Fprintf(w, "! %s / %s: %s failed: %s\n", r.Server, r.Scenario, r.Phase, r.Reason); err != nil {
				return err
			}
		}
	}
	return nil
}
