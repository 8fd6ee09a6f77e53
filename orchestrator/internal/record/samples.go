package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// Sample is one reading of a container's stats, in the record's own form
// whatever host took it: the CPU used and the CFS throttling over
// [PreRead, Read], and the memory in use at Read.
type Sample struct {
	Read    time.Time `json:"read"`
	PreRead time.Time `json:"preread"`
	// CPUPercent is the share of one core used over the interval.
	CPUPercent  float64 `json:"cpu_percent"`
	MemoryBytes uint64  `json:"memory_bytes"`
	// CPUNanos is the CPU time used over the interval; Periods the CFS
	// periods in it, Throttled those in which the quota stopped the
	// container, ThrottledNanos the time it was stopped.
	CPUNanos       uint64 `json:"cpu_nanos"`
	Periods        uint64 `json:"periods"`
	Throttled      uint64 `json:"throttled"`
	ThrottledNanos uint64 `json:"throttled_nanos"`
}

// SamplesFile is the file of a measurement's samples of one container of
// a round ("server" or "client"), in the round's folder.
func SamplesFile(measurement, container string) string {
	return measurement + "-" + container + "-samples.jsonl"
}

// ErrNoSamples says that a round has no samples file at all.
var ErrNoSamples = errors.New("no samples file")

// ServerSamples reads the server's samples of a round's load measurement
// from the run's folder. Rounds recorded before layout 3 kept their host's
// raw stats stream instead, which the backend of that host reads.
func (r Run) ServerSamples(c Cell, server string, round int) ([]Sample, error) {
	folder := filepath.Join(r.Dir, server, CellDir(r, c), "round-"+strconv.Itoa(round))
	samples, err := readSamples(filepath.Join(folder, SamplesFile("load", "server")), decodeSamples)
	if !errors.Is(err, ErrNoSamples) {
		return samples, err
	}
	files := []string{filepath.Join(folder, "load-server-stats.jsonl")}
	if len(r.Cells) == 1 && round == 1 { // before rounds, the stream was the server folder's
		files = append(files, filepath.Join(r.Dir, server, "load-server-stats.jsonl"), filepath.Join(r.Dir, server, "server-stats.jsonl"))
	}
	address := "unix:///var/run/docker.sock" // runs that did not record their host ran on the local engine
	if r.Hosts != nil && r.Hosts.Servers != "" {
		address = r.Hosts.Servers
	}
	raw := func(rd io.Reader, each func(Sample)) error {
		return backend.ReadStats(address, rd, func(s backend.Sample) { each(SampleOf(s)) })
	}
	for _, file := range files {
		if samples, err := readSamples(file, raw); !errors.Is(err, ErrNoSamples) {
			return samples, err
		}
	}
	return nil, ErrNoSamples
}

// SampleOf is a host's sample in the record's form.
func SampleOf(s backend.Sample) Sample {
	return Sample{Read: s.Read, PreRead: s.PreRead, CPUPercent: s.CPUPercent, MemoryBytes: s.MemoryBytes,
		CPUNanos: s.CPUNanos, Periods: s.Periods, Throttled: s.Throttled, ThrottledNanos: s.ThrottledNanos}
}

func decodeSamples(rd io.Reader, each func(Sample)) error {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var s Sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return err
		}
		each(s)
	}
	return sc.Err()
}

// readSamples reads a samples file with decode; ErrNoSamples when it does
// not exist.
func readSamples(file string, decode func(io.Reader, func(Sample)) error) ([]Sample, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoSamples
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(file), err)
	}
	defer f.Close()
	var samples []Sample
	if err := decode(f, func(s Sample) { samples = append(samples, s) }); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(file), err)
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("%s holds no sample", filepath.Base(file))
	}
	return samples, nil
}
