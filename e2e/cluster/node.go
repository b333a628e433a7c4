package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The one-node cluster with a kubelet: the control plane of cluster.go, plus containerd
// (Debian's, CRI) with runc, the CNI bridge plugin and kubelet v1.36.1, all as processes of the
// test. What this machine kind needs: cgroup v1, so kubelet runs with failCgroupV1:
// false and the cgroupfs driver; no CAP_SYS_RESOURCE, so containerd restricts oom_score_adj; no
// registry, so images are built here and imported (images.go); no dummy interface and a
// loopback node IP refused by kubelet, so the node IP lives on the CNI bridge, which the test
// creates before kubelet starts.
const (
	nodeName   = "e2e-node"
	nodeBridge = "csikite2e0"   // the CNI bridge; the node IP and the pods' gateway live on it
	nodeIP     = "10.88.0.1"    // the node's address and the API server's
	podSubnet  = "10.88.0.0/16" // pod addresses (host-local IPAM)
	serviceIP  = "10.0.0.1"     // the kubernetes Service: first address of --service-cluster-ip-range
	KubeletDir = "/var/lib/kubelet"
	// HostpathStateDir is the state directory deploy/kubernetes/hostpath mounts from the host.
	HostpathStateDir = "/var/lib/csikit-hostpath"
	// cniBinDir is where Debian's containernetworking-plugins installs the plugins.
	cniBinDir = "/usr/lib/cni"
)

// nodePackages are the Debian packages the kubelet cluster runs on, for the skip message and CI.
const nodePackages = "containerd runc containernetworking-plugins iptables busybox-static etcd-server"

// phase is one timed step of bringing the cluster up, printed at the end of a run.
type phase struct {
	name string
	took time.Duration
}

// Node is the cluster with kubelet: what the pods tests drive.
type Node struct {
	*Cluster
	t          testing.TB
	ctrBin     string
	containerd string // containerd's socket
	Kubelet    *Proc  // the running kubelet, replaced when a test restarts it
	kubeletBin string
	healthz    string // kubelet's healthz URL
	tools      map[string]string
	phases     []phase
}

// AddPhase records a step that began at start and ends now, for the summary LogTimings prints.
// The pods tests time their cases with it.
func (n *Node) AddPhase(name string, start time.Time) {
	n.phases = append(n.phases, phase{name, time.Since(start)})
}

// Timed runs fn and records its duration under name.
func (n *Node) Timed(name string, fn func() error) error {
	start := time.Now()
	err := fn()
	n.phases = append(n.phases, phase{name, time.Since(start)})
	n.t.Logf("phase %-28s %s", name, time.Since(start).Round(100*time.Millisecond))
	return err
}

// NodePreflight says why the kubelet cluster cannot run here, or nil. It first releases what a
// dead run left (node_leftovers.go).
func NodePreflight(ctx context.Context, t testing.TB) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root: kubelet, containerd and the hostpath node plugin mount and attach loop devices")
	}
	var missing []string
	for _, c := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip", "etcd", "busybox", "ldd"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			missing = append(missing, filepath.Join(cniBinDir, p))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s (Debian: apt-get install %s)", strings.Join(missing, ", "), nodePackages)
	}
	rec, err := readRunRecord()
	if err != nil {
		return err
	}
	if rec != nil {
		if rec.alive() {
			return fmt.Errorf("another run (pid %d, %s) holds this machine", rec.PID, rec.Work)
		}
		if err := releaseDeadRun(ctx, t, rec); err != nil {
			return fmt.Errorf("release what a dead run left: %w", err)
		}
	}
	if mps := MountsUnder(KubeletDir); len(mps) > 0 {
		return fmt.Errorf("%s has mounts, and no record of a dead run of this test says they are its own (%s): another kubelet, or a run of an older version of this test: %s",
			KubeletDir, runRecordPath, strings.Join(mps, ", "))
	}
	if _, err := os.Stat("/sys/class/net/" + nodeBridge); err == nil {
		return fmt.Errorf("the interface %s exists: another run is going on, or one did not clean up (ip link del %s)", nodeBridge, nodeBridge)
	}
	return nil
}

// MountsUnder lists the mount points at or under dir, deepest last.
func MountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// unmountAll lazily unmounts everything at or under dir, deepest first.
func unmountAll(t testing.TB, dir string) {
	mps := MountsUnder(dir)
	for i := len(mps) - 1; i >= 0; i-- {
		if err := syscall.Unmount(mps[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Logf("unmount %s: %v", mps[i], err)
		}
	}
}

// StartNode brings up the whole one-node cluster: network, API server and controllers,
// containerd with the images, kubelet; it returns when the node is Ready and schedulable. Every
// step is undone by t.Cleanup, in reverse.
func StartNode(ctx context.Context, t testing.TB, work string, ps *Procs, images func(tools map[string]string) ([]ImageSpec, error)) (*Node, error) {
	n := &Node{t: t}
	var err error
	if n.ctrBin, err = exec.LookPath("ctr"); err != nil {
		return nil, err
	}
	// Leftovers of an earlier run that ended without cleaning up: nothing is mounted there
	// (NodePreflight checked), so they are only files.
	for _, d := range []string{KubeletDir, HostpathStateDir} {
		if err := os.RemoveAll(d); err != nil {
			return nil, fmt.Errorf("remove stale %s: %w", d, err)
		}
	}
	var paths map[string]string
	if err := n.Timed("build binaries", func() error {
		paths, err = BuildTools(ctx, t, "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
			"csi-provisioner", "csi-attacher", "csi-resizer", "csi-snapshotter", "snapshot-controller",
			"registrar", "livenessprobe", "pause", "kube-proxy", "coredns",
			"cosi-controller", "cosi-sidecar", "bucketclient")
		return err
	}); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	n.kubeletBin = paths["kubelet"]
	n.tools = paths
	if err := updateRunRecord(func(rec *runRecord) { rec.KubeProxy = paths["kube-proxy"] }); err != nil {
		return nil, err
	}
	if err := n.setupNetwork(t); err != nil {
		return nil, err
	}
	etcdBin, _ := exec.LookPath("etcd")
	bins := &Binaries{apiserver: paths["kube-apiserver"], controllerManager: paths["kube-controller-manager"], scheduler: paths["kube-scheduler"],
		Provisioner: paths["csi-provisioner"], Attacher: paths["csi-attacher"], Resizer: paths["csi-resizer"],
		Snapshotter: paths["csi-snapshotter"], SnapshotController: paths["snapshot-controller"], Etcd: etcdBin}
	if err := n.Timed("control plane ready", func() error {
		c, err := startAPIServerOn(ctx, work, etcdBin, bins.apiserver, ps, nodeIP)
		if err != nil {
			return err
		}
		n.Cluster = c
		c.bins = bins
		// What a one-node cluster with kubelet needs of the controller manager: volumes
		// (binder, expander, attach/detach, protection, generic ephemeral), the workloads of the
		// manifests (StatefulSet, DaemonSet), node lifecycle (lifts the not-ready taint once
		// kubelet reports Ready), namespaces, service accounts, kube-root-ca.crt, and the
		// garbage collector (owned pods and capacity objects).
		return c.startControllersWith(strings.Join([]string{
			"persistentvolume-binder-controller", "persistentvolume-expander-controller", "persistentvolume-attach-detach-controller",
			"persistentvolumeclaim-protection-controller", "persistentvolume-protection-controller", "ephemeral-volume-controller",
			"statefulset-controller", "daemonset-controller", "node-lifecycle-controller", "namespace-controller",
			"serviceaccount-controller", "root-ca-certificate-publisher-controller", "garbage-collector-controller",
			"pod-garbage-collector-controller",
			// Services with selectors (kube-dns, memorys3's) get EndpointSlices, which kube-proxy
			// and CoreDNS read; Deployments (CoreDNS's, memorys3's) get their ReplicaSets and pods.
			"endpointslice-controller", "deployment-controller", "replicaset-controller",
			// A VolumeAttributesClass keeps its vac-protection finalizer until no claim or
			// volume uses it; without this controller it is never deleted (the storage suite's
			// "should be protected by vac-protection finalizer" waits for that).
			"volumeattributesclass-protection-controller",
		}, ","))
	}); err != nil {
		return nil, err
	}
	if err := n.serviceRoute(t); err != nil {
		return nil, err
	}
	if err := n.Timed("start containerd", func() error { return n.startContainerd(ctx, work, ps) }); err != nil {
		return nil, err
	}
	if err := n.Timed("images built and imported", func() error {
		specs, err := images(paths)
		if err != nil {
			return err
		}
		specs = append(specs, ImageSpec{ref: pauseImage, entrypoint: []string{"/pause"}, files: []layerFile{{name: "/pause", src: paths["pause"]}}})
		specs = append(specs, ImageSpec{ref: corednsImage, entrypoint: []string{"/coredns"}, files: []layerFile{{name: "/coredns", src: paths["coredns"]}}})
		extra, err := extraImageSpecs(os.Getenv(extraImagesEnv))
		if err != nil {
			return err
		}
		specs = append(specs, extra...)
		return n.importImages(ctx, work, specs)
	}); err != nil {
		return nil, err
	}
	if err := n.Timed("node ready (kubelet)", func() error { return n.startKubelet(ctx, work, ps) }); err != nil {
		return nil, err
	}
	if err := n.Timed("kube-proxy synced", func() error { return n.startKubeProxy(ctx, work, paths["kube-proxy"]) }); err != nil {
		return nil, err
	}
	if err := n.Timed("cluster DNS ready (CoreDNS)", func() error { return n.deployCoreDNS(ctx) }); err != nil {
		return nil, err
	}
	return n, nil
}

// setupNetwork creates the CNI bridge with the node IP (the bridge plugin then uses it as the
// pods' gateway).
func (n *Node) setupNetwork(t testing.TB) error {
	for _, args := range [][]string{
		{"link", "add", nodeBridge, "type", "bridge"},
		{"addr", "add", nodeIP + "/16", "dev", nodeBridge},
		{"link", "set", nodeBridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		if args[1] == "add" && args[0] == "link" {
			t.Cleanup(func() {
				if out, err := exec.Command("ip", "link", "del", nodeBridge).CombinedOutput(); err != nil {
					t.Logf("ip link del %s: %v %s", nodeBridge, err, out)
				}
			})
		}
	}
	return nil
}

// serviceRoute makes the kubernetes Service reach the API server from pods: one DNAT rule from
// the Service's address to the API server's. kube-proxy routes every other Service, but not this
// one: the API server runs with --endpoint-reconciler-type=none (cluster.go), so the
// Service has no endpoints for kube-proxy to route to, and this rule, evaluated before the
// filter table's reject of endpoint-less Services, does instead.
func (n *Node) serviceRoute(t testing.TB) error {
	port := n.server[strings.LastIndex(n.server, ":")+1:]
	rule := []string{"PREROUTING", "-t", "nat", "-s", podSubnet, "-d", serviceIP + "/32", "-p", "tcp", "--dport", "443",
		"-m", "comment", "--comment", "csikit-e2e kubernetes Service", "-j", "DNAT", "--to-destination", nodeIP + ":" + port}
	return appendRule(t, rule)
}

// appendRule appends an iptables rule (chain first) for the test's lifetime.
func appendRule(t testing.TB, rule []string) error {
	if out, err := exec.Command("iptables", append([]string{"-A"}, rule...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables: %w: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("iptables", append([]string{"-D"}, rule...)...).CombinedOutput(); err != nil {
			t.Logf("iptables -D: %v %s", err, out)
		}
	})
	return nil
}

// startContainerd writes a containerd configuration of the run's own (its root, state, socket
// and CNI configuration all under work) and starts containerd with it.
func (n *Node) startContainerd(ctx context.Context, work string, ps *Procs) error {
	dir := filepath.Join(work, "containerd")
	cniConf := filepath.Join(work, "cni", "net.d")
	for _, d := range []string{dir, cniConf} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "csikit-e2e",
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}
  }]
}
`, nodeBridge, podSubnet, nodeIP, filepath.Join(work, "cni", "ipam"))
	if err := os.WriteFile(filepath.Join(cniConf, "10-csikit-e2e.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	n.containerd = filepath.Join(dir, "containerd.sock")
	config := fmt.Sprintf(`version = 2
root = %q
state = %q

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # No CAP_SYS_RESOURCE on this machine kind: without this runc fails every sandbox, because it
  # cannot lower the oom_score_adj kubelet asks for below containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # kubelet's cgroupDriver is cgroupfs: both must agree.
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), n.containerd, pauseImage, cniBinDir, cniConf)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return err
	}
	if _, err := ps.Start("containerd", bin, []string{"--config", cfgPath, "--log-level", "info"}); err != nil {
		return err
	}
	// Registered after ps's cleanup, so it runs before containerd is stopped: the containers
	// kubelet left (it is stopped first) go away with their shims.
	netnsBefore, _ := filepath.Glob("/run/netns/cni-*")
	n.t.Cleanup(func() { n.removeContainers(work, netnsBefore) })
	return Poll(ctx, "containerd", time.Minute, func(ctx context.Context) (bool, error) {
		if err := ps.CheckAlive(); err != nil {
			return false, err
		}
		return true, run(ctx, "/", nil, n.ctrBin, "--address", n.containerd, "version")
	})
}

// removeContainers kills and deletes every container of the k8s.io namespace, so that no shim
// or pod process outlives the test, and undoes the mounts and network namespaces they leave.
func (n *Node) removeContainers(work string, netnsBefore []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctr := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, n.ctrBin, append([]string{"--address", n.containerd, "--namespace", "k8s.io"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if n.Kubelet != nil {
		n.Kubelet.stop(30 * time.Second)
	}
	out, err := ctr("tasks", "ls", "-q")
	if err == nil {
		for _, id := range strings.Fields(out) {
			// A sandbox's task may already be gone with its pod: "not found" is done.
			if o, err := ctr("tasks", "delete", "--force", id); err != nil && !strings.Contains(o, "not found") {
				n.t.Logf("ctr tasks delete %s: %v %s", id, err, o)
			}
		}
	}
	out, err = ctr("containers", "ls", "-q")
	if err == nil {
		for _, id := range strings.Fields(out) {
			if o, err := ctr("containers", "delete", id); err != nil {
				n.t.Logf("ctr containers delete %s: %v %s", id, err, o)
			}
		}
	}
	// Sandboxes' network namespaces: containerd names them cni-<uuid> under /run/netns and
	// removes them with the sandbox, which a forced delete skips.
	removeNetns(n.t, netnsBefore)
	releaseNodeMounts(n.t, work)
}

// importImages writes each image as an OCI archive and imports it into containerd.
func (n *Node) importImages(ctx context.Context, work string, specs []ImageSpec) error {
	dir := filepath.Join(work, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, img := range specs {
		archive := filepath.Join(dir, strconv.Itoa(i)+".tar")
		if err := writeOCIArchive(img, archive); err != nil {
			return err
		}
		if err := importImage(ctx, n.ctrBin, n.containerd, archive); err != nil {
			return fmt.Errorf("import %s: %w", img.ref, err)
		}
		_ = os.Remove(archive)
	}
	return nil
}

// startKubelet configures and starts kubelet and waits until its node is Ready with no taint.
func (n *Node) startKubelet(ctx context.Context, work string, ps *Procs) error {
	// deploy/kubernetes/hostpath mounts /var/lib/csikit-hostpath with Bidirectional
	// propagation, which containerd allows only on a shared mount. This machine's / is private
	// (systemd makes it shared on a usual host), so the directory becomes a shared mount of its
	// own.
	if err := os.MkdirAll(HostpathStateDir, 0o750); err != nil {
		return err
	}
	for _, args := range [][]string{{"--bind", HostpathStateDir, HostpathStateDir}, {"--make-rshared", HostpathStateDir}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("mount %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	kubeletPort, err := FreePort()
	if err != nil {
		return err
	}
	healthzPort, err := FreePort()
	if err != nil {
		return err
	}
	dir := filepath.Join(work, "kubelet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 (hybrid) on this machine kind: kubelet v1.35+ refuses it unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %q}
authorization:
  mode: AlwaysAllow
failSwapOn: false
resolvConf: /etc/resolv.conf
# The kube-dns Service (kubelet_dns.go): pods of dnsPolicy ClusterFirst resolve Services.
clusterDNS: [%s]
clusterDomain: %s
# The imported images are the only ones there are: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
  nodefs.inodesFree: 1%%
`, n.containerd, nodeIP, kubeletPort, healthzPort, n.pki.caCert, clusterDNSIP, clusterDomain)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	// kubelet is system:node:e2e-node, as on a real node: the Node authorizer and
	// NodeRestriction let it read only what its pods use, so a volume flow that needs more
	// fails here as it would in a real cluster.
	kc := filepath.Join(dir, "kubelet.kubeconfig")
	if err := n.pki.writeKubeconfigNode(kc, n.server); err != nil {
		return err
	}
	bin := n.kubeletBin
	args := []string{"--config=" + cfgPath, "--kubeconfig=" + kc, "--hostname-override=" + nodeName,
		"--node-ip=" + nodeIP, "--root-dir=" + KubeletDir, "--v=2"}
	if n.Kubelet, err = ps.Start("kubelet", bin, args); err != nil {
		return err
	}
	n.healthz = "http://127.0.0.1:" + strconv.Itoa(healthzPort) + "/healthz"
	return n.WaitKubelet(ctx)
}

// WaitKubelet waits until kubelet serves its healthz endpoint (it has synced with the runtime
// and loaded its state) and the node is Ready and untainted.
func (n *Node) WaitKubelet(ctx context.Context) error {
	if err := Poll(ctx, "kubelet healthz", 2*time.Minute, func(ctx context.Context) (bool, error) {
		if err := n.Procs.CheckAlive(); err != nil {
			return false, err
		}
		return HTTPOK(ctx, n.healthz)
	}); err != nil {
		return err
	}
	return n.waitNodeReady(ctx)
}

// waitNodeReady waits until the node reports Ready and carries no NoSchedule taint.
func (n *Node) waitNodeReady(ctx context.Context) error {
	return Poll(ctx, "node "+nodeName+" Ready and untainted", 3*time.Minute, func(ctx context.Context) (bool, error) {
		if err := n.Procs.CheckAlive(); err != nil {
			return false, err
		}
		nd, err := n.Kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready := slices.ContainsFunc(nd.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		if !ready {
			return false, fmt.Errorf("conditions %v", nd.Status.Conditions)
		}
		for _, tn := range nd.Spec.Taints {
			if tn.Effect == corev1.TaintEffectNoSchedule || tn.Effect == corev1.TaintEffectNoExecute {
				return false, fmt.Errorf("taint %s", tn.Key)
			}
		}
		return true, nil
	})
}

// hostpathImage is the kernel's name of a hostpath image attached inside a node plugin container
// that is gone: relative to the container's copy of the state directory.
var hostpathImage = regexp.MustCompile(`^/volumes/[0-9a-f]{2}/vol-[0-9a-f]+\.img( \(deleted\))?$`)

// detachedHostpathLoops lists the loop devices of hostpath images that a dead node plugin
// container attached (LoopsUnder cannot see them under the state directory).
func detachedHostpathLoops() []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && hostpathImage.MatchString(strings.TrimSpace(string(b))) {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(f))))
		}
	}
	return out
}

// HostNetworkServiceRoute makes the kubernetes Service reach the API server from pods on the
// host's network, as kube-proxy's OUTPUT rules do on a real node: the sidecars of the cephfs
// pods (hostNetwork) connect from the host itself, which the PREROUTING rule of serviceRoute
// never sees.
func (n *Node) HostNetworkServiceRoute(t testing.TB) error {
	port := n.server[strings.LastIndex(n.server, ":")+1:]
	rule := []string{"OUTPUT", "-t", "nat", "-d", serviceIP + "/32", "-p", "tcp", "--dport", "443",
		"-m", "comment", "--comment", "csikit-e2e kubernetes Service (host network)", "-j", "DNAT", "--to-destination", nodeIP + ":" + port}
	return appendRule(t, rule)
}
