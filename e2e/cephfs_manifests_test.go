package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/csikit/csikit/e2e/cluster"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// TestCephFSManifestsMatchDriver checks what strict decoding cannot in deploy/kubernetes/cephfs:
// the driver's name everywhere, every call that acts on Ceph given the Secret docs/kubernetes.md tells
// the user to create, the ConfigMap's keys reaching the flags, host networking on both pods with
// no host port used twice, and the node plugin's FUSE and propagation needs.
func TestCephFSManifestsMatchDriver(t *testing.T) {
	ms, err := cluster.LoadManifests(cephfsDir)
	if err != nil {
		t.Fatal(err)
	}
	secretParams := func(m cluster.Manifest, params map[string]string, kinds ...string) {
		t.Helper()
		for _, k := range kinds {
			if params["csi.storage.k8s.io/"+k+"-secret-name"] != cephfsObject || params["csi.storage.k8s.io/"+k+"-secret-namespace"] != cephfsNS {
				t.Errorf("%s: the %s secret must be %s/%s: every such call acts as the Secret's cephx user", m, k, cephfsNS, cephfsObject)
			}
		}
		for k := range params {
			if !strings.HasPrefix(k, "csi.storage.k8s.io/") {
				t.Errorf("%s: parameter %q: cephfs refuses parameters it does not know", m, k)
			}
		}
	}
	hostPorts := map[int32]string{}
	var drivers, classes, snapClasses, workloads int
	for _, m := range ms {
		var spec *corev1.PodSpec
		switch o := m.Obj.(type) {
		case *storagev1.CSIDriver:
			drivers++
			if o.Name != cephfsDriver {
				t.Errorf("%s: CSIDriver %q, the driver is %q", m, o.Name, cephfsDriver)
			}
			if o.Spec.AttachRequired == nil || *o.Spec.AttachRequired {
				t.Errorf("%s: attachRequired must be false: cephfs serves no ControllerPublishVolume", m)
			}
			if len(o.Spec.VolumeLifecycleModes) != 1 || o.Spec.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
				t.Errorf("%s: volumeLifecycleModes %v: cephfs serves persistent volumes only", m, o.Spec.VolumeLifecycleModes)
			}
		case *storagev1.StorageClass:
			classes++
			if o.Provisioner != cephfsDriver {
				t.Errorf("%s: provisioner %q", m, o.Provisioner)
			}
			secretParams(m, o.Parameters, "provisioner", "node-stage", "controller-expand")
		case *snapv1.VolumeSnapshotClass:
			snapClasses++
			if o.Driver != cephfsDriver {
				t.Errorf("%s: driver %q", m, o.Driver)
			}
			secretParams(m, o.Parameters, "snapshotter")
		case *appsv1.StatefulSet:
			spec = &o.Spec.Template.Spec
			if o.Spec.Replicas == nil || *o.Spec.Replicas != 1 {
				t.Errorf("%s: one replica: a second controller pod on a node would find its host ports taken", m)
			}
		case *appsv1.DaemonSet:
			spec = &o.Spec.Template.Spec
			checkCephFSNode(t, m, spec)
		}
		if spec == nil {
			continue
		}
		workloads++
		checkPod(t, m, spec)
		if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
			t.Errorf("%s: hostNetwork with dnsPolicy ClusterFirstWithHostNet: Ceph's daemons are on the hosts' network", m)
		}
		for _, c := range spec.Containers {
			if strings.Contains(c.Image, "csi-attacher") {
				t.Errorf("%s: container %s: no attacher for a driver without ControllerPublishVolume", m, c.Name)
			}
			for _, p := range c.Ports {
				if other, dup := hostPorts[p.ContainerPort]; dup {
					t.Errorf("%s: container %s: port %d is also %s's, on the same host network", m, c.Name, p.ContainerPort, other)
				}
				hostPorts[p.ContainerPort] = m.String() + " " + c.Name
			}
			if c.Name == "cephfs" {
				checkCephFSConfig(t, m, c)
				checkCephFSLiveness(t, m, c)
			}
			if strings.Contains(c.Image, "/livenessprobe:") {
				t.Errorf("%s: container %s: the livenessprobe sidecar fails while Ceph is away and restarts the plugin in a loop (a node plugin ends every ceph-fuse mount of its node): probe /livez instead", m, c.Name)
			}
		}
	}
	if drivers != 1 || classes != 1 || snapClasses != 1 || workloads != 2 {
		t.Errorf("found %d CSIDriver, %d StorageClass, %d VolumeSnapshotClass and %d workloads, want 1, 1, 1 and 2", drivers, classes, snapClasses, workloads)
	}
	// `kubectl apply -f DIR` applies in name order: access before the workloads.
	var lastAccess, firstWorkload string
	for _, m := range ms {
		switch m.GVK.Kind {
		case "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
			lastAccess = m.File
		case "StatefulSet", "DaemonSet":
			if firstWorkload == "" {
				firstWorkload = m.File
			}
		}
	}
	if lastAccess >= firstWorkload {
		t.Errorf("%s is applied after %s: name the file so it sorts first", lastAccess, firstWorkload)
	}
}

// checkCephFSConfig wants the cluster's monitors and filesystem to reach the flags from the
// ConfigMap the user creates.
func checkCephFSConfig(t *testing.T, m cluster.Manifest, c corev1.Container) {
	t.Helper()
	for flag, key := range map[string]string{"--monitors=$(CEPH_MON_HOST)": "monitors", "--fs-name=$(CEPHFS_NAME)": "fsName"} {
		if !strings.Contains(strings.Join(c.Args, " "), flag) {
			t.Errorf("%s: container cephfs lacks %s", m, flag)
		}
		found := false
		for _, e := range c.Env {
			if ref := e.ValueFrom; ref != nil && ref.ConfigMapKeyRef != nil && ref.ConfigMapKeyRef.Name == cephfsObject && ref.ConfigMapKeyRef.Key == key {
				found = strings.Contains(flag, "$("+e.Name+")")
			}
		}
		if !found {
			t.Errorf("%s: %s must come from ConfigMap %s key %s", m, flag, cephfsObject, key)
		}
	}
}

// checkCephFSLiveness wants kubelet to probe the driver's own /livez on the port of its
// --http-endpoint: /livez answers 200 while Ceph is unreachable (readiness follows Ceph), so an
// outage never restarts the plugin, and with it every ceph-fuse daemon of a node plugin.
func checkCephFSLiveness(t *testing.T, m cluster.Manifest, c corev1.Container) {
	t.Helper()
	p := c.LivenessProbe
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/livez" {
		t.Errorf("%s: container cephfs: want a livenessProbe httpGet on /livez, have %+v", m, p)
		return
	}
	port := p.HTTPGet.Port.IntValue()
	if port == 0 {
		for _, cp := range c.Ports {
			if cp.Name == p.HTTPGet.Port.String() {
				port = int(cp.ContainerPort)
			}
		}
	}
	want := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--http-endpoint="); ok {
			want = v[strings.LastIndex(v, ":")+1:]
		}
	}
	if want == "" || strconv.Itoa(port) != want {
		t.Errorf("%s: container cephfs: /livez probed on port %d, the diagnostics server listens on --http-endpoint port %q", m, port, want)
	}
}

// checkCephFSNode wants the node plugin privileged with /dev (ceph-fuse opens /dev/fuse) and
// kubelet's directories mounted Bidirectional, so that the FUSE and bind mounts reach kubelet
// and the pods.
func checkCephFSNode(t *testing.T, m cluster.Manifest, spec *corev1.PodSpec) {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name != "cephfs" {
			continue
		}
		if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
			t.Errorf("%s: the node plugin must be privileged (FUSE, Bidirectional propagation)", m)
		}
		want := map[string]bool{"/var/lib/kubelet/pods": true, "/var/lib/kubelet/plugins": true, "/dev": false}
		for _, vm := range c.VolumeMounts {
			bidi, ok := want[vm.MountPath]
			if !ok {
				continue
			}
			if bidi && (vm.MountPropagation == nil || *vm.MountPropagation != corev1.MountPropagationBidirectional) {
				t.Errorf("%s: %s must be mounted with Bidirectional propagation", m, vm.MountPath)
			}
			delete(want, vm.MountPath)
		}
		for p := range want {
			t.Errorf("%s: the node plugin does not mount %s", m, p)
		}
		return
	}
	t.Errorf("%s: no cephfs container", m)
}
