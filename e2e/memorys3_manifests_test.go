package e2e

import (
	"strings"
	"testing"

	"github.com/csikit/csikit/e2e/cluster"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	cosiv1alpha1 "sigs.k8s.io/container-object-storage-interface/client/apis/objectstorage/v1alpha1"
)

// cosiSidecarImage is the released COSI provisioner sidecar the manifests pin: v0.2.2, the
// version whose code tools/cosi builds.
const cosiSidecarImage = "registry.k8s.io/sig-storage/objectstorage-sidecar:" + cluster.COSIVersion

// memorys3Deployment returns the Deployment of the memorys3 manifests and the driver name its
// memorys3 container is given.
func memorys3Deployment(t *testing.T, ms []cluster.Manifest) (*appsv1.Deployment, string) {
	t.Helper()
	var dep *appsv1.Deployment
	for _, m := range ms {
		if d, ok := m.Obj.(*appsv1.Deployment); ok {
			if dep != nil {
				t.Fatalf("%s: a second Deployment", m)
			}
			dep = d
		}
	}
	if dep == nil {
		t.Fatal("the memorys3 manifests have no Deployment")
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == "memorys3" {
			if name, ok := cluster.FlagValue(c.Args, "driver-name"); ok {
				return dep, name
			}
			t.Fatal("the memorys3 container has no --driver-name: the classes must name it")
		}
	}
	t.Fatal("the memorys3 Deployment has no memorys3 container")
	return nil, ""
}

// TestMemorys3ManifestsMatchDriver checks what strict decoding cannot: the classes name the
// driver the Deployment runs, the sidecar is the released v0.2.2 image on memorys3's socket,
// and nothing runs with privileges.
func TestMemorys3ManifestsMatchDriver(t *testing.T) {
	ms, err := cluster.LoadManifests(cluster.Memorys3Dir)
	if err != nil {
		t.Fatal(err)
	}
	dep, driverName := memorys3Deployment(t, ms)
	var classes, accessClasses int
	for _, m := range ms {
		switch o := m.Obj.(type) {
		case *cosiv1alpha1.BucketClass:
			classes++
			if o.DriverName != driverName {
				t.Errorf("%s: driverName %q, the Deployment runs %q", m, o.DriverName, driverName)
			}
			if len(o.Parameters) != 0 {
				t.Errorf("%s: parameters %v: memorys3 refuses every bucket parameter", m, o.Parameters)
			}
		case *cosiv1alpha1.BucketAccessClass:
			accessClasses++
			if o.DriverName != driverName {
				t.Errorf("%s: driverName %q, the Deployment runs %q", m, o.DriverName, driverName)
			}
			if o.AuthenticationType != cosiv1alpha1.AuthenticationTypeKey {
				t.Errorf("%s: authenticationType %q: memorys3 grants keys only", m, o.AuthenticationType)
			}
		}
	}
	if classes == 0 || accessClasses == 0 {
		t.Errorf("found %d BucketClass and %d BucketAccessClass, want at least one of each", classes, accessClasses)
	}

	spec := &dep.Spec.Template.Spec
	checkPod(t, cluster.Manifest{File: "memorys3", GVK: dep.GroupVersionKind()}, spec)
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("the memorys3 pod must run as non-root: it needs no privileges")
	}
	sockets := map[string]string{} // container -> COSI address it uses
	for _, c := range spec.Containers {
		if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			(sc.Privileged != nil && *sc.Privileged) {
			t.Errorf("container %s: must be unprivileged without privilege escalation", c.Name)
		}
		switch c.Name {
		case "memorys3":
			sockets[c.Name], _ = cluster.FlagValue(c.Args, "endpoint")
		case "objectstorage-provisioner-sidecar":
			if c.Image != cosiSidecarImage {
				t.Errorf("sidecar image %q, want %q (the version tools/cosi builds)", c.Image, cosiSidecarImage)
			}
			sockets[c.Name], _ = cluster.FlagValue(c.Args, "driver-addr")
		}
	}
	if len(sockets) != 2 || sockets["memorys3"] == "" || sockets["memorys3"] != sockets["objectstorage-provisioner-sidecar"] ||
		!strings.HasPrefix(sockets["memorys3"], "unix://") || !strings.HasSuffix(sockets["memorys3"], ".sock") {
		t.Errorf("memorys3 and the sidecar must share one unix://...sock address, got %v", sockets)
	}
	var svc bool
	for _, m := range ms {
		if s, ok := m.Obj.(*corev1.Service); ok {
			svc = true
			for _, c := range spec.Containers {
				if c.Name != "memorys3" {
					continue
				}
				ep, _ := cluster.FlagValue(c.Args, "s3-endpoint")
				if want := "http://" + s.Name + "." + s.Namespace + ".svc:"; !strings.HasPrefix(ep, want) {
					t.Errorf("--s3-endpoint %q: grants must name the Service, %s...", ep, want)
				}
			}
		}
	}
	if !svc {
		t.Error("no Service for the S3 endpoint")
	}
}
