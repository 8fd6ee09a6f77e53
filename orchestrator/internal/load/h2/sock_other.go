//go:build !linux

package h2

// useRaw leaves a socket to net.Conn's reads and the writer goroutine's
// writes: raw calls are written for Linux only.
func (s *sock) useRaw() {}
