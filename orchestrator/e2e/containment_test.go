//go:build e2e

package e2e_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// TestContainment reads the containment of a run's server and load client
// back from the engine while they run: what the README promises, as Docker
// applied it.
func TestContainment(t *testing.T) {
	api := engine(t)
	env := benchEnv(t, map[string]string{"GRPC_BENCHMARK_DURATION": "8s"})
	_, done := benchInBackground(t, repoRoot(t), env, nil)

	seen := map[string]container.InspectResponse{}
	ctx := context.Background()
	deadline := time.After(3 * time.Minute)
	for len(seen) < 2 {
		select {
		case err := <-done:
			t.Fatalf("the run ended (%v) before both its server and its load client were seen: %v", err, keys(seen))
		case <-deadline:
			t.Fatalf("no server and load client running after 3 minutes: saw %v", keys(seen))
		case <-time.After(200 * time.Millisecond):
		}
		list, err := api.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "io.grpcbench.images="+testImageName))})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			role := c.Labels["io.grpcbench.role"]
			if _, ok := seen[role]; ok || (role != "server" && role != "load") {
				continue
			}
			if in, err := api.ContainerInspect(ctx, c.ID); err == nil && in.State.Running {
				seen[role] = in
			}
		}
	}
	if err := <-done; err != nil {
		t.Errorf("the run failed: %v", err)
	}

	for role, in := range seen {
		h, cfg := in.HostConfig, in.Config
		t.Logf("%s: user %q, read-only %v, tmpfs %v, caps dropped %v, security %v, pids %v, memory %d, network %s, log %s %v",
			role, cfg.User, h.ReadonlyRootfs, h.Tmpfs, h.CapDrop, h.SecurityOpt, pidsOf(h), h.Memory, h.NetworkMode, h.LogConfig.Type, h.LogConfig.Config)
		if cfg.User == "" || cfg.User == "0" || cfg.User == "root" || cfg.User == "0:0" {
			t.Errorf("%s runs as root (user %q)", role, cfg.User)
		}
		if !h.ReadonlyRootfs {
			t.Errorf("%s has a writable root file system", role)
		}
		if _, ok := h.Tmpfs["/tmp"]; !ok {
			t.Errorf("%s has no tmpfs at /tmp: %v", role, h.Tmpfs)
		}
		if !slices.Contains(h.CapDrop, "ALL") || len(h.CapAdd) > 0 {
			t.Errorf("%s: capabilities dropped %v, added %v; want ALL dropped, none added", role, h.CapDrop, h.CapAdd)
		}
		if !slices.Contains(h.SecurityOpt, "no-new-privileges") {
			t.Errorf("%s: security options %v lack no-new-privileges", role, h.SecurityOpt)
		}
		if pidsOf(h) <= 0 {
			t.Errorf("%s has no pids limit", role)
		}
		if h.Memory <= 0 || h.MemorySwap != h.Memory {
			t.Errorf("%s: memory %d, memory+swap %d; want a limit and no swap", role, h.Memory, h.MemorySwap)
		}
		if h.LogConfig.Config["max-size"] == "" {
			t.Errorf("%s: log %s %v has no size limit", role, h.LogConfig.Type, h.LogConfig.Config)
		}
		if h.Privileged {
			t.Errorf("%s is privileged", role)
		}
	}
	if n := seen["server"].HostConfig.NetworkMode; n != "none" {
		t.Errorf("server network mode %q, want none", n)
	}
	if n, want := seen["load"].HostConfig.NetworkMode, container.NetworkMode("container:"+seen["server"].ID); n != want {
		t.Errorf("load client network mode %q, want the server's namespace %q", n, want)
	}
	assertNoContainersLeft(t, api)
}

func pidsOf(h *container.HostConfig) int64 {
	if h.PidsLimit == nil {
		return 0
	}
	return *h.PidsLimit
}

func keys(m map[string]container.InspectResponse) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
