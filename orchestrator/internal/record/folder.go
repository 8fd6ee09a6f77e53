package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Folder is a run's results folder: every file of a run is written through
// it, whole or not at all.
type Folder struct{ Dir string }

// NewFolder creates the folder of a new run under parent, named id, or
// id-2, id-3, ... when that name is taken: creating a folder is atomic, so
// two runs started in the same second never share one.
func NewFolder(parent, id string) (Folder, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Folder{}, fmt.Errorf("create the results folder: %w", err)
	}
	for n := 1; ; n++ {
		name := id
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return Folder{Dir: dir}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return Folder{}, fmt.Errorf("create the results folder: %w", err)
		}
	}
}

// Writable makes sure runs can be written under parent: it exists or can
// be made, is a folder, and takes a file. It is how settings are checked
// before anything starts.
func Writable(parent string) error {
	if info, err := os.Stat(parent); err == nil && !info.IsDir() {
		return errors.New("is a file, not a folder")
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("cannot be created: %w", err)
	}
	f, err := os.CreateTemp(parent, ".grpcbench-write-test-*")
	if err != nil {
		return fmt.Errorf("cannot be written to: %w", err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// Path is the path of a file of the folder.
func (f Folder) Path(name ...string) string {
	return filepath.Join(append([]string{f.Dir}, name...)...)
}

// Sub is a sub-folder, created if missing.
func (f Folder) Sub(name ...string) (Folder, error) {
	dir := f.Path(name...)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Folder{}, err
	}
	return Folder{Dir: dir}, nil
}

// Create opens a file of the folder for writing from the start, for logs
// that grow while they are written.
func (f Folder) Create(name string) (*os.File, error) {
	return os.Create(f.Path(name))
}

// Write replaces a file of the folder whole: it writes a temporary file,
// syncs it, renames it over the old one and syncs the folder, so a run
// killed while saving, or a full disk, leaves the previous complete version
// and no temporary behind.
func (f Folder) Write(name string, data []byte) (err error) {
	path := f.Path(name)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp makes it 0600
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// WriteJSON writes v as indented JSON.
func (f Folder) WriteJSON(name string, v any) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return f.Write(name, append(js, '\n'))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Save writes the run's record, results.json, in the current layout.
func Save(f Folder, run Run) error {
	run.Version = Version
	return f.WriteJSON("results.json", run)
}

// CellDir is the folder of a cell's rounds inside a server's folder, where
// the bench puts them: none in a run of one cell; a rate cell's names its
// rate (complex_proto_cpu1_rate25pct) or its probe.
func CellDir(run Run, c Cell) string {
	if len(run.Cells) == 1 {
		return ""
	}
	name := c.Scenario + "_cpu" + strconv.FormatFloat(c.ServerCPUs, 'f', -1, 64)
	if c.Profile != "" {
		name += "_" + c.Profile
	}
	if c.TLS {
		name += "_tls"
	}
	switch {
	case c.Rate.Share > 0:
		name += "_rate" + strconv.FormatFloat(100*c.Rate.Share, 'f', -1, 64) + "pct"
	case c.Rate.PerSecond > 0:
		name += "_rate" + strconv.FormatFloat(c.Rate.PerSecond, 'f', -1, 64)
	case c.Probe > 0:
		name += fmt.Sprintf("_probe%d", c.Probe)
	}
	return name
}

// Load reads the record of the run in dir, in the current layout or one
// before it (legacy.go); a layout of a later version than this binary
// knows is refused rather than misread.
func Load(dir string) (Run, error) {
	js, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return Run{}, fmt.Errorf("read the run in %s: %w", dir, err)
	}
	run, err := decode(js)
	if err != nil {
		return run, fmt.Errorf("read the run in %s: results.json: %w", dir, err)
	}
	if run.ID == "" {
		return run, fmt.Errorf("read the run in %s: results.json holds no run", dir)
	}
	run.Dir = dir
	return run, nil
}

// decode reads results.json of any layout this binary knows.
func decode(js []byte) (Run, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return Run{}, err
	}
	switch {
	case head.Version == nil:
		return fromUnversioned(js)
	case *head.Version == Version:
		var run Run
		err := json.Unmarshal(js, &run)
		return run, err
	}
	return Run{}, fmt.Errorf("layout version %d, and this grpcbench reads versions 1 to %d: read it with the grpcbench that wrote it", *head.Version, Version)
}
