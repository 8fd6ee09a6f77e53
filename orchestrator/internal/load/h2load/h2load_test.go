package h2load

import (
	"math"
	"os"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	out, err := os.ReadFile("testdata/h2load-2b.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(string(out))
	if err != nil {
		t.Fatal(err)
	}
	// The main duration's rate, not requests over the whole run with its warm-up.
	if math.Abs(res.RPS-21334.2) > 0.01 || res.OK != 213342 || res.Requests != 213342 {
		t.Errorf("rps %v ok %d requests %d", res.RPS, res.OK, res.Requests)
	}
	if res.Latency.Mean != 4470*time.Microsecond || res.Latency.Max != 105050*time.Microsecond {
		t.Errorf("latency %+v", res.Latency)
	}
	if _, err := Parse("connect: connection refused\n"); err == nil {
		t.Error("a failed h2load run parsed")
	}
}
