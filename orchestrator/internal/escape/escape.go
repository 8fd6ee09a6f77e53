// Package escape shows text that came from a server or a build (a
// grpc-status message, a log line, build output) without letting it act on
// what displays it: control and format characters, and bytes that are not
// UTF-8, are written as Go escapes (\x1b, \n, \u202e), so that a terminal
// runs no escape sequence and a line cannot forge another.
package escape

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text is s with every character that is not printable (a space excepted)
// written as its escape; printable text, backslashes included, is kept.
func Text(s string) string {
	return show(s, false)
}

// Lines is Text that keeps line breaks: for a message of several lines of
// its own, such as a list of refused settings.
func Lines(s string) string {
	return show(s, true)
}

func show(s string, keepNewlines bool) string {
	shown := func(r rune) bool { return r == ' ' || unicode.IsPrint(r) || keepNewlines && r == '\n' }
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !shown(r) }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case shown(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
