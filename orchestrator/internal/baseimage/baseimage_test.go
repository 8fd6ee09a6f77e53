package baseimage

import (
	"slices"
	"testing"
)

func TestFromImages(t *testing.T) {
	dockerfile := []byte(`# syntax comment
FROM golang:1.26-bookworm AS build
RUN go build
from --platform=linux/amd64 rust:1.95-bookworm as rustbuild
FROM build AS test
FROM scratch
FROM debian:bookworm-slim
COPY --from=rustbuild /x /x
FROM golang:1.26-bookworm
`)
	want := []string{"golang:1.26-bookworm", "rust:1.95-bookworm", "debian:bookworm-slim"}
	if got := FromImages(dockerfile); !slices.Equal(got, want) {
		t.Errorf("FromImages = %q, want %q", got, want)
	}
}

func TestEveryRecipeNeedsOnlyKnownImages(t *testing.T) {
	for ref, r := range recipes {
		for _, need := range r.needs {
			if _, ok := recipes[need]; !ok {
				t.Errorf("%s needs %s, which has no recipe", ref, need)
			}
		}
	}
}
