// Package testfiles writes the files a test sets up, reads them back, and
// compares output with golden files.
package testfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write writes content to path, making its folders; a failure ends the test.
func Write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Read returns the file at path as text; a failure ends the test.
func Read(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Manifest is a server.json for a test's server folder, which is built on
// no project's library: its version is unchecked.
const Manifest = `{"stack": "test", "library": "none", "version": "0", "pinned": {"unchecked": "a test server"}}` + "\n"

// Golden compares got with the golden file at path, or, with update,
// rewrites the file first; a difference fails the test, listing the lines
// that differ.
func Golden(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		Write(t, path, got)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n%s", path, LineDiff(string(want), got))
	}
}

// LineDiff lists the lines that differ, numbered, with both versions.
func LineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}
