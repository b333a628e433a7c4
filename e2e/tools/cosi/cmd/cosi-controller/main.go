// Command cosi-controller is the COSI controller of sigs.k8s.io/container-object-storage-interface
// v0.2.2: upstream's BucketClaim reconcile logic (controller/pkg/bucketclaim, unchanged) run by
// csikit's runner (package runner), because upstream's own runner lives in a module that was
// never published and so cannot be built from the Go module proxy. Flags are upstream's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
	"sigs.k8s.io/container-object-storage-interface/controller/pkg/bucketclaim"

	"github.com/csikit/csikit/e2e/tools/cosi/runner"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "path to kubeconfig file (default $KUBECONFIG, else in-cluster)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig); err != nil {
		klog.ErrorS(err, "exiting")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(ctx context.Context, kubeconfig string) error {
	rc, err := runner.RESTConfig(kubeconfig)
	if err != nil {
		return err
	}
	// client-go's default rate (5 requests a second, bursts of 10) spaces the five requests of a
	// claim's create by 200 ms once the burst is spent. The sidecar then makes the bucket and
	// sets the claim ready before this controller writes the claim's status, which sets
	// BucketReady=false over it for good (cozystack/cozystack#3032). Unthrottled, the
	// controller's write comes first unless the sidecar is much quicker than usual;
	// TestCOSILifecycle claims again when it does not.
	rc.QPS, rc.Burst = 100, 200
	// Upstream's names: the lease is leader-lock-cosi-controller-manager.
	r, err := runner.New(runner.Config{Identity: "cosi-controller-manager", LeaseName: "leader-lock", Workers: 40}, rc)
	if err != nil {
		return err
	}
	inf := r.Informers().Objectstorage().V1alpha1().BucketClaims().Informer()
	if err := runner.Add(r, "bucketclaims", inf, bucketclaim.NewBucketClaimListener()); err != nil {
		return fmt.Errorf("bucketclaims: %w", err)
	}
	return r.Run(ctx)
}
