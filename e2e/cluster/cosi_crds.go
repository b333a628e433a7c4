package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// COSICRDs returns the objectstorage.k8s.io CustomResourceDefinitions the COSI client module
// ships (at the version go.mod pins) with the annotations upstream's kustomization adds when it
// installs them: the API server refuses a *.k8s.io CRD without api-approved.kubernetes.io.
func COSICRDs(ctx context.Context) ([]*unstructured.Unstructured, error) {
	dir, err := moduleDir(ctx, ".", "sigs.k8s.io/container-object-storage-interface/client")
	if err != nil {
		return nil, err
	}
	crds, err := readObjects(filepath.Join(dir, "config", "crd", "objectstorage.k8s.io_*.yaml"))
	if err != nil {
		return nil, err
	}
	root, err := moduleDir(ctx, "tools/cosi", "sigs.k8s.io/container-object-storage-interface")
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		CommonAnnotations map[string]string `json:"commonAnnotations"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("upstream kustomization.yaml: %w", err)
	}
	if k.CommonAnnotations["api-approved.kubernetes.io"] == "" {
		return nil, errors.New("upstream kustomization.yaml gives the CRDs no api-approved.kubernetes.io annotation")
	}
	for _, crd := range crds {
		a := crd.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		maps.Copy(a, k.CommonAnnotations)
		crd.SetAnnotations(a)
	}
	return crds, nil
}

// UpstreamControllerRBAC returns the service account and RBAC that COSI v0.2.2 deploys its
// controller with (controller/resources in the root module, at the version tools/cosi pins), as
// the files stand: without upstream's kustomize name prefix and namespace, so the service
// account is default/controller-sa and its lease Role lives in "default".
func UpstreamControllerRBAC(ctx context.Context) ([]*unstructured.Unstructured, error) {
	dir, err := moduleDir(ctx, "tools/cosi", "sigs.k8s.io/container-object-storage-interface")
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, f := range []string{"sa.yaml", "rbac.yaml"} {
		objs, err := readObjects(filepath.Join(dir, "controller", "resources", f))
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}
