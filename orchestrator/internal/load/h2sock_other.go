//go:build !linux

package load

// useRaw leaves a socket to net.Conn's reads and the writer goroutine's
// writes: raw calls are written for Linux only.
func (s *sock) useRaw() {}
