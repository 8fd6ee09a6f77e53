package h2

// The server's SETTINGS: what a connection may send, and how.

import (
	"bytes"
	"time"

	"golang.org/x/net/http2"
)

// HTTP/2's initial settings, in force until the server's SETTINGS say
// otherwise (RFC 9113, section 6.5.2).
const (
	defaultWindow    = 65535
	defaultMaxFrame  = 16384
	defaultTableSize = 4096
)

// onSettings applies the server's settings and owes it an ack. The first
// SETTINGS also chooses the header blocks the connection sends.
func (c *conn) onSettings(f *http2.SettingsFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingMaxConcurrentStreams:
			c.maxStreams = s.Val
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - c.initialWindow
			c.initialWindow = int64(s.Val)
			for i := range c.ring {
				if c.ring[i].active {
					c.ring[i].sendWindow += delta
				}
			}
		case http2.SettingMaxFrameSize:
			// Frames may be smaller than the server allows; keeping them
			// to the default size bounds what one call takes in the buffer.
			c.maxFrame = min(int(s.Val), defaultMaxFrame)
		case http2.SettingHeaderTableSize:
			if s.Val < c.call.tableSize && c.settled && bytes.Equal(c.block, c.call.indexedBlock) {
				// The server shrank the table our indices point into:
				// finish what is in flight, go on on a new connection.
				c.stopping = true
			}
			c.peerTableSize = s.Val
		}
		return nil
	})
	if !c.settled {
		c.block, c.first = c.call.indexedBlock, c.call.firstBlock
		if c.peerTableSize < c.call.tableSize {
			c.block, c.first = c.call.plainBlock, nil
		}
		c.template = requestTemplate(c.block, c.call.body, c.call.firstSend())
		if derr := c.nc.SetReadDeadline(time.Time{}); derr != nil && err == nil {
			err = derr
		}
	}
	c.settled = true
	c.settingsAcks++
	return err
}
