package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"

	"github.com/distribution/reference"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// The images are built, pulled and kept by the builder engine; a pod's
// images are imported into the node's containerd when it starts (ensure),
// so that only what runs is copied.

// ImageID is the id of an image of the builder.
func (h *Host) ImageID(ctx context.Context, ref string) (string, error) {
	return h.builder.ImageID(ctx, ref)
}

// Pull pulls an image into the builder.
func (h *Host) Pull(ctx context.Context, ref string, log io.Writer) error {
	return h.builder.Pull(ctx, ref, log)
}

// Import creates an image in the builder from a root file system tar.
func (h *Host) Import(ctx context.Context, rootfs io.Reader, ref string, changes []string) error {
	return h.builder.Import(ctx, rootfs, ref, changes)
}

// Build builds an image on the builder.
func (h *Host) Build(ctx context.Context, buildContext io.Reader, opts backend.BuildOptions, log io.Writer) (string, error) {
	return h.builder.Build(ctx, buildContext, opts, log)
}

// Save writes an image of the builder out.
func (h *Host) Save(ctx context.Context, ref string) (io.ReadCloser, error) {
	return h.builder.Save(ctx, ref)
}

// Load takes an image another host saved into the builder.
func (h *Host) Load(ctx context.Context, image io.Reader) error {
	return h.builder.Load(ctx, image)
}

// importer is the node's image store: whether it has an image, by
// reference and id, and taking in what `docker save` wrote.
type importer interface {
	has(ctx context.Context, ref, id string) (bool, error)
	load(ctx context.Context, image io.Reader) error
}

// ensure makes the node's containerd hold the builder's image ref, as the
// builder has it now, importing it when the node has another or none.
func (h *Host) ensure(ctx context.Context, ref string) error {
	id, err := h.builder.ImageID(ctx, ref)
	if err != nil {
		return err
	}
	h.mu.Lock()
	done := h.imported[ref] == id
	h.mu.Unlock()
	if done {
		return nil
	}
	name, err := fullName(ref)
	if err != nil {
		return err
	}
	have, err := h.images.has(ctx, name, id)
	if err != nil {
		return err
	}
	if !have {
		saved, err := h.builder.Save(ctx, ref)
		if err != nil {
			return err
		}
		err = h.images.load(ctx, saved)
		saved.Close()
		if err != nil {
			return fmt.Errorf("import %s into the node's containerd: %w", ref, err)
		}
		if have, err = h.images.has(ctx, name, id); err != nil {
			return err
		} else if !have {
			return fmt.Errorf("import %s into the node's containerd: it does not hold %s as %s after the import", ref, id, name)
		}
	}
	h.mu.Lock()
	h.imported[ref] = id
	h.mu.Unlock()
	return nil
}

// fullName is a reference as containerd and the kubelet name it
// (grpc_bench:client is docker.io/library/grpc_bench:client).
func fullName(ref string) (string, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	return reference.TagNameOnly(named).String(), nil
}

// ctrImporter imports with containerd's own client, ctr, into the
// namespace the kubelet's images live in.
type ctrImporter struct {
	socket string
}

// ctr runs ctr against the node's containerd.
func (c ctrImporter) ctr(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", c.socket, "--namespace", "k8s.io"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = stdin, &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", args[0]+" "+args[1], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// has says whether the image name points at the image of id: whether the
// config of the manifest it names (of this machine's platform, when it
// names an index) has that digest, as `docker save` keeps it.
func (c ctrImporter) has(ctx context.Context, name, id string) (bool, error) {
	out, err := c.ctr(ctx, nil, "images", "ls", "name=="+name)
	if err != nil {
		return false, err
	}
	digest := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// REF TYPE DIGEST SIZE PLATFORMS LABELS
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == name {
			digest = f[2]
		}
	}
	for range 2 { // an index, then its manifest
		if digest == "" {
			return false, nil
		}
		raw, err := c.ctr(ctx, nil, "content", "get", digest)
		if err != nil {
			return false, err
		}
		var m struct {
			Config    struct{ Digest string } `json:"config"`
			Manifests []struct {
				Digest   string `json:"digest"`
				Platform struct {
					OS, Architecture string
				} `json:"platform"`
			} `json:"manifests"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return false, fmt.Errorf("the manifest %s of %s: %w", digest, name, err)
		}
		if m.Config.Digest != "" {
			return m.Config.Digest == id, nil
		}
		digest = ""
		for _, each := range m.Manifests {
			if each.Platform.OS == "linux" && each.Platform.Architecture == runtime.GOARCH {
				digest = each.Digest
			}
		}
	}
	return false, nil
}

func (c ctrImporter) load(ctx context.Context, image io.Reader) error {
	_, err := c.ctr(ctx, image, "images", "import", "-")
	return err
}
