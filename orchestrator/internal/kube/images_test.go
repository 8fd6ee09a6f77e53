package kube

import (
	"context"
	"strings"
	"testing"
)

// TestImagesImportedWhenTheNodeHasAnother: an image is imported when the
// node lacks it or names another image by its name (a rebuild), once per
// id; an import that leaves it missing fails, saying so.
func TestImagesImportedWhenTheNodeHasAnother(t *testing.T) {
	th := newTestHost(t)
	ctx := context.Background()
	th.haveImages("bench:client")
	for range 2 {
		if err := th.ensure(ctx, "bench:client"); err != nil {
			t.Fatal(err)
		}
	}
	if th.importer.loads != 1 {
		t.Errorf("%d imports of one image, want 1", th.importer.loads)
	}
	if th.importer.images["docker.io/library/bench:client"] == "" {
		t.Errorf("the node holds %v, want docker.io/library/bench:client", th.importer.images)
	}
	th.importer.images["docker.io/library/bench:client"] = "sha256:older"
	th.imported = map[string]string{} // another run
	if err := th.ensure(ctx, "bench:client"); err != nil || th.importer.loads != 2 {
		t.Errorf("ensure of a rebuilt image: %v, %d imports; want a second", err, th.importer.loads)
	}
	th.builder.Have("bench:broken")
	if err := th.ensure(ctx, "bench:broken"); err == nil || !strings.Contains(err.Error(), "does not hold") {
		t.Errorf("an import that left the image missing: %v", err)
	}
	if err := th.ensure(ctx, "bench:none"); err == nil {
		t.Error("ensure of an image the builder lacks succeeded")
	}
}
