package report

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// usageSeries is one server's CPU and memory over time, a line per round,
// in seconds from the start of each round's load (its warm-up).
type usageSeries struct {
	CPU, Memory []plotter.XYs
	// Warmup and Window are the warm-up and the measured window of the
	// first round measured, on the same time axis.
	Warmup, Window [2]float64
	// Missing says which rounds have no stats stream to read, and why.
	Missing []string
}

// readUsage reads the server stats streams of a server's rounds from the
// run's folder dir. A missing or unreadable stream is named in Missing,
// not an error: the page says so and shows the rest.
func readUsage(run record.Run, c record.Cell, s record.Server) usageSeries {
	var u usageSeries
	var absent []string // rounds without a stats file
	windowSet := false
	for _, r := range s.Rounds {
		start := loadStart(r)
		if start.IsZero() {
			u.Missing = append(u.Missing, fmt.Sprintf("round %d: no load phase", r.Round))
			continue
		}
		samples, err := run.ServerSamples(c, s.Name, r.Round)
		if errors.Is(err, record.ErrNoSamples) {
			absent = append(absent, strconv.Itoa(r.Round))
			continue
		}
		if err != nil {
			u.Missing = append(u.Missing, fmt.Sprintf("round %d: %v", r.Round, err))
			continue
		}
		var cpu, mem plotter.XYs
		for _, sm := range samples {
			// CPU is the share over the interval between two readings,
			// so it belongs to the interval's middle; memory to the
			// reading.
			mid := sm.PreRead.Add(sm.Read.Sub(sm.PreRead) / 2)
			cpu = append(cpu, plotter.XY{X: mid.Sub(start).Seconds(), Y: sm.CPUPercent})
			mem = append(mem, plotter.XY{X: sm.Read.Sub(start).Seconds(), Y: float64(sm.MemoryBytes) / (1 << 20)})
		}
		u.CPU, u.Memory = append(u.CPU, cpu), append(u.Memory, mem)
		if !windowSet && r.Load != nil && !r.Load.Start.IsZero() {
			u.Warmup = [2]float64{0, r.Load.Start.Sub(start).Seconds()}
			u.Window = [2]float64{r.Load.Start.Sub(start).Seconds(), r.Load.End.Sub(start).Seconds()}
			windowSet = true
		}
	}
	if len(absent) > 0 {
		word := "round"
		if len(absent) > 1 {
			word = "rounds"
		}
		u.Missing = append(u.Missing, fmt.Sprintf("%s %s: no samples file (%s)", word, strings.Join(absent, ", "),
			filepath.Join(s.Name, record.CellDir(run, c), "round-N", record.SamplesFile("load", "server"))))
	}
	return u
}

// span is the time axis of both charts: from the start of the load (or
// an earlier sample) to the last sample or the end of the window.
func (u usageSeries) span() [2]float64 {
	lo, hi := 0.0, u.Window[1]
	for _, series := range [][]plotter.XYs{u.CPU, u.Memory} {
		for _, pts := range series {
			for _, pt := range pts {
				lo, hi = min(lo, pt.X), max(hi, pt.X)
			}
		}
	}
	return [2]float64{lo, hi}
}

// loadStart is when a round's load client started: the start of its
// "load" phase.
func loadStart(r record.Round) time.Time {
	for _, p := range r.Phases {
		if p.Name == "load" {
			return p.Start
		}
	}
	return time.Time{}
}
