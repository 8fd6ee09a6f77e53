package scratch

import (
	"os"
	"testing"
)

// TestRemoveAllTakesWhatIsLeft: folders already removed are not touched
// again, the others go.
func TestRemoveAllTakesWhatIsLeft(t *testing.T) {
	done, removeDone, err := Dir("grpcbench-test-")
	if err != nil {
		t.Fatal(err)
	}
	left, _, err := Dir("grpcbench-test-")
	if err != nil {
		t.Fatal(err)
	}
	removeDone()
	if err := os.Mkdir(done, 0o755); err != nil { // someone else's now
		t.Fatal(err)
	}
	defer os.Remove(done)
	if err := RemoveAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", left, err)
	}
	if _, err := os.Stat(done); err != nil {
		t.Errorf("RemoveAll removed a folder already given back: %v", err)
	}
}
