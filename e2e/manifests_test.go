package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	snapscheme "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/scheme"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	cosischeme "sigs.k8s.io/container-object-storage-interface/client/clientset/versioned/scheme"

	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

// deployDir holds every manifest the project ships; each example has a directory of its own.
const (
	deployDir   = "../deploy"
	hostpathDir = deployDir + "/kubernetes/hostpath"
	memorys3Dir = deployDir + "/kubernetes/memorys3"
)

// manifest is one YAML document of a file under deploy/, decoded into its typed object.
type manifest struct {
	file  string // relative to deploy/
	index int    // position of the document in the file, from 0
	obj   runtime.Object
	gvk   schema.GroupVersionKind
	raw   []byte // the document as JSON
}

func (m manifest) String() string { return fmt.Sprintf("%s#%d (%s)", m.file, m.index, m.gvk.Kind) }

// manifestScheme knows the built-in API types, the snapshot and group-snapshot types of
// external-snapshotter's client and the objectstorage.k8s.io/v1alpha1 types of the COSI client
// v0.2.2: the only custom resources the manifests use.
func manifestScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add client-go types: %w", err)
	}
	if err := snapscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add snapshot types: %w", err)
	}
	if err := cosischeme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add COSI types: %w", err)
	}
	return s, nil
}

// loadManifests decodes every document of every .yaml file under dir strictly: an unknown or
// duplicated field, a kind or apiVersion the scheme does not know, or a document that is not an
// object fails, naming the file and the document.
func loadManifests(dir string) ([]manifest, error) {
	s, err := manifestScheme()
	if err != nil {
		return nil, err
	}
	strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Yaml: true, Strict: true})
	var out []manifest
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: document %d: %w", rel, i, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				i-- // a separator with nothing but comments is not a document
				continue
			}
			obj, gvk, err := strict.Decode(doc, nil, nil)
			if err != nil {
				return fmt.Errorf("%s: document %d: %w", rel, i, err)
			}
			js, err := utilyaml.ToJSON(doc)
			if err != nil {
				return fmt.Errorf("%s: document %d: %w", rel, i, err)
			}
			out = append(out, manifest{file: rel, index: i, obj: obj, gvk: *gvk, raw: js})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no manifests under %s", dir)
	}
	return out, nil
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// TestManifestsDecodeStrictly fails on any typo under deploy/: every document must decode into
// a known typed object with no unknown field.
func TestManifestsDecodeStrictly(t *testing.T) {
	ms, err := loadManifests(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, ok := m.obj.(runtime.Unstructured); ok {
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
			if _, err := loadManifests(sub); err == nil {
				t.Fatalf("decoded without error:\n%s", doc)
			}
		})
	}
}

// TestManifestsMatchDriver checks what strict decoding cannot: that the manifests name this
// driver, pin every image, and ask Kubernetes for what hostpath really does.
func TestManifestsMatchDriver(t *testing.T) {
	ms, err := loadManifests(hostpathDir)
	if err != nil {
		t.Fatal(err)
	}
	var drivers, sets int
	for _, m := range ms {
		switch o := m.obj.(type) {
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
func checkPod(t *testing.T, m manifest, spec *corev1.PodSpec) {
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
func checkBidirectional(t *testing.T, m manifest, spec *corev1.PodSpec, paths ...string) {
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
	for _, dir := range []string{hostpathDir, memorys3Dir} {
		ms, err := loadManifests(dir)
		if err != nil {
			t.Fatal(err)
		}
		var lastAccess, firstWorkload *manifest
		for i := range ms {
			switch ms[i].gvk.Kind {
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
		if lastAccess.file >= firstWorkload.file {
			t.Errorf("%s: %v is applied after %v: name the file so it sorts first", dir, lastAccess, firstWorkload)
		}
	}
}
