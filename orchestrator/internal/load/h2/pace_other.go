//go:build !linux

package h2

import "time"

// fineTimer is the runtime's sleep elsewhere: the fine timer is written
// for Linux only.
type fineTimer struct{}

func newFineTimer() *fineTimer           { return nil }
func (*fineTimer) sleep(d time.Duration) { time.Sleep(d) }
func (*fineTimer) close()                {}
