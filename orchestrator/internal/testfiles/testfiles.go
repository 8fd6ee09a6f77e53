// Package testfiles writes the files a test sets up, and reads them back.
package testfiles

import (
	"os"
	"path/filepath"
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
