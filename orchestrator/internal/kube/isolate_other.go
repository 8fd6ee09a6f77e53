//go:build !linux

package kube

import "errors"

// Isolate runs in a pod's init container, on Linux only.
func Isolate() error { return errors.New("isolate: Linux only") }
