package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/csikit/csikit/e2e/cluster"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/csikit/csikit/internal/cephtest"
)

// The cephfs example on the kubelet cluster: deploy/kubernetes/cephfs applied unchanged, against
// a one-node Ceph (internal/cephtest) on this machine's 127.0.0.1, which the driver's pods reach
// through the host's network.
const (
	cephfsDir = cluster.DeployDir + "/kubernetes/cephfs"
	// cephfsDriver is the name examples/cephfs registers (its main.Name); the example is cgo
	// and a workspace of its own, so it is not imported here.
	cephfsDriver = "cephfs.csikit.dev"
	cephfsNS     = "csikit-cephfs"
	// cephfsObject is the name of the Secret and the ConfigMap the user creates (00-namespace.yaml).
	cephfsObject = "csikit-cephfs"
	cephfsClass  = "csikit-cephfs"
	// cephfsUser is the cephx user the test gives the driver, with the caps examples/cephfs
	// documents (ceph-csi's).
	cephfsUser = "csikit-e2e"
)

// TestCephFSPods starts a one-node Ceph and the kubelet cluster, applies deploy/kubernetes/cephfs
// with a Secret and ConfigMap made by the test, and has pods use CephFS volumes: each case writes
// data from one pod and reads it from another. It then checks that no subvolume is left and that
// the cephx key is in no log of the driver's pods.
//
// With CSIKIT_E2E_HOLD set, the cluster stays up once the driver is ready until SIGINT or
// SIGTERM (e2e/storage-suite.sh with SUITE_DRIVER=cephfs uses it): it prints KUBECONFIG=... and
// CEPH_CLUSTER=... (the Ceph cluster's directory, with cluster.env).
func TestCephFSPods(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a cluster with a kubelet and a Ceph cluster; not in -short")
	}
	ctx := cluster.SignalContext(t, 40*time.Minute)
	if err := cluster.NodePreflight(ctx, t); err != nil {
		cluster.SkipOrFail(t, "the kubelet cluster cannot run here: %v", err)
	}
	if missing := cephtest.MissingPackages(); len(missing) > 0 {
		cluster.SkipOrFail(t, "needs a one-node Ceph: install the Debian packages %v (and ceph-fuse librados-dev libcephfs-dev)", missing)
	}
	if _, err := exec.LookPath("ceph-fuse"); err != nil {
		cluster.SkipOrFail(t, "the cephfs image carries this machine's ceph-fuse: apt-get install ceph-fuse")
	}
	if err := cluster.CephFSLibrariesPresent(); err != nil {
		cluster.SkipOrFail(t, "%v", err)
	}

	// Registered first, so stopped last: after kubelet and the pods that mount from it.
	began := time.Now()
	ceph, err := cephtest.Launch(ctx, "")
	if err != nil {
		t.Fatalf("one-node Ceph: %v", err)
	}
	t.Cleanup(func() {
		if err := ceph.Close(); err != nil {
			t.Errorf("stop Ceph: %v", err)
		}
	})
	t.Logf("one-node Ceph healthy in %s (%s, mons %s)", time.Since(began).Round(100*time.Millisecond), ceph.Dir, ceph.MonHost)
	// The caps docs/kubernetes.md gives a user: ceph-csi's, and the MDS flag p, without which the
	// storage suite's VolumeAttributesClass specs (maxFiles) would be PERMISSION_DENIED.
	out, err := ceph.Ceph(ctx, "auth", "get-or-create-key", "client."+cephfsUser,
		"mon", "allow r", "mgr", "allow rw", "mds", "allow rwp", "osd", "allow rw tag cephfs *=*")
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(out))

	work, logDir := cluster.PodsWorkDir(t)
	ms, err := cluster.LoadManifests(cephfsDir)
	if err != nil {
		t.Fatal(err)
	}
	runStart := time.Now()
	ps := cluster.NewProcs(t, logDir)
	n, err := cluster.StartNode(ctx, t, work, ps, cluster.CephFSImages(ctx, t, work, ms))
	if err != nil {
		cluster.SkipOrFailBuild(t, err)
	}
	defer n.LogTimings(t, runStart)
	if err := n.HostNetworkServiceRoute(t); err != nil {
		t.Fatal(err)
	}
	if err := n.Timed("driver ready (pods)", func() error {
		return deployCephFS(ctx, n, ms, map[string]string{"userID": cephfsUser, "userKey": key},
			map[string]string{"monitors": ceph.MonHost, "fsName": ceph.CephFS.Name})
	}); err != nil {
		t.Fatalf("%v\ndriver pods: %s", err, n.PodSummary(ctx, cephfsNS))
	}
	if os.Getenv("CSIKIT_E2E_HOLD") != "" {
		fmt.Printf("CEPH_CLUSTER=%s\n", ceph.Dir)
		n.Hold(t, work)
		return
	}
	runCases(ctx, t, n, cephfsCases, cephfsNS)
	// Every case deleted its claims and waited for their PVs to go: no subvolume is left.
	out, err = ceph.Ceph(ctx, "fs", "subvolume", "ls", ceph.CephFS.Name, "--group_name", "csi", "--format", "json")
	if err != nil {
		t.Error(err)
	} else if left := strings.Join(strings.Fields(string(out)), ""); left != "[]" {
		t.Errorf("subvolumes left in Ceph: %s", left)
	}
	// The node plugin (PID 1 of its container) adopted every ceph-fuse daemon and reaped each
	// one its unstage ended.
	if z := cephFuseZombies(); len(z) > 0 {
		t.Errorf("ceph-fuse zombies left by the node plugin: %v", z)
	}
	// The key travelled in CSI secrets only: no container of the driver logged it.
	if leaks := n.LogsContaining(ctx, cephfsNS, key); len(leaks) > 0 {
		t.Errorf("the cephx key appears in the logs of %v", leaks)
	}
}

// cephfsCases run in this order against one deployment of the driver.
var cephfsCases = []caseDef{
	{"write-read", (*podCase).cephfsWriteRead},
	{"two-pods-rwx", (*podCase).cephfsTwoPods},
	{"snapshot-restore", (*podCase).cephfsSnapshotRestore},
	{"clone", (*podCase).cephfsClone},
	{"online-expansion", (*podCase).cephfsOnlineExpansion},
}

// deployCephFS deploys deploy/kubernetes/cephfs as it is (see cluster.Node.DeployDriver), creating the
// Secret and the ConfigMap the user creates right after the namespace.
func deployCephFS(ctx context.Context, n *cluster.Node, ms []cluster.Manifest, secret, config map[string]string) error {
	return n.DeployDriver(ctx, ms, "cephfs", cephfsNS, cephfsDriver, nil, func(ctx context.Context) error {
		meta := metav1.ObjectMeta{Name: cephfsObject, Namespace: cephfsNS}
		if _, err := n.Kube.CoreV1().Secrets(cephfsNS).Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: secret}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create the Secret: %w", err)
		}
		if _, err := n.Kube.CoreV1().ConfigMaps(cephfsNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: config}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create the ConfigMap: %w", err)
		}
		return nil
	})
}

// cephFuseZombies lists the ceph-fuse processes that have exited and that their parent, a
// process named cephfs (the node plugin, PID 1 of its container), has not reaped. Other tests on
// this machine may leave zombies of their own, under other parents.
func cephFuseZombies() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, state, ppid := procStat(pid)
		if comm == "ceph-fuse" && state == "Z" {
			if parent, _, _ := procStat(ppid); parent == "cephfs" {
				out = append(out, pid)
			}
		}
	}
	return out
}

// procStat reads a process's name, state and parent from /proc/PID/stat; "" when it is gone.
func procStat(pid int) (comm, state string, ppid int) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", 0
	}
	open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 0 || end < open {
		return "", "", 0
	}
	f := strings.Fields(string(raw[end+1:]))
	if len(f) < 2 {
		return "", "", 0
	}
	ppid, _ = strconv.Atoi(f[1])
	return string(raw[open+1 : end]), f[0], ppid
}

// cephfsWriteRead: a pod writes a file to a new volume, a second pod reads it back; the volume's
// size is its quota, which the pod sees as the file system's size.
func (pc *podCase) cephfsWriteRead() {
	claimName := pc.prefix
	pc.claim(claimName, cephfsClass, corev1.PersistentVolumeFilesystem, "64Mi")
	data := "written by " + pc.prefix + " " + randomHex()
	pc.runPod(shellPod(pc.prefix+"-writer", fmt.Sprintf("echo '%s' > /data/file && sync", data), claimVolume(claimName, false), false))
	got := pc.runPod(shellPod(pc.prefix+"-reader", "cat /data/file; df -k /data | tail -n 1 | awk '{print $2}'", claimVolume(claimName, false), false))
	pc.expectLog(pc.prefix+"-reader", got, data+"\n65536")
}

// cephfsTwoPods: a ReadWriteMany claim used by two running pods at once, each writing its own
// file; a third pod reads both.
func (pc *podCase) cephfsTwoPods() {
	claimName := pc.prefix
	pc.claim(claimName, cephfsClass, corev1.PersistentVolumeFilesystem, "64Mi", func(c *corev1.PersistentVolumeClaim) {
		c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	})
	a, b := "a "+randomHex(), "b "+randomHex()
	for _, p := range []struct{ name, file, data string }{{"-a", "a", a}, {"-b", "b", b}} {
		pod := shellPod(pc.prefix+p.name, fmt.Sprintf("echo '%s' > /data/%s && sync && touch /tmp/ready && sleep 3600", p.data, p.file), claimVolume(claimName, false), false)
		pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}, PeriodSeconds: 1}
		pc.startPod(pod)
	}
	pc.expectLog(pc.prefix+"-reader", pc.runPod(shellPod(pc.prefix+"-reader", "cat /data/a /data/b", claimVolume(claimName, false), false)), a+"\n"+b)
}

// cephfsSnapshotRestore: a pod writes, the claim is snapshotted (a subvolume snapshot), a claim
// restored from the snapshot (the mgr's asynchronous clone) is read by a second pod.
func (pc *podCase) cephfsSnapshotRestore() {
	src := pc.prefix + "-src"
	pc.claim(src, cephfsClass, corev1.PersistentVolumeFilesystem, "64Mi")
	data := "snapshot " + randomHex()
	pc.runPod(shellPod(pc.prefix+"-writer", fmt.Sprintf("echo '%s' > /data/file && sync", data), claimVolume(src, false), false))
	name := pc.snapshot(src, cephfsClass)
	// Overwritten after the snapshot: the restore must hold what the snapshot caught.
	pc.runPod(shellPod(pc.prefix+"-overwrite", "echo changed > /data/file && sync", claimVolume(src, false), false))
	restored := pc.prefix + "-restored"
	pc.claim(restored, cephfsClass, corev1.PersistentVolumeFilesystem, "64Mi", func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapv1.GroupName), Kind: "VolumeSnapshot", Name: name}
	})
	pc.expectLog(pc.prefix+"-reader", pc.runPod(shellPod(pc.prefix+"-reader", "cat /data/file", claimVolume(restored, false), false)), data)
}

// cephfsClone: a claim cloned from another is read by a pod; then the source is overwritten and
// the clone still holds what was copied.
func (pc *podCase) cephfsClone() {
	src := pc.prefix + "-src"
	pc.claim(src, cephfsClass, corev1.PersistentVolumeFilesystem, "64Mi")
	data := "clone " + randomHex()
	pc.runPod(shellPod(pc.prefix+"-writer", fmt.Sprintf("echo '%s' > /data/file && sync", data), claimVolume(src, false), false))
	cl := pc.prefix + "-copy"
	pc.claim(cl, cephfsClass, corev1.PersistentVolumeFilesystem, "64Mi", func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: src}
	})
	pc.expectLog(pc.prefix+"-reader", pc.runPod(shellPod(pc.prefix+"-reader", "cat /data/file", claimVolume(cl, false), false)), data)
	pc.runPod(shellPod(pc.prefix+"-overwrite", "echo changed > /data/file && sync", claimVolume(src, false), false))
	pc.expectLog(pc.prefix+"-reader-2", pc.runPod(shellPod(pc.prefix+"-reader-2", "cat /data/file", claimVolume(cl, false), false)), data)
}

// cephfsOnlineExpansion: a pod keeps a volume mounted while its claim grows; the quota is raised
// by ControllerExpandVolume alone and the running pod sees the larger file system (ceph-fuse
// reports the quota as its size).
func (pc *podCase) cephfsOnlineExpansion() {
	claimName := pc.prefix
	pc.claim(claimName, cephfsClass, corev1.PersistentVolumeFilesystem, "64Mi")
	data := "expansion " + randomHex()
	p := pc.startPod(sleeper(pc.prefix+"-pod", data, claimVolume(claimName, false)))
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"resources": map[string]any{"requests": map[string]string{"storage": "128Mi"}}}})
	if _, err := pc.n.Kube.CoreV1().PersistentVolumeClaims(testNS).Patch(pc.ctx, claimName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		pc.t.Fatal(err)
	}
	want := resource.MustParse("128Mi")
	if err := cluster.Poll(pc.ctx, "claim "+claimName+" at 128Mi and the pod's file system grown", 3*time.Minute, func(ctx context.Context) (bool, error) {
		c, err := pc.n.Kube.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, claimName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got := c.Status.Capacity[corev1.ResourceStorage]
		size := pc.lastSize(p.Name)
		if got.Cmp(want) < 0 || size != 128*1024 {
			return false, fmt.Errorf("capacity %s, conditions %v, pod sees %d KiB", got.String(), c.Status.Conditions, size)
		}
		return true, nil
	}); err != nil {
		pc.t.Fatalf("%v\nevents: %s", err, pc.events(claimName))
	}
	pc.deletePod(p.Name)
	pc.expectLog(pc.prefix+"-reader", pc.runPod(shellPod(pc.prefix+"-reader", "cat /data/file", claimVolume(claimName, false), false)), data)
}
