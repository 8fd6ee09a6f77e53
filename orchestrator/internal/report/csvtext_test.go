package report

import "testing"

// TestCSVText: a text cell a spreadsheet would take for a formula gets a
// leading '; other text is kept.
func TestCSVText(t *testing.T) {
	for in, want := range map[string]string{
		"=HYPERLINK(\"http://evil\")": "'=HYPERLINK(\"http://evil\")",
		"+1+cmd":                      "'+1+cmd",
		"-2+3":                        "'-2+3",
		"@SUM(A1)":                    "'@SUM(A1)",
		"\tx":                         "'\tx",
		"\rx":                         "'\rx",
		"round 1, load failed: =1":    "round 1, load failed: =1",
		"":                            "",
	} {
		if got := csvText(in); got != want {
			t.Errorf("csvText(%q) = %q, want %q", in, got, want)
		}
	}
}
