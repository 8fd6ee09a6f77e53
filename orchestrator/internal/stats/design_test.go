package stats

import "testing"

// The sequential design's level: Alpha over its looks at every look, and
// the conditional power below which it stops a pair.
func TestSequential(t *testing.T) {
	d := Sequential(AutoLooks, 0.05)
	for i, l := range d.Levels {
		if l != 0.0125 {
			t.Errorf("look %d: level %v, want 0.0125", i+1, l)
		}
	}
	if d.Fixed || d.Futility != Futility || d.Margin != 0.05 {
		t.Errorf("design %+v", d)
	}
	if next, ok := d.NextLook(3); !ok || next != 6 {
		t.Errorf("the look after round 3: %d %v", next, ok)
	}
	if _, ok := d.NextLook(12); ok {
		t.Error("a look after the last")
	}
}
