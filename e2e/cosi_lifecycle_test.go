package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/csikit/csikit/e2e/cluster"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cosiclient "sigs.k8s.io/container-object-storage-interface/client/clientset/versioned"
)

// TestCOSILifecycle drives memorys3 through Kubernetes' object storage API: the real API server
// with the COSI v0.2.2 CRDs, and the COSI v0.2.2 controller and provisioner sidecar (upstream's
// reconcile logic, built in tools/cosi), all as processes. The lifecycle goes through the API
// only: BucketClaim, BucketAccess, the Secret's keys used by a real S3 client, revocation and
// deletion. It prints the COSI calls each step produced.
//
// It needs no root and no controller manager or scheduler: nothing in the COSI flow is done by
// them (no pods run, and nothing is garbage-collected).
func TestCOSILifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs an API server; not in -short")
	}
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		cluster.SkipOrFail(t, "no etcd on PATH (Debian: apt-get install etcd-server): %v", err)
	}
	ctx := cluster.SignalContext(t, 30*time.Minute)

	// A short directory: unix socket paths must stay under 108 bytes.
	work, err := os.MkdirTemp("", "csikit-cosi-")
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: after every process is stopped.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept %s for its logs (logs/*.log)", work)
			return
		}
		if err := os.RemoveAll(work); err != nil {
			t.Errorf("remove %s: %v", work, err)
		}
	})
	logDir := filepath.Join(work, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	paths, err := cluster.BuildTools(ctx, t, "kube-apiserver", "cosi-controller", "cosi-sidecar")
	if err != nil {
		cluster.SkipOrFail(t, "the binaries cannot be built: %v", err)
	}
	memorys3Bin, err := cluster.BuildExample(ctx, t, work, "memorys3")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("binaries ready in %s", time.Since(start).Round(time.Second))

	ps := cluster.NewProcs(t, logDir)
	start = time.Now()
	c, err := cluster.StartAPIServer(ctx, work, etcdBin, paths["kube-apiserver"], ps)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("API server ready in %s", time.Since(start).Round(time.Second))

	crds, err := cluster.COSICRDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.InstallCRDs(ctx, crds); err != nil {
		t.Fatal(err)
	}
	ms, err := cluster.LoadManifests(cluster.Memorys3Dir)
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	for _, m := range ms {
		if err := c.Apply(ctx, m); err != nil {
			t.Fatalf("apply: %v", err)
		}
		if d, ok := m.Obj.(*appsv1.Deployment); ok {
			dep = d
		}
	}
	ctrlRBAC, err := cluster.UpstreamControllerRBAC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ctrlRBAC {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("upstream controller RBAC: %v", err)
		}
	}
	t.Logf("installed %d COSI CRDs, applied %d manifests and upstream's %d controller RBAC objects", len(crds), len(ms), len(ctrlRBAC))
	if dep == nil {
		t.Fatal("the memorys3 manifests have no Deployment")
	}

	// The pod's containers as processes: memorys3 first, then the sidecar on its socket.
	pod := dep.Name + "-0"
	cts, err := cluster.Containers(&dep.Spec.Template.Spec, cluster.PodEnv{Name: pod, Namespace: dep.Namespace, Node: "node-a",
		Root: filepath.Join(work, "node-a"), PodDir: filepath.Join(work, "pods", pod)})
	if err != nil {
		t.Fatal(err)
	}
	s3ct, ok := cts[cluster.Memorys3Container]
	if !ok {
		t.Fatalf("the Deployment has no %s container", cluster.Memorys3Container)
	}
	s3Port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// In a pod, S3 listens on the pod's address behind the Service; here, on loopback, and the
	// grants must name where the test's S3 client reaches it.
	s3Addr := "127.0.0.1:" + strconv.Itoa(s3Port)
	s3ct.Args = cluster.WithFlag(s3ct.Args, "s3-address", s3Addr)
	s3ct.Args = cluster.WithFlag(s3ct.Args, "s3-endpoint", "http://"+s3Addr)
	driverLogPath, err := startDriver(ctx, ps, "memorys3", memorys3Bin, s3ct)
	if err != nil {
		t.Fatal(err)
	}
	driverName, _ := cluster.FlagValue(s3ct.Args, "driver-name")
	socket, _ := cluster.FlagValue(s3ct.Args, "endpoint")

	l := &cosiLifecycle{lifecycle: &lifecycle{t: t, ctx: ctx, c: c, ps: ps, log: driverLog{driverLogPath}},
		driverName: driverName, socket: socket}
	if l.cosi, err = cosiclient.NewForConfig(c.Admin); err != nil {
		t.Fatal(err)
	}
	l.startControllers(dep, cts[cluster.SidecarContainer], paths)
	l.run()

	// Whole-run checks on the driver's debug log and on the COSI components' logs.
	all, err := l.log.calls(0)
	if err != nil {
		t.Fatal(err)
	}
	l.checkCOSICodes(all)
	for _, p := range []string{driverLogPath, filepath.Join(logDir, "cosi-sidecar.log"), filepath.Join(logDir, "cosi-controller.log")} {
		l.checkNoSecret(p)
	}
	t.Logf("all calls of the run: %s", summarize(all, true))
	for _, s := range l.steps {
		t.Logf("step %-22s %6s  %s", s.name, s.took.Round(100*time.Millisecond), summarize(s.calls, true))
	}
	if err := ps.CheckAlive(); err != nil {
		t.Errorf("a component died during the run: %v", err)
	}
}

// startControllers runs the COSI provisioner sidecar with the Deployment's flags and service
// account, and the COSI controller with upstream's service account, each authenticated by a
// token of its own account, so the RBAC is what is tested. The step records the driver calls the
// sidecar makes when it starts.
func (l *cosiLifecycle) startControllers(dep *appsv1.Deployment, sidecar cluster.Container, paths map[string]string) {
	l.step("start COSI", func() error {
		if sidecar.Name == "" {
			return fmt.Errorf("the Deployment has no %s container", cluster.SidecarContainer)
		}
		saKC, err := l.c.ServiceAccountKubeconfig(l.ctx, dep.Namespace, dep.Spec.Template.Spec.ServiceAccountName)
		if err != nil {
			return err
		}
		args := cluster.WithFlag(sidecar.Args, "kubeconfig", saKC)
		if _, err := l.ps.Start("cosi-sidecar", paths["cosi-sidecar"], args, sidecar.Env...); err != nil {
			return err
		}
		ctrlKC, err := l.c.ServiceAccountKubeconfig(l.ctx, metav1.NamespaceDefault, "controller-sa")
		if err != nil {
			return err
		}
		// Upstream's Deployment runs the controller with --v=5 in the namespace of its lease Role.
		if _, err := l.ps.Start("cosi-controller", paths["cosi-controller"], []string{"--kubeconfig=" + ctrlKC, "--v=5"},
			"POD_NAMESPACE="+metav1.NamespaceDefault); err != nil {
			return err
		}
		// Both hold their lease before they act: upstream's lease names, in upstream's namespaces.
		leases := map[string]string{
			dep.Namespace + "/" + strings.ReplaceAll(l.driverName, ".", "-") + "-cosi": "cosi-sidecar",
			metav1.NamespaceDefault + "/leader-lock-cosi-controller-manager":           "cosi-controller",
		}
		for key, who := range leases {
			ns, name, _ := strings.Cut(key, "/")
			if err := cluster.Poll(l.ctx, who+" holding lease "+key, 2*time.Minute, func(ctx context.Context) (bool, error) {
				lease, err := l.c.Kube.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, fmt.Errorf("%w; %v", err, l.ps.CheckAlive())
				}
				return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", l.ps.CheckAlive()
			}); err != nil {
				return err
			}
		}
		return nil
	})
}
