package stats

import "math"

// Levels are the noise of a ranking's figure split by level, on the log
// scale (each reads as a share of the figure, like a CV): Interval is one
// round's window mean's spread from its intervals (what measuring the
// same container again for as long would move it by), at windows of
// Window seconds; Round is each server's round-to-round spread beyond
// that (a fresh container: where its threads land, its JIT, its start);
// Shared is the part every server of a round shares (the machine's state
// then, which the paired tests cancel). Between runs is a level of its
// own, which only a comparison of two runs measures.
type Levels struct {
	Window   float64 `json:"window_seconds"`
	Interval float64 `json:"interval"`
	Round    float64 `json:"round"`
	Shared   float64 `json:"shared"`
	// Servers, Rounds and Windows are what the estimate rests on.
	Servers int `json:"servers"`
	Rounds  int `json:"rounds"`
	Windows int `json:"windows"`
}

// LevelsOf splits the noise of a ranking: n is NoiseOf the rounds
// (shared, and each server's own, which holds both the round's and the
// window's part), spreads the windows' relative standard errors from
// their intervals, windows their lengths in seconds. The window's part is
// the root mean square of the spreads; the round's what the own part
// leaves beyond it (method of moments, floored at 0). It needs a noise
// estimate and one window with a spread.
func LevelsOf(n Noise, spreads, windows []float64) (Levels, bool) {
	var ss, secs float64
	k := 0
	for i, s := range spreads {
		if s > 0 && i < len(windows) && windows[i] > 0 {
			ss += s * s
			secs += windows[i]
			k++
		}
	}
	if k == 0 || n.Servers == 0 {
		return Levels{}, false
	}
	interval := math.Sqrt(ss / float64(k))
	return Levels{Window: secs / float64(k), Interval: interval, Round: math.Sqrt(math.Max(n.Own*n.Own-interval*interval, 0)),
		Shared: n.Shared, Servers: n.Servers, Rounds: n.Rounds, Windows: k}, true
}

// Allocation is how a server's time is split into rounds and windows, and
// the spread of its mean it leaves (the part the paired tests see: the
// shared part cancels).
type Allocation struct {
	Window float64 `json:"window_seconds"`
	Rounds float64 `json:"rounds"`
	Spread float64 `json:"spread"`
}

// Window length bounds of Allocate: below a second a window holds no
// stats sample of its own; past a minute a round is a soak.
const (
	MinWindow = 1.0
	MaxWindow = 60.0
)

// Spread is the spread of a server's mean over rounds of windows of
// window seconds, at these levels: the round's part and the window's,
// whose variance falls with the window's length, over the rounds.
func (l Levels) Spread(window, rounds float64) float64 {
	if rounds <= 0 || window <= 0 || l.Window <= 0 {
		return math.Inf(1)
	}
	return math.Sqrt((l.Round*l.Round + l.Interval*l.Interval*l.Window/window) / rounds)
}

// Allocate splits a server's time into rounds and windows so that the
// spread of its mean is smallest (Kalibera & Jones 2013, two levels): a
// round costs cost seconds beyond its window (start, readiness, gate,
// warm-up, the capacity measurement), a window of T seconds has a
// variance Interval²·Window/T, and r rounds of T cost r(cost+T) = total.
// In continuous form the variance (Round² + Interval²·Window/T)(cost+T)
// /total is least at T = √(Interval²·Window·cost/Round²). Rounds are
// whole, though, and rounding them down leaves time unused: as a function
// of whole rounds r, with the window filling the time (total/r − cost),
// the variance Round²/r + Interval²·Window/(total − cost·r) is convex, so
// the best r is one of the two around the continuous optimum. Windows
// stay within [MinWindow, MaxWindow], rounds at least MinRounds (fewer
// leave the paired tests nothing).
func (l Levels) Allocate(cost, total float64) Allocation {
	window := MaxWindow
	if l.Round > 0 {
		window = math.Sqrt(l.Interval * l.Interval * l.Window * cost / (l.Round * l.Round))
	}
	window = math.Min(math.Max(window, MinWindow), MaxWindow)
	around := total / (cost + window)
	best := Allocation{Spread: math.Inf(1)}
	for _, rounds := range []float64{math.Floor(around), math.Ceil(around)} {
		rounds = math.Max(rounds, MinRounds)
		w := math.Min(total/rounds-cost, MaxWindow)
		if w < MinWindow {
			if rounds > MinRounds {
				continue // more time than there is
			}
			w = MinWindow
		}
		if a := (Allocation{Window: w, Rounds: rounds, Spread: l.Spread(w, rounds)}); a.Spread < best.Spread {
			best = a
		}
	}
	return best
}
