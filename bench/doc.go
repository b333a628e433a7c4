// Package bench measures csikit side by side with plain gRPC and with its competitors
// (github.com/dell/gocsi, github.com/kubernetes-csi/csi-lib-utils). It is a module of its own so
// that the SDK never depends on them; everything lives in _test.go files.
//
// Run from this directory:
//
//	go test -run '^$' -bench . -benchmem -count 3 ./...
//
// Plain `go test ./...` runs only the smoke tests that keep the benchmarks honest (every server
// answers, no secret reaches a log, retained lock memory). Results are in ../BENCHMARKS.md.
package bench
