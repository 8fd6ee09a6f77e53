package suite

import "time"

// Observer hears what a server is doing, for a progress display.
type Observer interface {
	// Phase says what the server is doing; d is how long a timed phase
	// lasts, 0 for the others.
	Phase(name string, d time.Duration)
	// Rate is the live rate of OK calls while a load runs.
	Rate(rps float64)
}

type noObserver struct{}

func (noObserver) Phase(string, time.Duration) {}
func (noObserver) Rate(float64)                {}
