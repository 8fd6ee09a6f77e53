package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Save writes bench.txt and results.json into dir. Each file is replaced
// whole (write, then rename), so a run killed while saving leaves the
// previous complete version rather than half a file.
func Save(dir string, run Run) error {
	var bench bytes.Buffer
	if err := WriteBench(&bench, run); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "bench.txt"), bench.Bytes()); err != nil {
		return err
	}
	return WriteJSON(filepath.Join(dir, "results.json"), run)
}

// WriteJSON writes v as indented JSON to path.
func WriteJSON(path string, v any) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return writeFile(path, append(js, '\n'))
}

func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
