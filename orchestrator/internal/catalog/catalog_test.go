package catalog

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEveryServerFolderIsComplete keeps a new server folder from skipping
// what every server has: a Dockerfile, a README that says how it is built
// and how it sizes its threads, and a .dockerignore that keeps build
// outputs out of the build context.
func TestEveryServerFolderIsComplete(t *testing.T) {
	cat, err := Open(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Servers) < 15 {
		t.Fatalf("only %d servers found: %v", len(cat.Servers), cat.Servers)
	}
	for _, name := range cat.Servers {
		for _, f := range []string{"Dockerfile", "README.md", ".dockerignore"} {
			if _, err := os.Stat(filepath.Join(cat.ServerDir(name), f)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}
