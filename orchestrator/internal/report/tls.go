package report

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// tlsTestText says what the test of a figure found: the ratio's interval
// and p when paired, p when not, or why nothing is claimed.
func tlsTestText(f analysis.TLSFigure) string {
	p := f.Pair
	switch p.Test {
	case stats.PairedT:
		return fmt.Sprintf("%.3f–%.3f, p %.3f, %s", p.Lo, p.Hi, p.P, p.Verdict)
	case stats.MannWhitney:
		return fmt.Sprintf("unpaired, p %.3f, %s", p.P, p.Verdict)
	}
	return fmt.Sprintf("%d rounds, too few", p.N)
}

// tlsRowFormat lays out the TLS cost tables of bench.txt.
const tlsRowFormat = "| %-27s | %9s | %9s | %6s | %-32s | %11s | %11s | %6s | %-32s |\n"

// writeTLSCosts writes bench.txt's closing section, the TLS cost tables.
func writeTLSCosts(b *strings.Builder, a analysis.Run) {
	tables := a.TLS
	if len(tables) == 0 {
		return
	}
	b.WriteString("\n== TLS cost: each server over TLS (on) against plaintext (off), in the cells that differ by GRPC_TLS alone\n")
	for _, tab := range tables {
		fmt.Fprintf(b, "-- %s, by %s\n", tab.Name, tab.By)
		header := fmt.Sprintf(tlsRowFormat, "name", "req/s off", "req/s on", "on/off", "req/s test", "µs/call off", "µs/call on", "on/off", "CPU per call test")
		rule := strings.Repeat("-", utf8.RuneCountInString(header)-1) + "\n"
		b.WriteString(rule + header + rule)
		for _, c := range tab.Costs {
			v := tlsViewOf(c)
			fmt.Fprintf(b, tlsRowFormat, v.Name, v.RPSOff, v.RPSOn, v.RPSRatio, v.RPSTest, v.CPUOff, v.CPUOn, v.CPURatio, v.CPUTest)
		}
		b.WriteString(rule)
		for _, n := range tab.Notes {
			b.WriteString("! " + n + "\n")
		}
	}
	b.WriteString("! " + analysis.TLSCaption + "\n")
}

// tlsView is a TLS cost as text, for bench.txt and report.html.
type tlsView struct {
	Name                             string
	RPSOff, RPSOn, RPSRatio, RPSTest string
	PerCoreOff, PerCoreOn            string
	CPUOff, CPUOn, CPURatio, CPUTest string
}

func tlsViewOf(c analysis.TLSCost) tlsView {
	v := tlsView{Name: escape.Text(c.Name),
		RPSOff: fmt.Sprintf("%.0f", c.RPS.Off), RPSOn: fmt.Sprintf("%.0f", c.RPS.On), RPSRatio: fmt.Sprintf("%.3f", c.RPS.Ratio()), RPSTest: tlsTestText(c.RPS),
		PerCoreOff: perCoreText(c.CPUPerCall.Off), PerCoreOn: perCoreText(c.CPUPerCall.On),
		CPUOff: micros(c.CPUPerCall.Off), CPUOn: micros(c.CPUPerCall.On), CPURatio: fmt.Sprintf("%.3f", c.CPUPerCall.Ratio()), CPUTest: tlsTestText(c.CPUPerCall)}
	if c.ClientBound {
		v.RPSOn = "≥" + v.RPSOn
	}
	return v
}

func micros(seconds float64) string {
	if seconds == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", seconds*1e6)
}

func perCoreText(seconds float64) string {
	if seconds == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", 1/seconds)
}
