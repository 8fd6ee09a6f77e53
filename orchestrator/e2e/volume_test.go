//go:build e2e

package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/mount"
)

// TestImageVolumeIsATmpfsAndTLSStaysRoots runs, over TLS, go_grpc in an
// image that declares VOLUME /data and makes /data and /tls the server's
// own (testdata/servers/volume_writer): the server's 256 MiB to /data stop
// at the 64 MiB tmpfs that covers the volume, on no volume of the
// engine's, and it cannot plant a file beside its certificate; it is
// ranked all the same.
func TestImageVolumeIsATmpfsAndTLSStaysRoots(t *testing.T) {
	api := engine(t)
	root := testServerRepo(t, "volume_writer")
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": "volume_writer", "GRPC_TLS": "on", "GRPC_BENCHMARK_DURATION": "3s"})
	var out strings.Builder
	_, done := benchInBackground(t, root, env, &out)
	server, err := api.ContainerInspect(context.Background(), waitForServer(t, done))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range server.Mounts {
		if m.Type == mount.TypeVolume && m.Destination != "/tls" {
			t.Errorf("the server has a volume at %s (%s): the image's VOLUME reached the engine's disk", m.Destination, m.Source)
		}
	}
	if opts := server.HostConfig.Tmpfs["/data"]; !strings.Contains(opts, "size=64m") {
		t.Errorf("tmpfs %v: want a size-limited tmpfs over /data", server.HostConfig.Tmpfs)
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	bench, _ := readRun(t, runFolder(t, env))
	if r, ok := parseRows(t, bench)["volume_writer"]; !ok || r.rps <= 0 {
		t.Errorf("volume_writer is not ranked:\n%s", bench)
	}
	log, err := os.ReadFile(filepath.Join(runFolder(t, env), "volume_writer", "round-1", "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server.log:\n%s", log)
	if !strings.Contains(string(log), "No space left on device") || !strings.Contains(string(log), "/data: tmpfs, ") {
		t.Errorf("the server's writes to /data did not stop at a tmpfs's end:\n%s", log)
	}
	if n := bytesIn(string(log)); n <= 0 || n > 64<<20 {
		t.Errorf("/data held %d bytes, want some, at most 64 MiB", n)
	}
	if !strings.Contains(string(log), "/tls: not writable") {
		t.Errorf("the server could write in /tls:\n%s", log)
	}
	assertNoContainersLeft(t, api)
}

// bytesIn reads "/data: tmpfs, N bytes" from the server's log.
func bytesIn(log string) int64 {
	_, rest, ok := strings.Cut(log, "/data: ")
	if !ok {
		return -1
	}
	_, rest, _ = strings.Cut(rest, ", ")
	n, _ := strconv.ParseInt(strings.TrimSuffix(strings.Fields(rest)[0], ","), 10, 64)
	return n
}

// testServerRepo is a copy of the repository with a test server name:
// go_grpc's folder under that name, with testdata/servers/<name>'s
// Dockerfile, which starts FROM go_grpc's image of the run's image name.
func testServerRepo(t *testing.T, name string) string {
	t.Helper()
	root := copyRepo(t, map[string]string{"servers/go_grpc": "servers/" + name})
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot(t), "orchestrator", "e2e", "testdata", "servers", name, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile = []byte(strings.ReplaceAll(string(dockerfile), "FROM grpcbench-test:", "FROM "+testImageName+":"))
	if err := os.WriteFile(filepath.Join(root, "servers", name, "Dockerfile"), dockerfile, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}
