package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/csikit/csikit/e2e/cluster"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

// TestManifestsDecodeStrictly fails on any typo under deploy/: every document must decode into
// a known typed object with no unknown field.
func TestManifestsDecodeStrictly(t *testing.T) {
	ms, err := cluster.LoadManifests(cluster.DeployDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, ok := m.Obj.(runtime.Unstructured); ok {
			t.Errorf("%s: decoded as unstructured, not a typed object", m)
		}
	}
	t.Logf("%d manifests decoded strictly", len(ms))
}

// TestStrictDecodingCatchesTypos proves the decoder above is strict, so a passing
// TestManifestsDecodeStrictly means something.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"unknown field":      "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: x}\nspec: {attachRequierd: true}\n",
		"duplicate field":    "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\nmetadata: {name: y}\n",
		"unknown kind":       "apiVersion: storage.k8s.io/v1\nkind: StorageKlass\nmetadata: {name: x}\n",
		"snapshot typo":      "apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshotClass\nmetadata: {name: x}\ndriver: d\ndeletionPolicey: Delete\n",
		"wrong type":         "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: x}\nspec: {attachRequired: \"yes\"}\n",
		"unknown apiVersion": "apiVersion: groupsnapshot.storage.k8s.io/v9\nkind: VolumeGroupSnapshotClass\nmetadata: {name: x}\ndriver: d\ndeletionPolicy: Delete\n",
		"COSI typo":          "apiVersion: objectstorage.k8s.io/v1alpha1\nkind: BucketClass\nmetadata: {name: x}\ndriverName: d\ndeletionPolicey: Delete\n",
		"COSI unknown kind":  "apiVersion: objectstorage.k8s.io/v1alpha1\nkind: BucketAccessKlass\nmetadata: {name: x}\ndriverName: d\nauthenticationType: Key\n",
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			sub := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "m.yaml"), []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := cluster.LoadManifests(sub); err == nil {
				t.Fatalf("decoded without error:\n%s", doc)
			}
		})
	}
}

// TestManifestsMatchDriver checks what strict decoding cannot: that the manifests name this
// driver, pin every image, and ask Kubernetes for what hostpath really does.
func TestManifestsMatchDriver(t *testing.T) {
	ms, err := cluster.LoadManifests(cluster.HostpathDir)
	if err != nil {
		t.Fatal(err)
	}
	var drivers, sets int
	for _, m := range ms {
		switch o := m.Obj.(type) {
		case *storagev1.CSIDriver:
			drivers++
			if o.Name != hostpath.Name {
				t.Errorf("%s: CSIDriver %q, the driver is %q", m, o.Name, hostpath.Name)
			}
			s := o.Spec
			if s.AttachRequired == nil || !*s.AttachRequired {
				t.Errorf("%s: attachRequired must be true: hostpath serves ControllerPublishVolume", m)
			}
			if s.PodInfoOnMount == nil || !*s.PodInfoOnMount {
				t.Errorf("%s: podInfoOnMount must be true: kubelet marks inline ephemeral volumes only in the pod information", m)
			}
			if !slices.Contains(s.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent) || !slices.Contains(s.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral) {
				t.Errorf("%s: volumeLifecycleModes %v, want Persistent and Ephemeral", m, s.VolumeLifecycleModes)
			}
			if s.FSGroupPolicy == nil || *s.FSGroupPolicy != storagev1.FileFSGroupPolicy {
				t.Errorf("%s: fsGroupPolicy must be File", m)
			}
		case *storagev1.StorageClass:
			if o.Provisioner != hostpath.Name {
				t.Errorf("%s: provisioner %q", m, o.Provisioner)
			}
		case *storagev1.VolumeAttributesClass:
			if o.DriverName != hostpath.Name {
				t.Errorf("%s: driverName %q", m, o.DriverName)
			}
		case *appsv1.StatefulSet:
			sets++
			checkPod(t, m, &o.Spec.Template.Spec)
		case *appsv1.DaemonSet:
			sets++
			checkPod(t, m, &o.Spec.Template.Spec)
			checkBidirectional(t, m, &o.Spec.Template.Spec, "/var/lib/kubelet/pods", "/var/lib/kubelet/plugins")
		}
	}
	if drivers != 1 || sets != 2 {
		t.Errorf("found %d CSIDriver and %d workloads, want 1 and 2 (controller StatefulSet, node DaemonSet)", drivers, sets)
	}
}

// checkPod wants every image pinned to a version tag, and privilege where a container
// propagates mounts to the host.
func checkPod(t *testing.T, m cluster.Manifest, spec *corev1.PodSpec) {
	t.Helper()
	for _, c := range spec.Containers {
		i := strings.LastIndex(c.Image, ":")
		if i < 0 || !strings.HasPrefix(c.Image[i+1:], "v") {
			t.Errorf("%s: container %s: image %q is not pinned to a version tag", m, c.Name, c.Image)
		}
		for _, vm := range c.VolumeMounts {
			if vm.MountPropagation != nil && *vm.MountPropagation == corev1.MountPropagationBidirectional &&
				(c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged) {
				t.Errorf("%s: container %s: Bidirectional propagation needs a privileged container", m, c.Name)
			}
		}
	}
}

// checkBidirectional wants the driver container to mount the kubelet directories with
// Bidirectional propagation, so that its mounts reach kubelet and the pods.
func checkBidirectional(t *testing.T, m cluster.Manifest, spec *corev1.PodSpec, paths ...string) {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name != "hostpath" {
			continue
		}
		for _, p := range paths {
			ok := false
			for _, vm := range c.VolumeMounts {
				ok = ok || (vm.MountPath == p && vm.MountPropagation != nil && *vm.MountPropagation == corev1.MountPropagationBidirectional)
			}
			if !ok {
				t.Errorf("%s: container hostpath must mount %s with Bidirectional propagation", m, p)
			}
		}
		return
	}
	t.Errorf("%s: no hostpath container", m)
}

// TestManifestsApplyInOrder: `kubectl apply -f DIR` applies a directory's files in name order,
// so every ServiceAccount, role and binding a workload runs as must come from a file that sorts
// before the workload's; otherwise the sidecars start without their permissions (csi-provisioner
// exited on "cannot create resource csistoragecapacities" until rbac.yaml became 01-rbac.yaml).
func TestManifestsApplyInOrder(t *testing.T) {
	for _, dir := range []string{cluster.HostpathDir, cluster.Memorys3Dir} {
		ms, err := cluster.LoadManifests(dir)
		if err != nil {
			t.Fatal(err)
		}
		var lastAccess, firstWorkload *cluster.Manifest
		for i := range ms {
			switch ms[i].GVK.Kind {
			case "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
				lastAccess = &ms[i]
			case "Deployment", "StatefulSet", "DaemonSet":
				if firstWorkload == nil {
					firstWorkload = &ms[i]
				}
			}
		}
		if lastAccess == nil || firstWorkload == nil {
			t.Errorf("%s: no workload or no access objects", dir)
			continue
		}
		if lastAccess.File >= firstWorkload.File {
			t.Errorf("%s: %v is applied after %v: name the file so it sorts first", dir, lastAccess, firstWorkload)
		}
	}
}
