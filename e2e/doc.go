// Package e2e proves csikit drivers against Kubernetes itself: the manifests under deploy/
// decode strictly into the typed API objects, and two end-to-end tests run real Kubernetes
// components as processes on one machine and drive a lifecycle through the API only.
//
// TestLifecycle runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the hostpath
// example driver and the Kubernetes CSI sidecars, and provisions, attaches, expands, snapshots
// and deletes volumes. It needs root (the driver makes loop devices and mounts).
//
// TestCOSILifecycle runs etcd, kube-apiserver, the memorys3 example driver and the COSI v0.2.2
// controller and provisioner sidecar (v1alpha1 wire), and takes a BucketClaim through a
// BucketAccess whose Secret's keys a real S3 client uses, to revocation and deletion. It needs
// no root.
//
// TestPods runs a one-node Kubernetes with a kubelet: the same control plane, Debian's containerd
// (CRI) with runc and the CNI bridge plugin, and kubelet v1.36.1, all started and stopped by the
// test. It builds the images deploy/kubernetes/hostpath names from binaries on this machine
// (hostpath static from this checkout, the sidecars from the module proxy, the stand-ins of
// tools/node for node-driver-registrar and livenessprobe, which the proxy cannot serve), imports
// them into containerd under those names, applies the manifests unchanged, and has pods use the
// driver's volumes: each case checks data one pod wrote and another read. It needs root and
// takes over /var/lib/kubelet; kubelet-cluster.sh runs it, or keeps the cluster up for kubectl.
//
// The COSI controller and sidecar are built in tools/cosi. Their reconcile logic is upstream's,
// imported unchanged from sigs.k8s.io/container-object-storage-interface v0.2.2
// (controller/pkg/bucketclaim, sidecar/pkg/bucket, sidecar/pkg/bucketaccess,
// sidecar/pkg/provisioner). The runner that hands them objects (informers, a work queue, leader
// election) is ours, in tools/cosi/runner: upstream's mains import their runner from the module
// sigs.k8s.io/container-object-storage-interface/internal, which was never published, so the
// released programs cannot be built from the Go module proxy. Ours follows the behaviour of
// upstream's at v0.2.2 (documented in tools/cosi/runner); the released images are what the
// manifests deploy.
//
// This package holds the scenarios and the manifest checks. What brings the cluster up and drives
// it (builds, processes, the kubelet node, images, deployment from deploy/) is package cluster,
// in e2e/cluster, with its own unit tests.
//
// It is a module of its own so that the SDK's go.mod never depends on Kubernetes. Run it with
//
//	cd e2e && sudo go test ./...
//
// The binaries built from the Go module proxy are cached in /var/cache/csikit-e2e as root
// ($CSIKIT_E2E_CACHE moves it). A test that cannot run skips, saying why; with
// CSIKIT_E2E_REQUIRE set (CI sets it) it fails instead.
package e2e
