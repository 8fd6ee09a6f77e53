package steady

import "time"

// Rule ends a warm-up once its series is steady: it has lasted Min, its
// MSER-5 truncation lies in the first half of it (so the steady stretch is
// at least as long as the transient before it), and that stretch does not
// still rise by more than Rise of its mean, significantly (at RiseLevel).
// The load tool that runs the warm-up applies it as its series grows; the
// warm-up's cap is the load's own (load.Spec.Warmup).
type Rule struct {
	Min  time.Duration `json:"min"`
	Rise float64       `json:"rise"`
}

// Default is the rule of GRPC_BENCHMARK_WARMUP=auto: no shorter than the
// five batches MSER-5 decides on at 250 ms intervals, and a steady
// stretch that rises by at most 2%. On synthetic series
// (TestRuleOnSynthetic, medians of 300 draws) it ends a flat one at 6.25 s
// whatever its noise, and one that climbs from 10% of its speed with a
// time constant of 5 s at 37.5 s when its intervals' CV is 3% (no window
// after it more than 5% low) and at 20 s when it is 10% (a quarter of the
// windows after it still 5–15% low: the noise hides the rest of the
// climb).
var Default = Rule{Min: 6250 * time.Millisecond, Rise: 0.02}

// RiseLevel is the significance at which a steady stretch's rise keeps a
// warm-up going.
const RiseLevel = 0.05

// Ended says whether speeds, one per interval from the load's start
// (Speeds), are past their warm-up.
func (r Rule) Ended(speeds []float64, interval time.Duration) bool {
	if time.Duration(len(speeds))*interval < r.Min {
		return false
	}
	values := speeds
	cut, ok := Truncation(values)
	if !ok {
		return false
	}
	t := TrendOf(values[cut:])
	return !(t.Change > r.Rise && t.P < RiseLevel)
}

// Speeds are a series read as a server's speed, interval by interval:
// the calls completed in each (ok), or when paced, where those are the
// rate's whatever the server's state, the reciprocal of their mean
// latency in seconds (0 for an interval without calls).
func Speeds(ok []uint64, mean []time.Duration, paced bool) []float64 {
	if !paced {
		out := make([]float64, len(ok))
		for i, c := range ok {
			out[i] = float64(c)
		}
		return out
	}
	out := make([]float64, len(mean))
	for i, m := range mean {
		if m > 0 {
			out[i] = 1 / m.Seconds()
		}
	}
	return out
}
