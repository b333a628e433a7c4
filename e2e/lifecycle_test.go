package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csikit/csikit/e2e/cluster"

	vgsv1beta2 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1beta2"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

// Names of the test's own objects; the driver's come from the manifests.
const (
	testNS   = "e2e"
	nodeA    = "node-a" // runs the driver
	nodeB    = "node-b" // has no driver: topology must keep volumes off it
	secretNm = "e2e-credentials"
)

// stepResult is one lifecycle step and the CSI calls the driver answered during it.
type stepResult struct {
	name  string
	calls []csiCall
	took  time.Duration
}

// TestLifecycle drives hostpath through Kubernetes: the real API server, controllers and
// scheduler, and the real CSI sidecars, all as processes; the lifecycle goes through the API
// only. It prints the CSI calls each step produced.
func TestLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a control plane; not in -short")
	}
	if os.Geteuid() != 0 {
		cluster.SkipOrFail(t, "needs root: hostpath mounts and attaches loop devices, and the built control plane is cached in /var/cache/csikit-e2e (run: cd e2e && sudo go test ./...)")
	}
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		cluster.SkipOrFail(t, "no etcd on PATH (Debian: apt-get install etcd-server): %v", err)
	}
	ctx := cluster.SignalContext(t, 50*time.Minute)

	// A short directory: unix socket paths must stay under 108 bytes.
	work, err := os.MkdirTemp("", "csikit-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: after every process is stopped.
	t.Cleanup(func() {
		cluster.ReleaseHostResources(t, work)
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
	bins, err := cluster.BuildAll(ctx, t, work)
	if err != nil {
		cluster.SkipOrFail(t, "the binaries cannot be built: %v", err)
	}
	bins.Etcd = etcdBin
	t.Logf("binaries ready in %s", time.Since(start).Round(time.Second))

	ps := cluster.NewProcs(t, logDir)
	start = time.Now()
	c, err := cluster.StartCluster(ctx, t, work, bins, ps)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane ready in %s", time.Since(start).Round(time.Second))

	ms, err := cluster.LoadManifests(cluster.HostpathDir)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := cluster.SnapshotCRDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.InstallCRDs(ctx, crds); err != nil {
		t.Fatal(err)
	}
	var sts *appsv1.StatefulSet
	var ds *appsv1.DaemonSet
	for _, m := range ms {
		if err := c.Apply(ctx, m); err != nil {
			t.Fatalf("apply: %v", err)
		}
		switch o := m.Obj.(type) {
		case *appsv1.StatefulSet:
			sts = o
		case *appsv1.DaemonSet:
			ds = o
		}
	}
	if sts == nil || ds == nil {
		t.Fatal("the manifests have no controller StatefulSet or node DaemonSet")
	}
	t.Logf("applied %d manifests and %d snapshot CRDs", len(ms), len(crds))

	// The nodes, as kubelet would register them, then the driver's processes on node-a: the
	// controller pod and the node pod share the node's root, as on a real node.
	for _, n := range []string{nodeA, nodeB} {
		if err := c.AddNode(ctx, n, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AddEmptyCSINode(ctx, nodeB); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(work, "node-a")
	ctrl, err := cluster.Containers(&sts.Spec.Template.Spec, cluster.PodEnv{Name: sts.Name + "-0", Namespace: sts.Namespace, Node: nodeA,
		Root: root, PodDir: filepath.Join(root, "pods", sts.Name+"-0")})
	if err != nil {
		t.Fatal(err)
	}
	node, err := cluster.Containers(&ds.Spec.Template.Spec, cluster.PodEnv{Name: ds.Name + "-a", Namespace: ds.Namespace, Node: nodeA,
		Root: root, PodDir: filepath.Join(root, "pods", ds.Name+"-a")})
	if err != nil {
		t.Fatal(err)
	}
	nodeLog, err := startDriver(ctx, ps, "hostpath-node", bins.Hostpath, node["hostpath"])
	if err != nil {
		t.Fatal(err)
	}
	ctrlLog, err := startDriver(ctx, ps, "hostpath-controller", bins.Hostpath, ctrl["hostpath"])
	if err != nil {
		t.Fatal(err)
	}
	nodeEndpoint, _ := cluster.FlagValue(node["hostpath"].Args, "endpoint")
	info, err := c.RegisterDriver(ctx, nodeA, strings.TrimPrefix(nodeEndpoint, "unix://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("registered %s on %s: node ID %s, topology %v", hostpath.Name, nodeA, info.GetNodeId(), info.GetAccessibleTopology().GetSegments())

	saKC, err := c.ServiceAccountKubeconfig(ctx, sts.Namespace, sts.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		t.Fatal(err)
	}
	sidecars := map[string]string{"csi-provisioner": bins.Provisioner, "csi-attacher": bins.Attacher, "csi-resizer": bins.Resizer, "csi-snapshotter": bins.Snapshotter}
	for name, bin := range sidecars {
		ct, ok := ctrl[name]
		if !ok {
			t.Fatalf("the controller StatefulSet has no %s container", name)
		}
		args, _, err := cluster.LocalHTTP(ct.Args)
		if err != nil {
			t.Fatal(err)
		}
		// Out of a pod, a sidecar cannot find its namespace or credentials by itself.
		args = cluster.WithFlag(args, "kubeconfig", saKC)
		args = cluster.WithFlag(args, "leader-election-namespace", sts.Namespace)
		args = cluster.WithFlag(args, "v", "4")
		if name == "csi-provisioner" {
			// No pod exists to own the CSIStorageCapacity objects: publish them unowned.
			args = cluster.WithFlag(args, "capacity-ownerref-level", "-1")
		}
		if _, err := ps.Start(name, bin, args, ct.Env...); err != nil {
			t.Fatal(err)
		}
	}
	// The cluster's snapshot controller, an add-on the driver's manifests assume.
	if _, err := ps.Start("snapshot-controller", bins.SnapshotController, []string{
		"--kubeconfig=" + c.AdminKC, "--leader-election=false", "--feature-gates=CSIVolumeGroupSnapshot=true", "--v=4",
	}); err != nil {
		t.Fatal(err)
	}

	snaps, err := snapclient.NewForConfig(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	l := &lifecycle{t: t, ctx: ctx, c: c, snaps: snaps, ps: ps, log: driverLog{ctrlLog}, stateDir: filepath.Join(root, "var/lib/csikit-hostpath")}
	l.run()

	// Whole-run checks on the driver's debug logs.
	all, err := l.log.calls(0)
	if err != nil {
		t.Fatal(err)
	}
	l.checkCodes(all)
	for _, p := range []string{ctrlLog, nodeLog} {
		l.checkNoSecret(p)
	}
	t.Logf("all calls of the run (background included): %s", summarize(all, true))
	for _, s := range l.steps {
		t.Logf("step %-22s %6s  %s", s.name, s.took.Round(100*time.Millisecond), summarize(s.calls, false))
	}
	if err := ps.CheckAlive(); err != nil {
		t.Errorf("a component died during the run: %v", err)
	}
}

// startDriver starts one hostpath container at debug level (the suite reads the redacted
// payloads) and waits until it serves.
func startDriver(ctx context.Context, ps *cluster.Procs, name, bin string, ct cluster.Container) (string, error) {
	args, addr, err := cluster.LocalHTTP(ct.Args)
	if err != nil {
		return "", err
	}
	args = cluster.WithFlag(args, "log-level", "debug")
	p, err := ps.Start(name, bin, args, ct.Env...)
	if err != nil {
		return "", err
	}
	if addr == "" {
		return "", fmt.Errorf("%s: the manifest gives hostpath no --http-endpoint to probe", name)
	}
	return p.Log, cluster.Poll(ctx, name+" /readyz", time.Minute, func(ctx context.Context) (bool, error) {
		if err := ps.CheckAlive(); err != nil {
			return false, err
		}
		return cluster.HTTPOK(ctx, "http://"+addr+"/readyz")
	})
}

// lifecycle is the sequence of steps, each through the API only.
type lifecycle struct {
	t        *testing.T
	ctx      context.Context
	c        *cluster.Cluster
	snaps    *snapclient.Clientset
	ps       *cluster.Procs
	log      driverLog
	stateDir string
	steps    []stepResult
	canaries []string
	handles  []string // volume handles seen, for the final "nothing left" check
}

// step runs fn and records the driver's calls while it ran; a failing step ends the test.
func (l *lifecycle) step(name string, fn func() error) []csiCall {
	l.t.Helper()
	from := l.log.size()
	start := time.Now()
	err := fn()
	calls, lerr := l.log.calls(from)
	l.steps = append(l.steps, stepResult{name: name, calls: calls, took: time.Since(start)})
	if err != nil {
		l.t.Fatalf("step %s: %v\ncalls: %s\n%v", name, err, summarize(calls, true), l.ps.CheckAlive())
	}
	if lerr != nil {
		l.t.Fatal(lerr)
	}
	return calls
}

// expectCall wants at least one call of method answered OK among calls.
func (l *lifecycle) expectCall(step string, calls []csiCall, method string) csiCall {
	l.t.Helper()
	for _, c := range find(calls, method) {
		if c.Code == "OK" {
			return c
		}
	}
	l.t.Errorf("step %s: no %s answered OK; calls: %s", step, method, summarize(calls, true))
	return csiCall{}
}

func (l *lifecycle) run() {
	ctx, kube := l.ctx, l.c.Kube
	var (
		pvName, volHandle string
		immediate         = "e2e-immediate"
		topo              = "e2e-topology"
	)
	l.canaries = []string{"canary-" + randomHex(), "canary-" + randomHex()}

	calls := l.step("setup", func() error {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		// Secrets named by the classes: the sidecars read them and put them into the calls.
		if _, err := kube.CoreV1().Secrets(testNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretNm},
			StringData: map[string]string{"password": l.canaries[0], "token": l.canaries[1]}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		secretParams := map[string]string{}
		for _, op := range []string{"provisioner", "controller-publish", "controller-expand", "node-stage", "node-publish", "node-expand"} {
			secretParams["csi.storage.k8s.io/"+op+"-secret-name"] = secretNm
			secretParams["csi.storage.k8s.io/"+op+"-secret-namespace"] = testNS
		}
		params := map[string]string{"kind": "dir"}
		for k, v := range secretParams {
			params[k] = v
		}
		classes := []*storagev1.StorageClass{
			{ObjectMeta: metav1.ObjectMeta{Name: immediate}, Provisioner: hostpath.Name, Parameters: params,
				VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate), AllowVolumeExpansion: ptr.To(true)},
			{ObjectMeta: metav1.ObjectMeta{Name: topo}, Provisioner: hostpath.Name, Parameters: secretParams,
				VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
				AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
					{Key: hostpath.TopologyNodeKey, Values: []string{nodeA}}}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "e2e-typo"}, Provisioner: hostpath.Name, Parameters: map[string]string{"knid": "dir"},
				VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)},
		}
		for _, sc := range classes {
			if _, err := kube.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		_, err := l.snaps.SnapshotV1().VolumeSnapshotClasses().Create(ctx, &snapv1.VolumeSnapshotClass{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-secrets"}, Driver: hostpath.Name, DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
			Parameters: map[string]string{
				"csi.storage.k8s.io/snapshotter-secret-name": secretNm, "csi.storage.k8s.io/snapshotter-secret-namespace": testNS,
			}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		// The provisioner publishes capacity for WaitForFirstConsumer classes; the scheduler
		// needs it because the CSIDriver says storageCapacity: true.
		return cluster.Poll(ctx, "CSIStorageCapacity for "+topo, 2*time.Minute, func(ctx context.Context) (bool, error) {
			list, err := kube.StorageV1().CSIStorageCapacities("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, cap := range list.Items {
				if cap.StorageClassName == topo && cap.Capacity != nil && !cap.Capacity.IsZero() {
					return true, nil
				}
			}
			return false, l.ps.CheckAlive()
		})
	})
	l.expectCall("setup", calls, "GetCapacity")

	calls = l.step("provision", func() error {
		pvc := claim("pvc-1", immediate, "1Gi", nil)
		pvc.Spec.VolumeAttributesClassName = ptr.To("csikit-hostpath-standard")
		if _, err := kube.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			return err
		}
		pv, err := l.waitBound("pvc-1")
		if err != nil {
			return err
		}
		pvName, volHandle = pv.Name, pv.Spec.CSI.VolumeHandle
		l.handles = append(l.handles, volHandle)
		if got := pv.Spec.Capacity.Storage().String(); got != "1Gi" {
			return fmt.Errorf("PV capacity %s, want 1Gi", got)
		}
		return nil
	})
	cv := l.expectCall("provision", calls, "CreateVolume")
	l.checkRequest("provision", cv, "parameters", "kind")
	l.checkRequest("provision", cv, "secrets", "password")
	l.checkRequest("provision", cv, "mutable_parameters", "iops")
	if !l.exists(volHandle) {
		l.t.Errorf("provision: volume %s has no backing under %s", volHandle, l.stateDir)
	}

	calls = l.step("attach", func() error {
		va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1"}, Spec: storagev1.VolumeAttachmentSpec{
			Attacher: hostpath.Name, NodeName: nodeA, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}}}
		if _, err := kube.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
			return err
		}
		return cluster.Poll(ctx, "va-1 attached", 2*time.Minute, func(ctx context.Context) (bool, error) {
			va, err := kube.StorageV1().VolumeAttachments().Get(ctx, "va-1", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if e := va.Status.AttachError; e != nil {
				return false, errors.New(e.Message)
			}
			return va.Status.Attached, nil
		})
	})
	pub := l.expectCall("attach", calls, "ControllerPublishVolume")
	l.checkRequest("attach", pub, "secrets", "password")

	calls = l.step("detach", func() error {
		if err := kube.StorageV1().VolumeAttachments().Delete(ctx, "va-1", metav1.DeleteOptions{}); err != nil {
			return err
		}
		return cluster.Poll(ctx, "va-1 gone", 2*time.Minute, func(ctx context.Context) (bool, error) {
			_, err := kube.StorageV1().VolumeAttachments().Get(ctx, "va-1", metav1.GetOptions{})
			return apierrors.IsNotFound(err), cluster.IgnoreNotFound(err)
		})
	})
	l.expectCall("detach", calls, "ControllerUnpublishVolume")

	calls = l.step("expand", func() error {
		patch := `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`
		if _, err := kube.CoreV1().PersistentVolumeClaims(testNS).Patch(ctx, "pvc-1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
		return cluster.Poll(ctx, "PV capacity 2Gi", 2*time.Minute, func(ctx context.Context) (bool, error) {
			pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return pv.Spec.Capacity.Storage().Cmp(resource.MustParse("2Gi")) == 0, nil
		})
	})
	exp := l.expectCall("expand", calls, "ControllerExpandVolume")
	l.checkRequest("expand", exp, "secrets", "password")

	calls = l.step("modify (VAC change)", func() error {
		patch := `{"spec":{"volumeAttributesClassName":"csikit-hostpath-fast"}}`
		if _, err := kube.CoreV1().PersistentVolumeClaims(testNS).Patch(ctx, "pvc-1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
		return cluster.Poll(ctx, "pvc-1 on VolumeAttributesClass csikit-hostpath-fast", 2*time.Minute, func(ctx context.Context) (bool, error) {
			pvc, err := kube.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, "pvc-1", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return ptr.Deref(pvc.Status.CurrentVolumeAttributesClassName, "") == "csikit-hostpath-fast", nil
		})
	})
	mod := l.expectCall("modify (VAC change)", calls, "ControllerModifyVolume")
	l.checkRequest("modify (VAC change)", mod, "mutable_parameters", "iops")

	calls = l.step("snapshot", func() error {
		vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-1", Namespace: testNS}, Spec: snapv1.VolumeSnapshotSpec{
			Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("pvc-1")}, VolumeSnapshotClassName: ptr.To("e2e-secrets")}}
		if _, err := l.snaps.SnapshotV1().VolumeSnapshots(testNS).Create(ctx, vs, metav1.CreateOptions{}); err != nil {
			return err
		}
		return cluster.Poll(ctx, "snap-1 ready", 2*time.Minute, snapshotReady(l.snaps, "snap-1"))
	})
	cs := l.expectCall("snapshot", calls, "CreateSnapshot")
	l.checkRequest("snapshot", cs, "secrets", "password")

	calls = l.step("restore", func() error {
		pvc := claim("pvc-restore", immediate, "2Gi", &corev1.TypedLocalObjectReference{
			APIGroup: ptr.To(snapv1.GroupName), Kind: "VolumeSnapshot", Name: "snap-1"})
		if _, err := kube.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			return err
		}
		pv, err := l.waitBound("pvc-restore")
		if err == nil {
			l.handles = append(l.handles, pv.Spec.CSI.VolumeHandle)
		}
		return err
	})
	l.checkRequest("restore", l.expectCall("restore", calls, "CreateVolume"), "volume_content_source", "snapshot")

	calls = l.step("clone", func() error {
		pvc := claim("pvc-clone", immediate, "2Gi", &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "pvc-1"})
		if _, err := kube.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			return err
		}
		pv, err := l.waitBound("pvc-clone")
		if err == nil {
			l.handles = append(l.handles, pv.Spec.CSI.VolumeHandle)
		}
		return err
	})
	l.checkRequest("clone", l.expectCall("clone", calls, "CreateVolume"), "volume_content_source", "volume")

	calls = l.step("group snapshot", func() error {
		for _, n := range []string{"pvc-restore", "pvc-clone"} {
			patch := `{"metadata":{"labels":{"group":"g1"}}}`
			if _, err := kube.CoreV1().PersistentVolumeClaims(testNS).Patch(ctx, n, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return err
			}
		}
		vgs := &vgsv1beta2.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "vgs-1", Namespace: testNS},
			Spec: vgsv1beta2.VolumeGroupSnapshotSpec{VolumeGroupSnapshotClassName: ptr.To("csikit-hostpath"),
				Source: vgsv1beta2.VolumeGroupSnapshotSource{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"group": "g1"}}}}}
		if _, err := l.snaps.GroupsnapshotV1beta2().VolumeGroupSnapshots(testNS).Create(ctx, vgs, metav1.CreateOptions{}); err != nil {
			return err
		}
		return cluster.Poll(ctx, "vgs-1 ready", 2*time.Minute, func(ctx context.Context) (bool, error) {
			g, err := l.snaps.GroupsnapshotV1beta2().VolumeGroupSnapshots(testNS).Get(ctx, "vgs-1", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if st := g.Status; st != nil {
				if st.Error != nil && st.Error.Message != nil {
					return false, errors.New(*st.Error.Message)
				}
				return ptr.Deref(st.ReadyToUse, false), nil
			}
			return false, nil
		})
	})
	l.expectCall("group snapshot", calls, "CreateVolumeGroupSnapshot")

	calls = l.step("topology (WFFC)", func() error {
		if _, err := kube.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, claim("pvc-wffc", topo, "1Gi", nil), metav1.CreateOptions{}); err != nil {
			return err
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "consumer", Namespace: testNS}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc-wffc"}}}},
		}}
		if _, err := kube.CoreV1().Pods(testNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		pv, err := l.waitBound("pvc-wffc")
		if err != nil {
			return err
		}
		l.handles = append(l.handles, pv.Spec.CSI.VolumeHandle)
		if err := cluster.Poll(ctx, "consumer scheduled", 2*time.Minute, func(ctx context.Context) (bool, error) {
			p, err := kube.CoreV1().Pods(testNS).Get(ctx, "consumer", metav1.GetOptions{})
			return err == nil && p.Spec.NodeName != "", err
		}); err != nil {
			return err
		}
		p, err := kube.CoreV1().Pods(testNS).Get(ctx, "consumer", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName != nodeA {
			return fmt.Errorf("consumer scheduled on %s, want %s", p.Spec.NodeName, nodeA)
		}
		pvc, err := kube.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, "pvc-wffc", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sel := pvc.Annotations["volume.kubernetes.io/selected-node"]; sel != nodeA {
			return fmt.Errorf("selected-node annotation %q, want %s (set by kube-scheduler)", sel, nodeA)
		}
		if !affinityIs(pv, hostpath.TopologyNodeKey, nodeA) {
			return fmt.Errorf("PV node affinity %v, want %s=%s", pv.Spec.NodeAffinity, hostpath.TopologyNodeKey, nodeA)
		}
		return nil
	})
	l.checkRequest("topology (WFFC)", l.expectCall("topology (WFFC)", calls, "CreateVolume"), "accessibility_requirements", "requisite")

	calls = l.step("refused parameter", func() error {
		if _, err := kube.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, claim("pvc-typo", "e2e-typo", "1Gi", nil), metav1.CreateOptions{}); err != nil {
			return err
		}
		err := cluster.Poll(ctx, "ProvisioningFailed event on pvc-typo", 2*time.Minute, func(ctx context.Context) (bool, error) {
			evs, err := kube.CoreV1().Events(testNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pvc-typo"})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.Reason == "ProvisioningFailed" && strings.Contains(e.Message, "InvalidArgument") {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return err
		}
		return kube.CoreV1().PersistentVolumeClaims(testNS).Delete(ctx, "pvc-typo", metav1.DeleteOptions{})
	})
	refused := false
	for _, c := range find(calls, "CreateVolume") {
		refused = refused || c.Code == "InvalidArgument"
	}
	if !refused {
		l.t.Errorf("refused parameter: no CreateVolume answered InvalidArgument; calls: %s", summarize(calls, true))
	}

	calls = l.step("delete everything", func() error {
		// No kubelet will confirm the pod's end: delete it at once, as kubectl --force does.
		if err := kube.CoreV1().Pods(testNS).Delete(ctx, "consumer", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			return err
		}
		if err := l.snaps.GroupsnapshotV1beta2().VolumeGroupSnapshots(testNS).Delete(ctx, "vgs-1", metav1.DeleteOptions{}); err != nil {
			return err
		}
		if err := l.snaps.SnapshotV1().VolumeSnapshots(testNS).Delete(ctx, "snap-1", metav1.DeleteOptions{}); err != nil {
			return err
		}
		if err := cluster.Poll(ctx, "no snapshot contents", 3*time.Minute, func(ctx context.Context) (bool, error) {
			c, err := l.snaps.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			g, err := l.snaps.GroupsnapshotV1beta2().VolumeGroupSnapshotContents().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			return len(c.Items) == 0 && len(g.Items) == 0, nil
		}); err != nil {
			return err
		}
		for _, n := range []string{"pvc-1", "pvc-restore", "pvc-clone", "pvc-wffc"} {
			if err := kube.CoreV1().PersistentVolumeClaims(testNS).Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
		return cluster.Poll(ctx, "no PVs", 3*time.Minute, func(ctx context.Context) (bool, error) {
			pvs, err := kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			var names []string
			for _, pv := range pvs.Items {
				names = append(names, pv.Name+"("+string(pv.Status.Phase)+")")
			}
			if len(names) > 0 {
				return false, fmt.Errorf("left: %s", strings.Join(names, ", "))
			}
			return true, nil
		})
	})
	l.expectCall("delete everything", calls, "DeleteVolume")
	l.expectCall("delete everything", calls, "DeleteSnapshot")
	l.expectCall("delete everything", calls, "DeleteVolumeGroupSnapshot")
	for _, h := range l.handles {
		if l.exists(h) {
			l.t.Errorf("delete everything: volume %s still has a backing under %s", h, l.stateDir)
		}
	}
	if left := l.leftovers(); len(left) > 0 {
		l.t.Errorf("delete everything: left in the state directory: %v", left)
	}
	if loops := cluster.LoopsUnder(l.stateDir); len(loops) > 0 {
		l.t.Errorf("delete everything: loop devices still attached: %v", loops)
	}
}

// claim is a ReadWriteOnce filesystem claim.
func claim(name, class, size string, source *corev1.TypedLocalObjectReference) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class, DataSource: source,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
}

// waitBound waits until the claim is bound and returns its volume.
func (l *lifecycle) waitBound(name string) (*corev1.PersistentVolume, error) {
	var pvName string
	err := cluster.Poll(l.ctx, name+" bound", 2*time.Minute, func(ctx context.Context) (bool, error) {
		pvc, err := l.c.Kube.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pvName = pvc.Spec.VolumeName
		return pvc.Status.Phase == corev1.ClaimBound, l.ps.CheckAlive()
	})
	if err != nil {
		return nil, err
	}
	pv, err := l.c.Kube.CoreV1().PersistentVolumes().Get(l.ctx, pvName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != hostpath.Name {
		return nil, fmt.Errorf("PV %s is not a %s volume", pv.Name, hostpath.Name)
	}
	return pv, nil
}

func affinityIs(pv *corev1.PersistentVolume, key, value string) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return false
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == key && len(e.Values) == 1 && e.Values[0] == value {
				return true
			}
		}
	}
	return false
}

// checkRequest wants the redacted request of call to carry field, holding key: proof that
// the sidecar sent what the class asked for.
func (l *lifecycle) checkRequest(step string, call csiCall, field, key string) {
	l.t.Helper()
	if call.Method == "" {
		return // already reported
	}
	v, ok := call.Request[field].(map[string]any)
	if !ok {
		l.t.Errorf("step %s: %s request has no %s: %v", step, call.Method, field, call.Request)
		return
	}
	if _, ok := v[key]; !ok {
		l.t.Errorf("step %s: %s request's %s has no %q: %v", step, call.Method, field, key, v)
	}
}

// checkCodes wants every call of the run answered OK, except the CreateVolume the typo class
// provokes (INVALID_ARGUMENT, as the spec demands for an unsupported parameter) and ABORTED,
// which the spec gives for an operation already in flight, retried by the sidecars.
func (l *lifecycle) checkCodes(all []csiCall) {
	l.t.Helper()
	for _, c := range all {
		switch {
		case c.Code == "OK", c.Code == "Aborted":
		case c.Method == "CreateVolume" && c.Code == "InvalidArgument" && strings.Contains(c.Error, "knid"):
		default:
			l.t.Errorf("unexpected answer: %s", c)
		}
	}
}

// checkNoSecret wants no secret value in any line of a driver log written at debug level.
func (l *lifecycle) checkNoSecret(path string) {
	l.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		l.t.Error(err)
		return
	}
	for _, c := range l.canaries {
		if strings.Contains(string(data), c) {
			l.t.Errorf("%s: a StorageClass secret value appears in the driver's log", path)
		}
	}
}

// exists reports whether a volume has a backing (directory or image) in the state directory.
func (l *lifecycle) exists(handle string) bool {
	m, _ := filepath.Glob(filepath.Join(l.stateDir, "volumes", "*", handle+"*"))
	return len(m) > 0
}

// leftovers lists volumes and snapshots still on disk.
func (l *lifecycle) leftovers() []string {
	var out []string
	for _, d := range []string{"volumes", "snapshots"} {
		m, _ := filepath.Glob(filepath.Join(l.stateDir, d, "*", "*"))
		out = append(out, m...)
	}
	return out
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// snapshotReady is a cluster.Poll condition: the VolumeSnapshot name in testNS is ready to use. A
// snapshot whose status carries an error ends the poll with that error.
func snapshotReady(snaps *snapclient.Clientset, name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		vs, err := snaps.SnapshotV1().VolumeSnapshots(testNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if st := vs.Status; st != nil {
			if st.Error != nil && st.Error.Message != nil {
				return false, errors.New(*st.Error.Message)
			}
			return ptr.Deref(st.ReadyToUse, false), nil
		}
		return false, nil
	}
}
