package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

func TestStatic(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "main.go")
	if err := os.WriteFile(main, []byte("package main\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(dir, "static")
	build := exec.Command("go", "build", "-o", static, main)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !Static(static, runtime.GOARCH) {
		t.Error("a static Linux binary of this architecture is not taken")
	}
	if Static(static, "riscv64") {
		t.Error("a binary of another architecture is taken")
	}
	if Static("/bin/sh", runtime.GOARCH) {
		t.Error("a dynamically linked binary is taken")
	}
	if Static(main, runtime.GOARCH) {
		t.Error("a source file is taken")
	}
}
