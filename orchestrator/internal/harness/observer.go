package harness

import "time"

// Observer hears what a server is doing, for a progress display.
type Observer interface {
	// Phase says what the server is doing; d is how long a timed phase
	// lasts, 0 for the others.
	Phase(name string, d time.Duration)
	// Rate is the live rate of OK calls (or of a stream's messages) while a
	// load runs, in unit (scenario.Kind.RateUnit).
	Rate(rate float64, unit string)
}

type noObserver struct{}

func (noObserver) Phase(string, time.Duration) {}
func (noObserver) Rate(float64, string)        {}
