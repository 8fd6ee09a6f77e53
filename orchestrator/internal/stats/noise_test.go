package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// NoiseOf recovers the two parts of synthetic runs drawn as the
// simulation draws them, on average over many runs, with rounds missing
// here and there as failed or resumed servers leave them.
func TestNoiseOfRecoversBothParts(t *testing.T) {
	for _, tc := range []struct{ shared, own float64 }{{0.10, 0.065}, {0, 0.05}, {0.2, 0.02}} {
		rng := rand.New(rand.NewPCG(8, 1))
		var sumShared, sumOwn float64
		const runs = 400
		for range runs {
			samples := make([]Sample, 12)
			for r := 1; r <= 6; r++ {
				shared := rng.NormFloat64() * tc.shared
				for i := range samples {
					if rng.IntN(10) == 0 {
						continue // a round this server lacks
					}
					samples[i].Rounds = append(samples[i].Rounds, r)
					samples[i].Values = append(samples[i].Values, float64(1000*(i+1))*math.Exp(shared+rng.NormFloat64()*tc.own))
				}
			}
			n, ok := NoiseOf(samples)
			if !ok {
				t.Fatal("no estimate from 12 servers of 6 rounds")
			}
			sumShared += n.Shared
			sumOwn += n.Own
		}
		shared, own := sumShared/runs, sumOwn/runs
		t.Logf("drawn shared %.3f own %.3f: estimated %.4f %.4f", tc.shared, tc.own, shared, own)
		if math.Abs(own-tc.own) > 0.1*tc.own || math.Abs(shared-tc.shared) > 0.1*tc.shared+0.01 {
			t.Errorf("drawn shared %.3f own %.3f, estimated %.4f %.4f", tc.shared, tc.own, shared, own)
		}
	}
}

func TestNoiseOfNeedsRounds(t *testing.T) {
	if _, ok := NoiseOf([]Sample{sample("a", 1, 2), sample("b", 2, 3)}); ok {
		t.Error("an estimate from 2 rounds")
	}
	if _, ok := NoiseOf([]Sample{sample("a", 1, 2, 3)}); ok {
		t.Error("an estimate from one server")
	}
}
