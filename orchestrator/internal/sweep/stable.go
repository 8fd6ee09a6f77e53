package sweep

import (
	"fmt"
	"math"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// A queue that does not keep up grows without bound: its calls in flight
// by the excess of arrivals over answers, λ − μ a second, and each call's
// latency by that backlog over the rate it is served at, (λ − μ)/μ
// seconds a second, whatever the warm-up before the window. A round is
// unstable when, over its window, either grows faster than both of:
//
//   - GrowthFloor: a latency that rises by 5 ms a second, or calls in
//     flight by 0.5% of the target a second, as a queue loaded 0.5% past
//     its capacity grows; a server that merely slows down by that little
//     within a window is not told apart from one that does not;
//   - GrowthNoise standard errors of a random walk through the series'
//     own steps (the robust spread of interval-to-interval changes): a
//     server loaded near its capacity by Poisson arrivals wanders as far
//     as that by chance within a few seconds.
//
// The growth is the Theil–Sen slope (the median of every pair of
// intervals' slopes), which a pause of the server in one or two intervals
// does not move. See the simulations of TestQueuesAreJudged.
const (
	GrowthFloor = 0.005
	GrowthNoise = 3
	// MinIntervals is the fewest intervals of a window that are judged:
	// two seconds of the series' 250 ms.
	MinIntervals = 8
)

// Unstable says why a round's load did not settle over its window, ""
// when it did or when its series cannot tell (no series, or a window
// shorter than MinIntervals).
func Unstable(target float64, r record.Result) string {
	s := r.Series
	if s == nil || s.Interval <= 0 || target <= 0 {
		return ""
	}
	step := s.Interval.Seconds()
	var latT, lat, flyT, fly []float64
	for i := range s.OK {
		start := s.Start.Add(time.Duration(i) * s.Interval)
		if mid := start.Add(s.Interval / 2); mid.Before(r.Start) || mid.After(r.End) {
			continue
		}
		t := start.Sub(r.Start).Seconds()
		if s.OK[i] > 0 && i < len(s.Mean) {
			latT, lat = append(latT, t), append(lat, s.Mean[i].Seconds())
		}
		if i < len(s.InFlight) {
			flyT, fly = append(flyT, t), append(fly, float64(s.InFlight[i])/target)
		}
	}
	if why := growth(latT, lat, step); why > 0 {
		return fmt.Sprintf("latency rose %s a second over the window (a queue growing: more than %s a second)",
			time.Duration(why*float64(time.Second)).Round(10*time.Microsecond), time.Duration(GrowthFloor*float64(time.Second)))
	}
	if why := growth(flyT, fly, step); why > 0 {
		return fmt.Sprintf("calls in flight grew by %.0f a second over the window (%.1f%% of the target; more than %.1f%%)",
			why*target, 100*why, 100*GrowthFloor)
	}
	return ""
}

// growth is a series' Theil–Sen slope a second when it is beyond both
// GrowthFloor and GrowthNoise standard errors of a random walk through
// its steps, else 0.
func growth(t, v []float64, step float64) float64 {
	if len(v) < MinIntervals {
		return 0
	}
	var slopes, steps []float64
	for i := range v {
		for j := i + 1; j < len(v); j++ {
			slopes = append(slopes, (v[j]-v[i])/(t[j]-t[i]))
		}
		if i > 0 {
			steps = append(steps, v[i]-v[i-1])
		}
	}
	slope := stats.Median(slopes)
	// A random walk's least-squares slope over K steps of spread σ has a
	// standard error of √(6/(5K))·σ a step (Theil–Sen's is close to it).
	spread := 1.4826 * mad(steps)
	noise := math.Sqrt(6/(5*float64(len(v)))) * spread / step
	if slope > GrowthFloor && slope > GrowthNoise*noise {
		return slope
	}
	return 0
}

// mad is the median absolute deviation from the median.
func mad(v []float64) float64 {
	m := stats.Median(v)
	dev := make([]float64, len(v))
	for i, x := range v {
		dev[i] = math.Abs(x - m)
	}
	return stats.Median(dev)
}
