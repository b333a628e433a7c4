// Package e2e proves csikit drivers against Kubernetes itself: the manifests under deploy/
// decode strictly into the typed API objects, and the end-to-end suite runs etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, the hostpath example driver and the
// Kubernetes CSI sidecars as processes on one machine, then drives the volume lifecycle through
// the API only.
//
// It is a module of its own so that the SDK's go.mod never depends on Kubernetes. Run it with
//
//	cd e2e && sudo go test ./...
//
// The suite needs root (the driver makes loop devices and the API server's binaries are built
// into /var/cache/csikit-e2e) and skips, saying why, without it.
package e2e
