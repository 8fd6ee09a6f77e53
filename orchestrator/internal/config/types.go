package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/docker/go-units"
)

// CPUs is a number of cores, possibly fractional (0.5, 1.5), as `docker run
// --cpus` takes it.
type CPUs float64

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *CPUs) UnmarshalText(b []byte) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("not a number")
	}
	*c = CPUs(f)
	return nil
}

func (c CPUs) String() string { return strconv.FormatFloat(float64(c), 'f', -1, 64) }

// MarshalText writes the number as it is read back, as JSON too.
func (c CPUs) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// NanoCPUs is the value of the Engine API's HostConfig.NanoCPUs.
func (c CPUs) NanoCPUs() int64 { return int64(math.Round(float64(c) * 1e9)) }

// Cores is the whole number of cores a thread pool needs: rounded up.
func (c CPUs) Cores() int { return int(math.Ceil(float64(c) - 1e-9)) }

// RoundCount is GRPC_BENCHMARK_ROUNDS: a number of rounds, or auto (a
// sequential design that stops when the ranking is decided).
type RoundCount struct {
	N    int
	Auto bool
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *RoundCount) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "auto" {
		*r = RoundCount{Auto: true}
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("neither a whole number nor auto")
	}
	*r = RoundCount{N: n}
	return nil
}

func (r RoundCount) String() string {
	if r.Auto {
		return "auto"
	}
	return strconv.Itoa(r.N)
}

// Bytes is a memory size written as Docker writes it (512m, 1g, 2048m).
type Bytes int64

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *Bytes) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	n, err := units.RAMInBytes(s)
	if err != nil {
		return errors.New("not a size")
	}
	// RAMInBytes multiplies in float64 and converts, and refuses negative
	// sizes: a size past int64 comes out as MinInt64 (amd64) or MaxInt64
	// (arm64) rather than failing.
	if n < 0 || n == math.MaxInt64 {
		return errors.New("too large a size")
	}
	*b = Bytes(n)
	return nil
}

// AutoBytes is a size, or auto: one the engine host's memory decides.
type AutoBytes struct {
	Auto  bool
	Bytes Bytes
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *AutoBytes) UnmarshalText(b []byte) error {
	if strings.TrimSpace(string(b)) == "auto" {
		*a = AutoBytes{Auto: true}
		return nil
	}
	a.Auto = false
	if err := a.Bytes.UnmarshalText(b); err != nil {
		return errors.New("neither auto nor a size")
	}
	return nil
}

func (a AutoBytes) String() string {
	if a.Auto {
		return "auto"
	}
	return a.Bytes.String()
}

// String writes the size in the largest unit that keeps it whole, so that
// 512m stays 512m.
func (b Bytes) String() string {
	n := int64(b)
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// Names is a list of names written separated by spaces or commas.
type Names []string

// UnmarshalText implements encoding.TextUnmarshaler.
func (n *Names) UnmarshalText(b []byte) error {
	*n = strings.FieldsFunc(string(b), func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	return nil
}

func (n Names) String() string { return strings.Join(n, " ") }

// imageName is the grammar of a Docker repository name (without a tag).
var imageName = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)

// CPUList is one CPU limit or several, comma-separated (1,2).
type CPUList []CPUs

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *CPUList) UnmarshalText(b []byte) error {
	var out CPUList
	for _, f := range strings.Split(string(b), ",") {
		var c CPUs
		if err := c.UnmarshalText([]byte(f)); err != nil {
			return fmt.Errorf("%q is not a number", strings.TrimSpace(f))
		}
		out = append(out, c)
	}
	*l = out
	return nil
}

// Strings lists the limits as text.
func (l CPUList) Strings() []string {
	out := make([]string, len(l))
	for i, c := range l {
		out[i] = c.String()
	}
	return out
}

func (l CPUList) String() string { return strings.Join(l.Strings(), ",") }

// ClientCPUs is the load client's CPU limit: a number of cores, or auto.
type ClientCPUs struct {
	Auto bool
	CPUs CPUs
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *ClientCPUs) UnmarshalText(b []byte) error {
	if strings.TrimSpace(string(b)) == "auto" {
		*c = ClientCPUs{Auto: true}
		return nil
	}
	c.Auto = false
	if err := c.CPUs.UnmarshalText(b); err != nil {
		return errors.New("neither auto nor a number")
	}
	return nil
}

func (c ClientCPUs) String() string {
	if c.Auto {
		return "auto"
	}
	return c.CPUs.String()
}
