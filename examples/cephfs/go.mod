module github.com/csikit/csikit/examples/cephfs

go 1.26.0

require (
	github.com/csikit/csikit v0.0.0
	go.uber.org/zap v1.28.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/ceph/go-ceph v0.40.0
	github.com/container-storage-interface/spec v1.13.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/moby/sys/mountinfo v0.7.2 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/mount-utils v0.37.2 // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
)

replace github.com/csikit/csikit => ../..
