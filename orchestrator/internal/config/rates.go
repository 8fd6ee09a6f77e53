package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is one target rate of a sweep: req/s, or a share of the server's
// capacity measured in the same run.
type Rate struct {
	// PerSecond is an absolute rate; Share a fraction of capacity (0.25
	// for 25%). One of the two is set.
	PerSecond float64 `json:"rate_rps,omitempty"`
	Share     float64 `json:"rate_share,omitempty"`
}

// String writes the rate as it is given: 5000, or 25%.
func (r Rate) String() string {
	if r.Share > 0 {
		return strconv.FormatFloat(100*r.Share, 'f', -1, 64) + "%"
	}
	return strconv.FormatFloat(r.PerSecond, 'f', -1, 64)
}

// Rates is GRPC_LOAD_RATES: absolute rates, or shares of capacity, not
// both: a share is only known once the server's capacity is, so a list
// that mixes them would sweep each server over a different set of
// absolute rates and a common one at once, which no chart reads well.
type Rates []Rate

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *Rates) UnmarshalText(b []byte) error {
	var out Rates
	shares := 0
	for _, f := range strings.FieldsFunc(string(b), func(r rune) bool { return r == ',' || r == ' ' }) {
		num, share := strings.CutSuffix(f, "%")
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v != v {
			return fmt.Errorf("%q is neither a rate in req/s nor a share of capacity such as 25%%", f)
		}
		if share {
			shares++
			out = append(out, Rate{Share: v / 100})
		} else {
			out = append(out, Rate{PerSecond: v})
		}
	}
	if shares > 0 && shares < len(out) {
		return errors.New("mixes rates in req/s with shares of capacity; give one kind")
	}
	*l = out
	return nil
}

func (l Rates) String() string { return strings.Join(l.Strings(), ",") }

// Bounds of GRPC_LOAD_RATES: a share above MaxRateShare only measures
// overload further past the knee.
const MaxRateShare = 2.0

// SLOPercentiles are the latency percentiles a result keeps, by the
// names GRPC_LATENCY_SLO takes.
var SLOPercentiles = []string{"p50", "p90", "p95", "p99", "p99.9"}

// SLO is GRPC_LATENCY_SLO: a latency percentile and the bound it must stay
// under, p99<10ms.
type SLO struct {
	Percentile string
	Bound      time.Duration
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *SLO) UnmarshalText(b []byte) error {
	text := strings.TrimSpace(string(b))
	if text == "" {
		*s = SLO{}
		return nil
	}
	name, bound, ok := strings.Cut(text, "<")
	if !ok {
		return errors.New("not a percentile<bound such as p99<10ms")
	}
	d, err := time.ParseDuration(strings.TrimSpace(bound))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 10ms", strings.TrimSpace(bound))
	}
	*s = SLO{Percentile: strings.TrimSpace(name), Bound: d}
	return nil
}

// Set says an objective was given.
func (s SLO) Set() bool { return s.Percentile != "" }

func (s SLO) String() string {
	if !s.Set() {
		return ""
	}
	return s.Percentile + "<" + s.Bound.String()
}

// Strings lists the rates as text.
func (l Rates) Strings() []string {
	parts := make([]string, len(l))
	for i, r := range l {
		parts[i] = r.String()
	}
	return parts
}

// percent writes a share as a percentage: 0.25 as 25%.
func percent(share float64) string { return Rate{Share: share}.String() }
