// Command cosi-sidecar is the COSI provisioner sidecar (objectstorage-sidecar) of
// sigs.k8s.io/container-object-storage-interface v0.2.2, speaking COSI v1alpha1 to a driver:
// upstream's Bucket and BucketAccess reconcile logic and gRPC client (sidecar/pkg/bucket,
// sidecar/pkg/bucketaccess, sidecar/pkg/provisioner, unchanged) run by csikit's runner
// (package runner), because upstream's own runner lives in a module that was never published
// and so cannot be built from the Go module proxy. Flags and environment are upstream's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
	cosi "sigs.k8s.io/container-object-storage-interface/proto"
	"sigs.k8s.io/container-object-storage-interface/sidecar/pkg/bucket"
	"sigs.k8s.io/container-object-storage-interface/sidecar/pkg/bucketaccess"
	"sigs.k8s.io/container-object-storage-interface/sidecar/pkg/provisioner"

	"github.com/csikit/csikit/e2e/tools/cosi/runner"
)

func main() {
	klog.InitFlags(nil)
	// Upstream reads each flag from the environment too (DRIVER_ADDR, KUBECONFIG, DEBUG); the
	// command line wins.
	addr := envOr("DRIVER_ADDR", "unix:///var/lib/cosi/cosi.sock")
	var kubeconfig string
	var debug bool
	flag.StringVar(&kubeconfig, "kubeconfig", "", "path to kubeconfig file (default $KUBECONFIG, else in-cluster)")
	flag.StringVar(&addr, "driver-addr", addr, "unix:// address of the COSI driver's socket")
	flag.StringVar(&addr, "d", addr, "shorthand for --driver-addr")
	flag.BoolVar(&debug, "debug", os.Getenv("DEBUG") == "true", "log every gRPC call (upstream's interceptor)")
	flag.BoolVar(&debug, "g", debug, "shorthand for --debug")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, kubeconfig, addr, debug); err != nil {
		klog.ErrorS(err, "exiting")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, kubeconfig, addr string, debug bool) error {
	klog.V(3).InfoS("connecting to the driver", "address", addr)
	client, err := provisioner.NewDefaultCOSIProvisionerClient(ctx, addr, debug)
	if err != nil {
		return fmt.Errorf("driver %s: %w", addr, err)
	}
	info, err := client.DriverGetInfo(ctx, &cosi.DriverGetInfoRequest{})
	if err != nil {
		return fmt.Errorf("DriverGetInfo: %w", err)
	}
	klog.V(3).InfoS("connected to the driver", "name", info.Name)

	rc, err := runner.RESTConfig(kubeconfig)
	if err != nil {
		return err
	}
	// Upstream's names: the lease is <driver name>-cosi, one per driver.
	r, err := runner.New(runner.Config{Identity: "cosi", LeaseName: info.Name, Workers: 40}, rc)
	if err != nil {
		return err
	}
	v := r.Informers().Objectstorage().V1alpha1()
	if err := runner.Add(r, "buckets", v.Buckets().Informer(), bucket.NewBucketListener(info.Name, client)); err != nil {
		return fmt.Errorf("buckets: %w", err)
	}
	if err := runner.Add(r, "bucketaccesses", v.BucketAccesses().Informer(), bucketaccess.NewBucketAccessListener(info.Name, client)); err != nil {
		return fmt.Errorf("bucketaccesses: %w", err)
	}
	return r.Run(ctx)
}
