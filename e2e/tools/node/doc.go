// Package node holds the small node-side programs the e2e pods test runs as container images
// where the upstream ones cannot be built from the Go module proxy:
//
//   - cmd/registrar stands in for node-driver-registrar (registry.k8s.io/sig-storage/csi-node-driver-registrar):
//     its module path lacks the /v2 its v2.x tags need, so the proxy lists no version of it.
//   - cmd/livenessprobe stands in for livenessprobe (registry.k8s.io/sig-storage/livenessprobe),
//     which the proxy this project uses does not serve either.
//   - cmd/pause is the pod sandbox's process (registry.k8s.io/pause).
//
// Each accepts the flags deploy/kubernetes passes to the upstream program, so the manifests run
// unchanged, and does only what the e2e tests need of it; the released images are what the
// manifests deploy on real clusters.
//
// cmd/bucketclient is no stand-in but the application of the bucket pods: it reads the
// BucketInfo of a COSI BucketAccess's Secret mounted into its pod and puts or gets an object
// with those keys at the endpoint the Secret names.
package node
