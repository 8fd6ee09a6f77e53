package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// WriteMarkdown writes results.md: for each cell, a heading, its ranking
// as a Markdown table (and the server capacity ranking where there is
// one), its notes as a list and its settings, ready to paste into an
// issue.
func WriteMarkdown(w io.Writer, a analysis.Run) error {
	run := a.Record
	var b strings.Builder
	fmt.Fprintf(&b, "## grpcbench run %s\n\n", run.ID)
	if run.Commit != "" {
		fmt.Fprintf(&b, "Commit: %s  \n", markdownText(a.Commit))
	}
	switch h := run.Hardware; {
	case run.ClientHardware != nil:
		fmt.Fprintf(&b, "Servers' machine: %s  \nClients' machine: %s\n", machineText(h), machineText(*run.ClientHardware))
	case h.CPUs > 0:
		fmt.Fprintf(&b, "Machine: %s\n", machineText(h))
	}
	for _, c := range a.Cells {
		fmt.Fprintf(&b, "\n### %s\n\n", c.Name)
		n := slices.Clone(c.Notes)
		if c.Floor {
			b.WriteString("**" + analysis.FloorCaption + "**\n\n")
		}
		fmt.Fprintf(&b, "Ranking by the load tool (%s), medians of %s:\n\n", c.Tool, roundsText(c))
		markdownTable(&b, c.Floor, c.Load.Rows, c.Unit)
		if c.Capacity.Rows != nil {
			for _, line := range c.Capacity.Verdicts {
				n = append(n, "server capacity: "+line)
			}
			n = append(n, c.CapacityLeftOut...)
			b.WriteString("\nServer capacity (" + analysis.CapacityCaption + "):\n\n")
			markdownTable(&b, false, c.Capacity.Rows, c.Unit) // a capacity measurement is about throughput
		}
		if len(n) > 0 {
			b.WriteString("\nNotes:\n\n")
			for _, line := range n {
				b.WriteString("- " + markdownText(line) + "\n")
			}
		}
		b.WriteString("\nSettings: ")
		for i, s := range c.Record.Settings {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "`%s=%s`", s.Name, s.Value)
		}
		b.WriteString("\n")
	}
	writeSweepsMarkdown(&b, a)
	_, err := io.WriteString(w, b.String())
	return err
}

// markdownTable writes a ranking whose rates count unit, its latency
// columns first in a floor-latency cell.
func markdownTable(b *strings.Builder, floor bool, rows []analysis.Row, unit string) {
	line := func(cols ...string) {
		b.WriteString("| " + strings.Join(latencyFirst(floor, cols, 5, 11), " | ") + " |\n")
	}
	line("#", "group", "server", "stack", "library", "tool", unit, "interval", "CV", "server CPU", unit+" per core", "p50", "p99", "p99.9", "memory", "flags")
	b.WriteString("|" + strings.Join(latencyFirst(floor, strings.Split("--:|---|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---", "|"), 5, 11), "|") + "|\n")
	for i, r := range rows {
		cpu, perCore, mem := serverFigures(r)
		stack, library := builtOn(r)
		line(strconv.Itoa(i+1), r.Group, markdownText(r.Name), markdownText(stack), markdownText(library), strings.Join(r.Tools, "+"), rpsText(r), intervalText(r.RPS),
			fmt.Sprintf("%.1f%%", 100*r.RPS.CV), cpu, perCore, ms(r.P50), ms(r.P99), ms(r.P999), mem, flags(r))
	}
	if len(rows) == 0 {
		b.WriteString("| | | no server ranked | | | | | | | | | | | | | |\n")
	}
}

// markdownText keeps a server's name or a note, which may quote a server,
// from breaking the table or the list, or becoming markup: every character
// with a meaning inline (code, emphasis, links, images, HTML, entities,
// strike-through, cell borders) is escaped with a backslash. Underscores
// inside words stay as they are: there they are not emphasis.
func markdownText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' && i > 0 && i+1 < len(s) && wordByte(s[i-1]) && wordByte(s[i+1]):
		case strings.IndexByte("\\`*_[]<>!|~&", c) >= 0:
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// msOf is a duration in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// serverFigures are a row's CPU, req/s per core and memory as text, n/a
// when no round had a stats reading of the server: not a measured zero.
func serverFigures(r analysis.Row) (cpu, perCore, mem string) {
	if r.ServerStats == 0 {
		return "n/a", "n/a", "n/a"
	}
	return fmt.Sprintf("%.1f%%", r.ServerCPU), fmt.Sprintf("%.0f", r.PerServerCore), mebibytes(r.MemoryBytes)
}

func machineText(h record.Hardware) string {
	return fmt.Sprintf("%s, %d cores, %.1f GiB, Docker %s", h.CPUModel, h.CPUs, float64(h.MemoryBytes)/(1<<30), h.DockerVersion)
}
