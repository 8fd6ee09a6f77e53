package histogram_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/histogram"
)

// exponential draws a latency of mean 1 ms; its quantile q is −ln(1−q) ms.
func exponential(rng *rand.Rand) time.Duration {
	return time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
}

func trueQuantile(q float64) time.Duration {
	return time.Duration(-math.Log(1-q) * float64(time.Millisecond))
}

// TestUpperBoundCovers: the 95% upper bound of p99 from 2000 calls lies at
// or above the true p99 in at least 95% of 1000 simulated samples, and not
// far more (a bound that always covers says nothing).
func TestUpperBoundCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials, n, q = 1000, 2000, 0.99
	covered := 0
	for range trials {
		p := histogram.New()
		for range n {
			p.Record(exponential(rng), 1)
		}
		bound, ok := p.Upper(q, histogram.Confidence)
		if !ok {
			t.Fatal("2000 calls give no upper bound of p99")
		}
		if bound >= trueQuantile(q) {
			covered++
		}
	}
	share := float64(covered) / trials
	t.Logf("the 95%% bound of p99 from %d calls covered the true p99 in %.1f%% of %d samples", n, 100*share, trials)
	if share < 0.95 || share > 0.98 {
		t.Errorf("the bound covered the true p99 in %.1f%% of samples, want 95–98%%", 100*share)
	}
}

// TestPoolMergesRounds: rounds' encoded histograms merged give the
// percentiles of all their calls together, and calls without an answer sit
// above every latency.
func TestPoolMergesRounds(t *testing.T) {
	whole, pooled := histogram.New(), histogram.New()
	for r := range 3 {
		round := histogram.New()
		for i := range 1000 {
			d := time.Duration(r*1000+i+1) * time.Microsecond
			round.Record(d, 1)
			whole.Record(d, 1)
		}
		enc, err := round.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := pooled.Add(enc, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		if pooled.At(q) != whole.At(q) {
			t.Errorf("pooled p%g = %s, want %s", 100*q, pooled.At(q), whole.At(q))
		}
	}
	if got := pooled.At(0.5); got < 1490*time.Microsecond || got > 1510*time.Microsecond {
		t.Errorf("median of 1–3000 µs = %s", got)
	}
	if err := pooled.Add("", 40); err == nil {
		t.Error("an empty histogram was read")
	}
	hung := histogram.New()
	hung.Record(time.Millisecond, 985)
	hung.Record(histogram.Infinite, 15)
	if hung.At(0.98) != time.Millisecond || hung.At(0.99) != histogram.Infinite {
		t.Errorf("985 answered in 1 ms and 15 never: p98 %s, p99 %s; want 1ms and infinite", hung.At(0.98), hung.At(0.99))
	}
}

// TestSupports: a percentile is shown from MinTail calls above it.
func TestSupports(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		q    float64
		want bool
	}{
		{1000, 0.99, true}, {999, 0.99, false}, {10_000, 0.999, true}, {2000, 0.9999, false},
		{100_000, 0.9999, true}, {99_999, 0.9999, false}, {1_000_000, 0.99999, true},
	} {
		if got := histogram.Supports(tc.n, tc.q); got != tc.want {
			t.Errorf("Supports(%d, %g) = %v", tc.n, tc.q, got)
		}
	}
	p := histogram.New()
	p.Record(time.Millisecond, 5)
	if _, ok := p.Upper(0.99, histogram.Confidence); ok {
		t.Error("5 calls bound p99")
	}
}
