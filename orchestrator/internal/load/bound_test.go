package load

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBound: a result with a thousand distinct long messages keeps the
// most frequent MaxDistinct, cut to MaxMessage bytes on a character's
// boundary, the rest counted under Others; OK is always kept; nothing is
// lost from the counts, and bounding again changes nothing.
func TestBound(t *testing.T) {
	long := strings.Repeat("é", MaxMessage) // two bytes a character
	r := Result{Errors: map[string]uint64{}, Statuses: map[string]uint64{"OK": 1}}
	var total, statuses uint64
	for i := range 1000 {
		n := uint64(i + 1)
		r.Errors[fmt.Sprintf("%04d %s", i, long)] = n
		r.Statuses[fmt.Sprintf("Code(%d)", 17+i)] = n
		total += n
		statuses += n
	}
	r.Bound()
	if len(r.Errors) != MaxDistinct+1 || len(r.Statuses) != MaxDistinct+2 {
		t.Errorf("kept %d messages and %d status names, want %d and %d", len(r.Errors), len(r.Statuses), MaxDistinct+1, MaxDistinct+2)
	}
	if r.Statuses["OK"] != 1 || r.Statuses["Code(1016)"] != 1000 || r.Statuses["Code(17)"] != 0 {
		t.Errorf("statuses %v: want OK and the most frequent kept", r.Statuses)
	}
	var sum uint64
	for msg, n := range r.Errors {
		sum += n
		if len(msg) > MaxMessage || !utf8.ValidString(msg) {
			t.Errorf("message of %d bytes kept (valid UTF-8: %v): %q", len(msg), utf8.ValidString(msg), msg)
		}
	}
	if sum != total || r.Errors[Others] == 0 {
		t.Errorf("the messages kept count %d calls of %d, %d under %q", sum, total, r.Errors[Others], Others)
	}
	again := Result{Errors: maps.Clone(r.Errors), Statuses: maps.Clone(r.Statuses)}
	again.Bound()
	if !maps.Equal(again.Errors, r.Errors) || !maps.Equal(again.Statuses, r.Statuses) {
		t.Error("bounding a bounded result changed it")
	}
	few := Result{Errors: map[string]uint64{"broken on purpose": 3}}
	few.Bound()
	if !maps.Equal(few.Errors, map[string]uint64{"broken on purpose": 3}) || few.Statuses != nil {
		t.Errorf("a result within the bounds was changed: %v, %v", few.Errors, few.Statuses)
	}
}
