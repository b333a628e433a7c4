// Package cluster brings up the Kubernetes that the e2e tests drive, on this one machine.
//
// It builds the programs (Kubernetes, the CSI and COSI sidecars, the example drivers: BuildAll)
// and caches them in /var/cache/csikit-e2e. It runs the control plane as processes
// (StartCluster, StartAPIServer, Procs) and, with root, a node: containerd, kubelet,
// kube-proxy and CoreDNS (StartNode). It builds images from this machine's binaries
// (HostpathImages, Memorys3Images, CephFSImages), loads deploy/ (LoadManifests) and deploys
// the drivers from it unchanged (Node.DeployHostpath, Node.DeployMemorys3, Node.DeployDriver).
//
// A node run holds host state that outlives its processes; it records itself in
// /run/csikit-e2e-node.json, and the next run releases what a dead one left (node_leftovers.go).
// SignalContext ends a test's context on SIGINT or SIGTERM, so cleanups run.
//
// Paths such as ../deploy, tools/ and node-ssh are relative to the e2e module's directory: the
// working directory of the tests in package e2e, which use this package.
package cluster
