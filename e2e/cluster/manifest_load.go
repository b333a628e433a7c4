package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	snapscheme "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/scheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	cosischeme "sigs.k8s.io/container-object-storage-interface/client/clientset/versioned/scheme"
)

// DeployDir holds every manifest the project ships; each example has a directory of its own.
const (
	DeployDir   = "../deploy"
	HostpathDir = DeployDir + "/kubernetes/hostpath"
	Memorys3Dir = DeployDir + "/kubernetes/memorys3"
)

// Manifest is one YAML document of a file under deploy/, decoded into its typed object.
type Manifest struct {
	File  string                  // relative to deploy/
	index int                     // position of the document in the file, from 0
	Obj   runtime.Object          // the typed object the document decodes into
	GVK   schema.GroupVersionKind // the document's apiVersion and kind
	raw   []byte                  // the document as JSON
}

// String names the document by file, index and kind, for messages.
func (m Manifest) String() string { return fmt.Sprintf("%s#%d (%s)", m.File, m.index, m.GVK.Kind) }

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

// LoadManifests decodes every document of every .yaml file under dir strictly: an unknown or
// duplicated field, a kind or apiVersion the scheme does not know, or a document that is not an
// object fails, naming the file and the document.
func LoadManifests(dir string) ([]Manifest, error) {
	s, err := manifestScheme()
	if err != nil {
		return nil, err
	}
	strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Yaml: true, Strict: true})
	var out []Manifest
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
			out = append(out, Manifest{File: rel, index: i, Obj: obj, GVK: *gvk, raw: js})
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
