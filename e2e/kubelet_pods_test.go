package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

// upstreamEntrypoints are the entrypoints of the released sidecar images, keyed by the last
// element of the image's repository; the images built here keep them, since the manifests give
// arguments only.
var upstreamEntrypoints = map[string]struct{ tool, entrypoint string }{
	"csi-provisioner":           {"csi-provisioner", "/csi-provisioner"},
	"csi-attacher":              {"csi-attacher", "/csi-attacher"},
	"csi-resizer":               {"csi-resizer", "/csi-resizer"},
	"csi-snapshotter":           {"csi-snapshotter", "/csi-snapshotter"},
	"livenessprobe":             {"livenessprobe", "/livenessprobe"},
	"csi-node-driver-registrar": {"registrar", "/csi-node-driver-registrar"},
}

// hostpathTools are the programs hostpath's node service runs through k8s.io/mount-utils and
// nodemount, as examples/hostpath/Dockerfile installs them (mount, util-linux, e2fsprogs,
// xfsprogs); here they are this machine's Debian binaries with their libraries.
var hostpathTools = []string{"mount", "umount", "blkid", "blockdev", "fsck", "fsck.ext4", "mkfs.ext4", "e2fsck",
	"resize2fs", "dumpe2fs", "mkfs.xfs", "xfs_repair", "xfs_growfs", "xfs_io"}

// containerImages is the set of images the containers of the manifests' StatefulSets and
// DaemonSets name: a driver deployment's images, each of which the cluster must have under
// exactly that name (no registry is reachable).
func containerImages(ms []manifest) map[string]bool {
	refs := map[string]bool{}
	for _, m := range ms {
		var spec *corev1.PodSpec
		switch o := m.obj.(type) {
		case *appsv1.StatefulSet:
			spec = &o.Spec.Template.Spec
		case *appsv1.DaemonSet:
			spec = &o.Spec.Template.Spec
		default:
			continue
		}
		for _, c := range spec.Containers {
			refs[c.Image] = true
		}
	}
	return refs
}

// hostpathImages returns the images deploy/kubernetes/hostpath names, each under the exact
// name the manifests use, and busybox for the test pods.
func hostpathImages(ctx context.Context, t *testing.T, work string, ms []manifest) func(map[string]string) ([]imageSpec, error) {
	return func(tools map[string]string) ([]imageSpec, error) {
		refs := containerImages(ms)
		bin := filepath.Join(work, "hostpath-static")
		// As examples/hostpath/Dockerfile builds it: static, no build paths.
		if err := buildFromCheckout(ctx, t, "hostpath (static)", "..", []string{"CGO_ENABLED=0"}, bin, "./examples/hostpath"); err != nil {
			return nil, err
		}
		return manifestImages(refs, tools, "hostpath", func() ([]layerFile, error) {
			files, err := hostTools(hostpathTools...)
			return append(files, layerFile{name: "/usr/local/bin/hostpath", src: bin}, layerFile{name: "/tmp"},
				layerFile{name: "/etc/mke2fs.conf", src: "/etc/mke2fs.conf"}), err
		})
	}
}

// buildFromCheckout builds the Go package pkg of this checkout into out, as the project's
// Dockerfiles do (no build paths, stripped), running in dir with env added, and logs how long
// it took under what.
func buildFromCheckout(ctx context.Context, t *testing.T, what, dir string, env []string, out, pkg string) error {
	goBin, err := goCommand()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := run(ctx, dir, env, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg); err != nil {
		return fmt.Errorf("build %s: %w", what, err)
	}
	t.Logf("built %s from this checkout in %s", what, time.Since(start).Round(time.Second))
	return nil
}

// manifestImages returns an image for every reference in refs, under that exact name: the
// driver's own (repository base name driver, entrypoint /usr/local/bin/DRIVER, files from
// driverFiles) or an upstream sidecar from the tools built for it; and busybox for the test
// pods. Sorted by name, so a build is the same whatever the map's order.
func manifestImages(refs map[string]bool, tools map[string]string, driver string, driverFiles func() ([]layerFile, error)) ([]imageSpec, error) {
	var specs []imageSpec
	for ref := range refs {
		base := path.Base(ref[:strings.LastIndex(ref, ":")])
		if base == driver {
			files, err := driverFiles()
			if err != nil {
				return nil, err
			}
			specs = append(specs, imageSpec{ref: ref, entrypoint: []string{"/usr/local/bin/" + driver}, files: files})
			continue
		}
		up, ok := upstreamEntrypoints[base]
		if !ok {
			return nil, fmt.Errorf("no image can be built here for %s", ref)
		}
		files, err := withLibraries(tools[up.tool], up.entrypoint)
		if err != nil {
			return nil, err
		}
		specs = append(specs, imageSpec{ref: ref, entrypoint: []string{up.entrypoint}, files: files})
	}
	bb, err := busyboxFiles()
	if err != nil {
		return nil, err
	}
	specs = append(specs, imageSpec{ref: busyboxImage, cmd: []string{"sh"}, files: bb})
	sortSpecs(specs)
	return specs, nil
}

// TestPods runs a one-node Kubernetes with a kubelet, kube-proxy and CoreDNS (node_test.go,
// kubelet_dns_test.go), deploys hostpath from deploy/kubernetes unchanged (controller
// StatefulSet, node DaemonSet with the registrar and livenessprobe), and has pods use its
// volumes: in each case one pod writes data and another reads it back. The bucket-pod case does
// the same with memorys3 from deploy/kubernetes/memorys3 (kubelet_bucket_test.go): an object put
// and got back by pods holding a BucketAccess's keys.
//
// With CSIKIT_E2E_HOLD set, the cluster stays up once the driver is ready until SIGINT or
// SIGTERM (kubelet-cluster.sh uses it), for kubectl with the admin kubeconfig it prints.
func TestPods(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a cluster with a kubelet; not in -short")
	}
	ctx := testContext(t, 50*time.Minute)
	if err := nodePreflight(ctx, t); err != nil {
		skipOrFail(t, "the kubelet cluster cannot run here: %v", err)
	}
	work, logDir := podsWorkDir(t)
	ms, err := loadManifests(hostpathDir)
	if err != nil {
		t.Fatal(err)
	}
	runStart := time.Now()
	ps := newProcs(t, logDir)
	s3ms, err := loadManifests(memorys3Dir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := startNode(ctx, t, work, ps, func(tools map[string]string) ([]imageSpec, error) {
		specs, err := hostpathImages(ctx, t, work, ms)(tools)
		if err != nil {
			return nil, err
		}
		s3, err := memorys3Images(ctx, t, work, s3ms, tools)
		return append(specs, s3...), err
	})
	if err != nil {
		skipOrFailBuild(t, err)
	}
	defer n.logTimings(t, runStart)

	if err := n.timed("driver ready (pods)", func() error { return n.deployHostpath(ctx, ms) }); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("CSIKIT_E2E_HOLD") != "" {
		n.hold(t, work)
		return
	}
	n.runCases(ctx, t, podCases, "csikit-hostpath")
	// Every case deleted its claims and waited for their volumes to go: nothing is left.
	if left := volumesLeft(); len(left) > 0 {
		t.Errorf("volumes left in %s: %v", hostpathStateDir, left)
	}
}

// skipOrFailBuild ends the test when the cluster could not start.
func skipOrFailBuild(t *testing.T, err error) {
	t.Helper()
	if strings.HasPrefix(err.Error(), "build:") {
		skipOrFail(t, "the binaries cannot be built: %v", err)
	}
	t.Fatal(err)
}

// podsWorkDir makes the directory a kubelet-cluster test works in, with logs/ for its processes'
// logs. The clean-up releases what the cluster held on the host (mounts, loop devices, network)
// and removes the directory, unless the test failed or CSIKIT_E2E_KEEP is set: then it stays
// for its logs.
func podsWorkDir(t *testing.T) (work, logDir string) {
	t.Helper()
	work, err := os.MkdirTemp("", "csikit-pods-")
	if err != nil {
		t.Fatal(err)
	}
	// Before the clean-up below is registered, so its record is removed after it has run.
	netnsBefore, _ := filepath.Glob("/run/netns/cni-*")
	if err := recordRun(t, &runRecord{Work: work, NetnsBefore: netnsBefore}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		releaseHostResources(t, work)
		if t.Failed() || os.Getenv("CSIKIT_E2E_KEEP") != "" {
			t.Logf("kept %s for its logs (logs/*.log, kubelet's pods' logs under /var/log/pods)", work)
			return
		}
		if err := os.RemoveAll(work); err != nil {
			t.Errorf("remove %s: %v", work, err)
		}
	})
	logDir = filepath.Join(work, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return work, logDir
}

// logTimings logs how long each phase of the run took and the whole run since start: the
// numbers docs/kubernetes.md and the CI log quote.
func (n *node) logTimings(t *testing.T, start time.Time) {
	for _, p := range n.phases {
		t.Logf("timing %-30s %s", p.name, p.took.Round(100*time.Millisecond))
	}
	t.Logf("timing %-30s %s", "whole run", time.Since(start).Round(time.Second))
}

// hold keeps the cluster up until a signal, for a person with kubectl. It serves the kubelet
// switch on work/control.sock (kubelet-cluster.sh stop-kubelet, start-kubelet, kubelet-state)
// and, with CSIKIT_E2E_SSH set, runs the node's sshd for Kubernetes' disruptive storage specs
// (kubelet_ssh_test.go), printing KUBE_SSH_KEY_PATH and KUBE_SSH_USER for e2e.test.
func (n *node) hold(t *testing.T, work string) {
	sw := &kubeletSwitch{ps: n.procs, kubelet: n.kubelet, ready: n.waitKubelet}
	control := filepath.Join(work, "control.sock")
	stop, err := serveControl(control, sw.handler())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		stop()
		// The clean-up stops kubelet before it removes containers: the one running now.
		n.kubelet = sw.current()
	}()
	if os.Getenv("CSIKIT_E2E_SSH") != "" {
		shims, err := filepath.Abs("node-ssh")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := startSSH(ctx, n.procs, work, net.JoinHostPort(nodeIP, "22"), shims, control)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("sshd on %s for root with the key %s; sessions run with %s first on PATH", s.listen, s.key, shims)
		fmt.Printf("KUBE_SSH_KEY_PATH=%s\nKUBE_SSH_USER=root\n", s.key)
	}
	t.Logf("cluster up: export KUBECONFIG=%s (node %s, containerd at %s, kubelet switch at %s); SIGINT or SIGTERM ends it",
		n.adminKC, nodeName, n.containerd, control)
	fmt.Printf("KUBECONFIG=%s\n", n.adminKC)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	<-sig
}

// deployHostpath deploys deploy/kubernetes/hostpath as it is (see deployDriver), with the
// snapshot-controller's group snapshots on.
func (n *node) deployHostpath(ctx context.Context, ms []manifest) error {
	return n.deployDriver(ctx, ms, "hostpath", "csikit-hostpath", hostpath.Name,
		[]string{"--feature-gates=CSIVolumeGroupSnapshot=true"}, nil)
}

// deployDriver installs the snapshot CRDs and the cluster's snapshot-controller (add-ons the
// manifests assume; controllerFlags are added to its own), applies the manifests as they are,
// calling afterNamespace, if given, right after the namespace is created (where a user creates
// the Secret and ConfigMap the manifests name), and waits until the pods of app in ns are
// ready and kubelet has registered driver.
func (n *node) deployDriver(ctx context.Context, ms []manifest, app, ns, driver string, controllerFlags []string, afterNamespace func(context.Context) error) error {
	crds, err := snapshotCRDs(ctx)
	if err != nil {
		return err
	}
	if err := n.installCRDs(ctx, crds); err != nil {
		return err
	}
	args := append([]string{"--kubeconfig=" + n.adminKC, "--leader-election=false", "--v=2"}, controllerFlags...)
	if _, err := n.procs.start("snapshot-controller", n.bins.snapshotController, args); err != nil {
		return err
	}
	for _, m := range ms {
		if err := n.apply(ctx, m); err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		if m.gvk.Kind == "Namespace" && afterNamespace != nil {
			if err := afterNamespace(ctx); err != nil {
				return err
			}
		}
	}
	if err := n.waitDriverPods(ctx, app, ns); err != nil {
		return err
	}
	return poll(ctx, "CSINode "+nodeName+" lists "+driver, 2*time.Minute, func(ctx context.Context) (bool, error) {
		cn, err := n.kube.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, d := range cn.Spec.Drivers {
			if d.Name == driver {
				return true, nil
			}
		}
		return false, fmt.Errorf("drivers %v", cn.Spec.Drivers)
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describePod is a pod's phase and its containers' states, for timeout messages.
func describePod(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", p.Status.Phase)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			fmt.Fprintf(&b, " [%s: %s]", c.Type, c.Message)
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, " %s: waiting %s %s;", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Terminated != nil:
			fmt.Fprintf(&b, " %s: terminated %s (exit %d) %s;", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.State.Terminated.Message)
		case cs.State.Running != nil:
			fmt.Fprintf(&b, " %s: running (restarts %d);", cs.Name, cs.RestartCount)
		}
	}
	return b.String()
}

// podSummary is every pod of ns with describePod, for failure messages.
func (n *node) podSummary(ctx context.Context, ns string) string {
	pods, err := n.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name+": "+describePod(&p))
	}
	return strings.Join(out, "; ")
}

// podCase is one case's handle on the cluster: the objects it made are deleted when it ends,
// pods first, so that volumes are unpublished before their claims go.
type podCase struct {
	t      *testing.T
	ctx    context.Context
	n      *node
	prefix string
	pods   []string
	claims []string
	extra  []func() error
}

func (pc *podCase) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kube := pc.n.kube
	for _, p := range pc.pods {
		if err := ignoreNotFound(kube.CoreV1().Pods(testNS).Delete(ctx, p, metav1.DeleteOptions{})); err != nil {
			pc.t.Errorf("delete pod %s: %v", p, err)
		}
	}
	for _, p := range pc.pods {
		if err := poll(ctx, "pod "+p+" gone", 2*time.Minute, func(ctx context.Context) (bool, error) {
			_, err := kube.CoreV1().Pods(testNS).Get(ctx, p, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			pc.t.Errorf("%v", err)
		}
	}
	for _, f := range pc.extra {
		if err := f(); err != nil {
			pc.t.Errorf("cleanup: %v", err)
		}
	}
	var pvs []string
	for _, c := range pc.claims {
		if pvc, err := kube.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, c, metav1.GetOptions{}); err == nil && pvc.Spec.VolumeName != "" {
			pvs = append(pvs, pvc.Spec.VolumeName)
		}
		if err := ignoreNotFound(kube.CoreV1().PersistentVolumeClaims(testNS).Delete(ctx, c, metav1.DeleteOptions{})); err != nil {
			pc.t.Errorf("delete claim %s: %v", c, err)
		}
	}
	// The driver deletes each volume (reclaim policy Delete): the PV goes once it has.
	for _, pv := range pvs {
		if err := poll(ctx, "volume "+pv+" deleted", 2*time.Minute, func(ctx context.Context) (bool, error) {
			_, err := kube.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			pc.t.Errorf("%v", err)
		}
	}
}

// claim creates a claim of class with mode and size.
func (pc *podCase) claim(name, class string, mode corev1.PersistentVolumeMode, size string, mutate ...func(*corev1.PersistentVolumeClaim)) {
	pc.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			VolumeMode:       ptr.To(mode),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	for _, m := range mutate {
		m(pvc)
	}
	if _, err := pc.n.kube.CoreV1().PersistentVolumeClaims(testNS).Create(pc.ctx, pvc, metav1.CreateOptions{}); err != nil {
		pc.t.Fatalf("create claim %s: %v", name, err)
	}
	pc.claims = append(pc.claims, name)
}

// claimVolume is a pod volume of the claim.
func claimVolume(claim string, readOnly bool) corev1.Volume {
	return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}}
}

// shellPod is a busybox pod that runs script once (restartPolicy Never) with vol mounted at
// /data, or as the block device /dev/xvda when block is set.
func shellPod(name, script string, vol corev1.Volume, block bool) *corev1.Pod {
	c := corev1.Container{Name: "sh", Image: busyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh", "-c", script}}
	if block {
		c.VolumeDevices = []corev1.VolumeDevice{{Name: vol.Name, DevicePath: "/dev/xvda"}}
	} else {
		c.VolumeMounts = []corev1.VolumeMount{{Name: vol.Name, MountPath: "/data"}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		// DNSPolicy Default: the volume pods resolve no names, so they do not wait on the cluster DNS.
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{c}, DNSPolicy: corev1.DNSDefault,
			Volumes: []corev1.Volume{vol}, TerminationGracePeriodSeconds: ptr.To(int64(1))},
	}
}

// runPod creates pod, waits until it has ended and wants it Succeeded; it returns the pod's log
// (the first container's). The pod is deleted when the case ends.
func (pc *podCase) runPod(pod *corev1.Pod) string {
	pc.t.Helper()
	start := time.Now()
	final := pc.createAndWait(pod, "ended", func(p *corev1.Pod) (bool, error) {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return true, nil
		}
		return false, fmt.Errorf("%s", describePod(p))
	})
	logs := pc.logs(pod.Name, pod.Spec.Containers[0].Name)
	if final.Status.Phase != corev1.PodSucceeded {
		pc.t.Fatalf("pod %s %s: %s\nlog:\n%s\nevents: %s", pod.Name, final.Status.Phase, describePod(final), logs, pc.events(pod.Name))
	}
	pc.t.Logf("pod %s succeeded in %s", pod.Name, time.Since(start).Round(100*time.Millisecond))
	pc.n.phases = append(pc.n.phases, phase{"pod " + pod.Name, time.Since(start)})
	return logs
}

// createAndWait creates pod, registers it for deletion when the case ends, and polls it for up
// to 4 minutes until done says so; it returns the pod as last seen. A failed wait fails the test
// with done's last error and the pod's events.
func (pc *podCase) createAndWait(pod *corev1.Pod, what string, done func(*corev1.Pod) (bool, error)) *corev1.Pod {
	pc.t.Helper()
	kube := pc.n.kube
	if _, err := kube.CoreV1().Pods(testNS).Create(pc.ctx, pod, metav1.CreateOptions{}); err != nil {
		pc.t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	pc.pods = append(pc.pods, pod.Name)
	var last *corev1.Pod
	if err := poll(pc.ctx, "pod "+pod.Name+" "+what, 4*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(testNS).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		return done(p)
	}); err != nil {
		pc.t.Fatalf("%v\nevents: %s", err, pc.events(pod.Name))
	}
	return last
}

// logs is a container's log through the API server and kubelet.
func (pc *podCase) logs(pod, container string) string {
	b, err := pc.n.kube.CoreV1().Pods(testNS).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(pc.ctx)
	if err != nil {
		return "(log: " + err.Error() + ")"
	}
	return string(b)
}

// events are the events about an object, for failure messages.
func (pc *podCase) events(name string) string {
	evs, err := pc.n.kube.CoreV1().Events(testNS).List(pc.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return strings.Join(out, "; ")
}

// expectLog wants the pod's log to be want exactly (after trimming blanks).
func (pc *podCase) expectLog(pod, got, want string) {
	pc.t.Helper()
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		pc.t.Errorf("pod %s read %q, want %q", pod, strings.TrimSpace(got), strings.TrimSpace(want))
	}
}

// caseDef is one pods case: a subtest of its name, run with a podCase of its own.
type caseDef struct {
	name string
	run  func(pc *podCase)
}

// runCases creates the test namespace and runs cases in order, each a subtest timed as a
// phase. A failed case may leave the driver in a state the next ones would trip on; they still
// run, each reporting its own result, and the failure logs the pods of driverNS.
func (n *node) runCases(ctx context.Context, t *testing.T, cases []caseDef, driverNS string) {
	t.Helper()
	if _, err := n.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		if !t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			pc := &podCase{t: t, ctx: ctx, n: n, prefix: tc.name}
			t.Cleanup(pc.cleanup)
			tc.run(pc)
			n.phases = append(n.phases, phase{"case " + tc.name, time.Since(start)})
		}) {
			t.Logf("case %s failed; driver pods: %s", tc.name, n.podSummary(ctx, driverNS))
		}
	}
}

// podCases run in this order against one deployment of the driver.
var podCases = []caseDef{
	{"filesystem-dir", func(pc *podCase) { pc.writeThenRead("csikit-hostpath") }},
	{"filesystem-ext4", func(pc *podCase) { pc.writeThenRead("csikit-hostpath-ext4") }},
	{"block", (*podCase).block},
	{"read-only", (*podCase).readOnly},
	{"fsgroup", (*podCase).fsGroup},
	{"inline-ephemeral", (*podCase).inlineEphemeral},
	{"generic-ephemeral", (*podCase).genericEphemeral},
	{"snapshot-restore", (*podCase).snapshotRestore},
	{"clone", (*podCase).clone},
	{"online-expansion-xfs", (*podCase).onlineExpansion},
	{"read-write-once-pod", (*podCase).readWriteOncePod},
	{"two-pods-one-volume", (*podCase).twoPodsOneVolume},
	// memorys3 and the COSI sidecar as a pod, an application pod using a BucketAccess's keys.
	{"bucket-pod", (*podCase).bucketPod},
	// Last: they restart the node's components.
	{"kubelet-restart", (*podCase).kubeletRestart},
	{"node-plugin-restart-dir", func(pc *podCase) { pc.nodePluginRestart("csikit-hostpath") }},
	// Fails with hostpath as of this writing: after the restart, NodeUnpublishVolume refuses the
	// target ("has a mount that is not this volume's"), because the kernel names the loop
	// device's backing file from the dead container's mount (/volumes/...), not the canonical
	// state-directory path hostpath compares (examples/hostpath/hostpath/loop.go sameBacking).
	{"node-plugin-restart-ext4", func(pc *podCase) { pc.nodePluginRestart("csikit-hostpath-ext4") }},
}

// writeThenRead: a pod writes a file to a new volume of class, a second pod reads it back.
func (pc *podCase) writeThenRead(class string) {
	claimName := pc.prefix
	pc.claim(claimName, class, corev1.PersistentVolumeFilesystem, "64Mi")
	data := "written by " + pc.prefix + " " + randomHex()
	pc.runPod(shellPod(pc.prefix+"-writer", fmt.Sprintf("echo '%s' > /data/file && sync", data), claimVolume(claimName, false), false))
	got := pc.runPod(shellPod(pc.prefix+"-reader", "cat /data/file", claimVolume(claimName, false), false))
	pc.expectLog(pc.prefix+"-reader", got, data)
}

// block: a raw block volume, written and read with dd at an offset past the first MiB.
func (pc *podCase) block() {
	claimName := pc.prefix
	pc.claim(claimName, "csikit-hostpath", corev1.PersistentVolumeBlock, "64Mi")
	data := "block " + randomHex()
	pc.runPod(shellPod(pc.prefix+"-writer", fmt.Sprintf("printf '%%s' '%s' | dd of=/dev/xvda bs=4096 seek=300 conv=fsync", data), claimVolume(claimName, false), true))
	got := pc.runPod(shellPod(pc.prefix+"-reader", fmt.Sprintf("dd if=/dev/xvda bs=4096 skip=300 count=1 2>/dev/null | head -c %d", len(data)), claimVolume(claimName, false), true))
	pc.expectLog(pc.prefix+"-reader", got, data)
}

// readOnly: the reader mounts the claim read-only; it reads the data and cannot write.
func (pc *podCase) readOnly() {
	claimName := pc.prefix
	pc.claim(claimName, "csikit-hostpath", corev1.PersistentVolumeFilesystem, "64Mi")
	data := "read-only " + randomHex()
	pc.runPod(shellPod(pc.prefix+"-writer", fmt.Sprintf("echo '%s' > /data/file", data), claimVolume(claimName, false), false))
	got := pc.runPod(shellPod(pc.prefix+"-reader",
		"cat /data/file; if touch /data/other 2>/dev/null; then echo WROTE; exit 1; fi; grep -q ' /data .*\\bro\\b' /proc/mounts || { echo 'not mounted ro'; cat /proc/mounts; exit 1; }",
		claimVolume(claimName, true), false))
	pc.expectLog(pc.prefix+"-reader", got, data)
}

// fsGroup: a non-root pod with an fsGroup writes; kubelet gave the volume that group, and a
// second pod of another user in the group reads the file.
func (pc *podCase) fsGroup() {
	claimName := pc.prefix
	pc.claim(claimName, "csikit-hostpath", corev1.PersistentVolumeFilesystem, "64Mi")
	data := "fsgroup " + randomHex()
	w := shellPod(pc.prefix+"-writer", fmt.Sprintf("echo '%s' > /data/file && stat -c '%%g' /data /data/file", data), claimVolume(claimName, false), false)
	w.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(1000)), RunAsGroup: ptr.To(int64(1000)), FSGroup: ptr.To(int64(4321))}
	got := pc.runPod(w)
	pc.expectLog(w.Name, got, "4321\n4321")
	r := shellPod(pc.prefix+"-reader", "cat /data/file", claimVolume(claimName, false), false)
	r.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(2000)), RunAsGroup: ptr.To(int64(2000)), FSGroup: ptr.To(int64(4321))}
	pc.expectLog(r.Name, pc.runPod(r), data)
}

// twoContainers is a pod whose init container writes and whose container reads: an ephemeral
// volume lives as long as its pod, so the two programs that share it are two containers.
func twoContainers(name, data string, vol corev1.Volume) *corev1.Pod {
	p := shellPod(name, "cat /data/file", vol, false)
	p.Spec.InitContainers = []corev1.Container{{Name: "writer", Image: busyboxImage, ImagePullPolicy: corev1.PullNever,
		Command:      []string{"sh", "-c", fmt.Sprintf("echo '%s' > /data/file && sync", data)},
		VolumeMounts: []corev1.VolumeMount{{Name: vol.Name, MountPath: "/data"}}}}
	return p
}

// inlineEphemeral: a CSI inline ephemeral volume, created by NodePublishVolume.
func (pc *podCase) inlineEphemeral() {
	data := "inline " + randomHex()
	vol := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: hostpath.Name}}}
	p := twoContainers(pc.prefix, data, vol)
	pc.expectLog(p.Name, pc.runPod(p), data)
}

// genericEphemeral: a generic ephemeral volume, a claim made for the pod and deleted with it.
func (pc *podCase) genericEphemeral() {
	data := "generic " + randomHex()
	vol := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("csikit-hostpath"),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		}}}}}
	p := twoContainers(pc.prefix, data, vol)
	pc.expectLog(p.Name, pc.runPod(p), data)
	// The claim is the pod's: it goes with the pod, and its volume with it.
	pc.claims = append(pc.claims, p.Name+"-data")
}

// waitDriverPods waits until the driver's controller and node pods in ns (at least two) are all
// ready, failing at once if a cluster process died.
func (n *node) waitDriverPods(ctx context.Context, driver, ns string) error {
	return poll(ctx, driver+" controller and node pods ready", 5*time.Minute, func(ctx context.Context) (bool, error) {
		if err := n.procs.checkAlive(); err != nil {
			return false, err
		}
		pods, err := n.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(pods.Items) < 2 {
			return false, fmt.Errorf("%d pods", len(pods.Items))
		}
		for _, p := range pods.Items {
			if !podReady(&p) {
				return false, fmt.Errorf("pod %s not ready: %s", p.Name, describePod(&p))
			}
		}
		return true, nil
	})
}
