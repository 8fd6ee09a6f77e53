// Package steady reads a load's series, the calls completed interval by
// interval: when its warm-up is over (MSER-5 truncation), whether a
// measurement window is steady (a trend test over its intervals), and how
// much a window's mean moves from interval to interval.
package steady

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Batch is MSER-5's batch: the series is read as means of 5 intervals.
const Batch = 5

// MinBatches is the fewest batches Truncation decides on: with 4, its
// search (down to 2 batches left) never reaches past the half, and every
// series would read as steady.
const MinBatches = 5

// Truncation is the MSER-5 truncation point of values: how many leading
// values (a multiple of Batch) to drop so that the batch means left have
// the smallest squared standard error, Σ(b−b̄)²/(m−d)² over the m−d
// batches left (White 1997; Franklin & White 2008). ok is false while that
// point lies past the first half of the batches: the series is still
// moving, or too short to tell (fewer than MinBatches).
func Truncation(values []float64) (cut int, ok bool) {
	b := batches(values)
	m := len(b)
	if m < MinBatches {
		return 0, false
	}
	best, at := math.Inf(1), 0
	var sum, sq float64
	for d := m - 1; d >= 0; d-- {
		sum += b[d]
		sq += b[d] * b[d]
		k := float64(m - d)
		if m-d < 2 {
			continue
		}
		if v := (sq - sum*sum/k) / (k * k); v <= best {
			best, at = v, d
		}
	}
	return at * Batch, at <= m/2
}

// batches are the means of whole batches of values; a last partial batch
// is left out.
func batches(values []float64) []float64 {
	out := make([]float64, len(values)/Batch)
	for i := range out {
		var s float64
		for _, v := range values[i*Batch : (i+1)*Batch] {
			s += v
		}
		out[i] = s / Batch
	}
	return out
}

// Trend is the straight line through a stretch of a series: how much it
// changes over the stretch, as a share of the stretch's mean, and the
// two-sided p of "no change" from the slope's t statistic, its standard
// error widened for the intervals' lag-1 autocorrelation.
type Trend struct {
	Change float64 `json:"change"`
	P      float64 `json:"p"`
	// CV is the intervals' spread about the line over the mean, and Rho
	// their lag-1 autocorrelation (0 to 0.9).
	CV  float64 `json:"cv"`
	Rho float64 `json:"rho"`
	N   int     `json:"n"`
}

// TrendOf fits values against their index by least squares. With fewer
// than 4 values, or a mean of 0, there is no trend to speak of: P is 1.
func TrendOf(values []float64) Trend {
	n := len(values)
	t := Trend{P: 1, N: n}
	if n < 4 {
		return t
	}
	var mx, my float64
	for i, v := range values {
		mx += float64(i)
		my += v
	}
	mx /= float64(n)
	my /= float64(n)
	if my <= 0 {
		return t
	}
	var sxx, sxy float64
	for i, v := range values {
		dx := float64(i) - mx
		sxx += dx * dx
		sxy += dx * (v - my)
	}
	slope := sxy / sxx
	res := make([]float64, n)
	var ss float64
	for i, v := range values {
		res[i] = v - my - slope*(float64(i)-mx)
		ss += res[i] * res[i]
	}
	t.Rho = lag1(res)
	s2 := ss / float64(n-2)
	t.CV = math.Sqrt(s2) / my
	t.Change = slope * float64(n-1) / my
	se := math.Sqrt(s2 / sxx * (1 + t.Rho) / (1 - t.Rho))
	switch {
	case se == 0 && slope == 0:
		t.P = 1
	case se == 0:
		t.P = 0
	default:
		// Degrees of freedom of the effective number of intervals, which
		// autocorrelation lowers as it widens the error.
		df := max(2, float64(n)*(1-t.Rho)/(1+t.Rho)-2)
		t.P = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(slope)/se)
	}
	return t
}

// lag1 is the lag-1 autocorrelation of residuals, clamped to [0, 0.9]: a
// negative one would narrow the error, and near 1 the correction explodes.
func lag1(res []float64) float64 {
	var num, den float64
	for i, r := range res {
		den += r * r
		if i > 0 {
			num += r * res[i-1]
		}
	}
	if den == 0 {
		return 0
	}
	r := num / den
	// The estimate from a short series is biased low by about (1+4ρ)/n
	// (Marriott & Pope 1954): corrected, so that the error is not narrowed.
	r += (1 + 4*r) / float64(len(res))
	return min(max(r, 0), 0.9)
}

// MeanSpread is the relative standard error of the mean of values: the
// intervals' spread about their line over √n, widened for their
// autocorrelation, over the mean. It is what one window's figure would
// move by were the window measured again on the same container.
func (t Trend) MeanSpread() float64 {
	if t.N < 4 {
		return 0
	}
	return t.CV * math.Sqrt((1+t.Rho)/(1-t.Rho)/float64(t.N))
}

// A window is not steady when its trend is significant at WindowLevel
// and changes it by more than WindowChange: on synthetic windows of 16
// intervals (4 s) with an AR(1) noise of lag-1 correlation 0.3, a flat one
// is flagged in 0.2% of draws at any CV, one still warming up (from 10% of
// its speed, time constant 10 s, 6 s in) in 77% at a CV of 3% and 17% at
// 10% (TestWindowVerdicts logs the table).
const (
	WindowLevel  = 0.001
	WindowChange = 0.05
)

// Steady says whether a window of values, one per interval, is steady.
func (t Trend) Steady() bool { return !(t.P < WindowLevel && math.Abs(t.Change) > WindowChange) }
