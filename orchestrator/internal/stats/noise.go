package stats

import "math"

// Noise splits the spread of a ranking's rounds in two, on the log scale
// (so each part reads as a share of the figure, like a CV): the part every
// server of a round shares — the machine's state during that round, which
// interleaving spreads over all servers and the paired tests cancel — and
// each server's own, which alone decides how small a gap the rounds can
// resolve.
type Noise struct {
	Shared float64 `json:"shared"`
	Own    float64 `json:"own"`
	// Servers and Rounds are what the estimate rests on.
	Servers int `json:"servers"`
	Rounds  int `json:"rounds"`
}

// NoiseOf fits log(value) = server + round + residual by alternating
// means, which copes with servers that miss rounds. Own is the residuals'
// standard deviation over their degrees of freedom; Shared is the round
// effects' spread less what the servers' own noise adds to their means
// (method of moments, floored at 0). It needs 2 servers with 3 rounds in
// common; ok is false otherwise.
func NoiseOf(samples []Sample) (n Noise, ok bool) {
	type cell struct {
		server, round int
		log           float64
	}
	var cells []cell
	roundIndex := map[int]int{}
	for si, s := range samples {
		for i, r := range s.Rounds {
			if s.Values[i] <= 0 {
				continue
			}
			if _, seen := roundIndex[r]; !seen {
				roundIndex[r] = len(roundIndex)
			}
			cells = append(cells, cell{si, roundIndex[r], math.Log(s.Values[i])})
		}
	}
	servers, rounds := len(samples), len(roundIndex)
	df := len(cells) - servers - rounds + 1
	if servers < 2 || rounds < 3 || df < 2 {
		return Noise{}, false
	}
	server, round := make([]float64, servers), make([]float64, rounds)
	for range 50 {
		fit(server, cells, func(c cell) (int, float64) { return c.server, c.log - round[c.round] })
		fit(round, cells, func(c cell) (int, float64) { return c.round, c.log - server[c.server] })
	}
	var ss float64
	for _, c := range cells {
		r := c.log - server[c.server] - round[c.round]
		ss += r * r
	}
	own := ss / float64(df)
	// A round's effect is the mean of its servers' deviations, so each
	// carries own/servers-in-the-round of their noise: take it out.
	mean, perRound := 0.0, make([]int, rounds)
	for _, c := range cells {
		perRound[c.round]++
	}
	for _, v := range round {
		mean += v / float64(rounds)
	}
	var shared float64
	for i, v := range round {
		shared += (v-mean)*(v-mean)/float64(rounds-1) - own/float64(perRound[i])/float64(rounds)
	}
	return Noise{Shared: math.Sqrt(max(shared, 0)), Own: math.Sqrt(own), Servers: servers, Rounds: rounds}, true
}

// fit sets each effect to the mean of what its cells leave once the other
// effects are taken out.
func fit[C any](effect []float64, cells []C, rest func(C) (int, float64)) {
	sum, count := make([]float64, len(effect)), make([]int, len(effect))
	for _, c := range cells {
		i, v := rest(c)
		sum[i] += v
		count[i]++
	}
	for i := range effect {
		if count[i] > 0 {
			effect[i] = sum[i] / float64(count[i])
		}
	}
}
