// Package testfiles writes the files a test sets up.
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
