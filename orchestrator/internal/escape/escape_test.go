package escape

import "testing"

func TestText(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, lines string
	}{
		{"plain text is kept", `grpc-status Internal: broken "on" purpose \ 50%`, `grpc-status Internal: broken "on" purpose \ 50%`, ""},
		{"non-ASCII letters are kept", "Größe überschritten – 超过", "Größe überschritten – 超过", ""},
		{"a terminal colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, ""},
		{"a forged line", "ok\n! go_grpc: ranked first\r", `ok\n! go_grpc: ranked first\r`, "ok\n! go_grpc: ranked first\\r"},
		{"a tab and a NUL", "a\tb\x00c", `a\tb\x00c`, ""},
		{"a right-to-left override", "abc\u202edef", `abc\u202edef`, ""},
		{"a bell and delete", "\a\x7f", `\a\x7f`, ""},
		{"bytes that are not UTF-8", "bad \xff\xfe end", `bad \xff\xfe end`, ""},
		{"the replacement character itself is printable", "\ufffd", "\ufffd", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
			}
			want := tc.lines
			if want == "" {
				want = tc.want
			}
			if got := Lines(tc.in); got != want {
				t.Errorf("Lines(%q) = %q, want %q", tc.in, got, want)
			}
		})
	}
}
