package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

// Cluster is the control plane of the test: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler as processes, and admin clients for the test itself.
type Cluster struct {
	work    string // the run's directory: keys, kubeconfigs, logs, the fake node's root
	server  string // https://127.0.0.1:port
	pki     *pki
	Admin   *rest.Config          // the admin client's configuration, for typed clients of other APIs
	Kube    *kubernetes.Clientset // the admin client of the built-in API
	dyn     *dynamic.DynamicClient
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	Procs   *Procs // every process of the run, stopped when the test ends
	bins    *Binaries
	AdminKC string // admin kubeconfig path
}

// Poll calls cond every interval until it reports done, fails, or timeout passes; the last
// condition error is part of the timeout's error, so a stuck step says what it was waiting on.
func Poll(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		if last != nil {
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, err, last)
		}
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// StartCluster brings up etcd, the API server, the controller manager and the scheduler, and
// waits until the API server is ready.
func StartCluster(ctx context.Context, t testing.TB, work string, bins *Binaries, ps *Procs) (*Cluster, error) {
	c, err := StartAPIServer(ctx, work, bins.Etcd, bins.apiserver, ps)
	if err != nil {
		return nil, err
	}
	c.bins = bins
	if err := c.startControllers(); err != nil {
		return nil, err
	}
	return c, nil
}

// StartAPIServer brings up etcd and kube-apiserver only, waits until the API server is ready,
// and writes the admin kubeconfig: enough for controllers that are all run by the test itself.
func StartAPIServer(ctx context.Context, work, etcdBin, apiserverBin string, ps *Procs) (*Cluster, error) {
	return startAPIServerOn(ctx, work, etcdBin, apiserverBin, ps, "127.0.0.1")
}

// startAPIServerOn is StartAPIServer with the API server listening on host (an IPv4 address of
// this machine) rather than the loopback address: pods reach it there.
func startAPIServerOn(ctx context.Context, work, etcdBin, apiserverBin string, ps *Procs, host string) (*Cluster, error) {
	c := &Cluster{work: work, Procs: ps}
	pkiDir := filepath.Join(work, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return nil, err
	}
	var err error
	if c.pki, err = newPKI(pkiDir, host); err != nil {
		return nil, err
	}
	clientPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	if _, err := ps.Start("etcd", etcdBin, []string{
		"--name=e2e", "--data-dir=" + filepath.Join(work, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=e2e=" + peerURL, "--initial-cluster-state=new",
	}, "ETCD_UNSUPPORTED_ARCH="+goarchForEtcd()); err != nil {
		return nil, err
	}
	if err := Poll(ctx, "etcd health", 60*time.Second, func(ctx context.Context) (bool, error) {
		if err := ps.CheckAlive(); err != nil {
			return false, err
		}
		return HTTPOK(ctx, etcdURL+"/health")
	}); err != nil {
		return nil, errors.Join(err, ps.CheckAlive())
	}

	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	c.server = "https://" + host + ":" + strconv.Itoa(port)
	if _, err := ps.Start("kube-apiserver", apiserverBin, []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + host, "--secure-port=" + strconv.Itoa(port), "--advertise-address=" + host,
		"--tls-cert-file=" + c.pki.serverCert, "--tls-private-key-file=" + c.pki.serverKey,
		"--client-ca-file=" + c.pki.caCert,
		// For logs and exec through a kubelet (the pods tests): kubelet trusts the same CA.
		"--kubelet-client-certificate=" + c.pki.adminCert, "--kubelet-client-key=" + c.pki.adminKey,
		// The node's name resolves nowhere; its InternalIP is the CNI bridge's address.
		"--kubelet-preferred-address-types=InternalIP",
		// Node first, as kubeadm sets it: kubelet (TestPods) has a node identity.
		"--authorization-mode=Node,RBAC",
		// As every real cluster that runs CSI node plugins (kubeadm sets it too): the
		// manifests' driver containers are privileged.
		"--allow-privileged=true",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.pki.saPub, "--service-account-signing-key-file=" + c.pki.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		// The Endpoints of the kubernetes Service would name 127.0.0.1, which Endpoints
		// validation refuses; nothing in the suite uses that Service.
		"--endpoint-reconciler-type=none",
		"--profiling=false", "--v=1",
	}); err != nil {
		return nil, err
	}
	c.Admin = c.pki.adminConfig(c.server)
	if c.Kube, err = kubernetes.NewForConfig(c.Admin); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if err := Poll(ctx, "kube-apiserver /readyz", 3*time.Minute, func(ctx context.Context) (bool, error) {
		if err := ps.CheckAlive(); err != nil {
			return false, err
		}
		_, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, err
	}); err != nil {
		return nil, errors.Join(err, ps.CheckAlive())
	}
	if c.dyn, err = dynamic.NewForConfig(c.Admin); err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.Admin)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))

	c.AdminKC = filepath.Join(work, "admin.kubeconfig")
	if err := c.pki.writeKubeconfig(c.AdminKC, c.server, ""); err != nil {
		return nil, err
	}
	return c, nil
}

// startControllers starts kube-controller-manager and kube-scheduler against the API server.
func (c *Cluster) startControllers() error {
	// The controllers the suite needs, and only those: the PV binder, PVC and PV protection,
	// the garbage collector (capacity objects are owned), namespaces and service accounts.
	// attachdetach stays off because the suite plays its part by creating VolumeAttachments,
	// and nodelifecycle because no kubelet heartbeats: it would taint the nodes unreachable.
	return c.startControllersWith("persistentvolume-binder-controller,persistentvolumeclaim-protection-controller,persistentvolume-protection-controller,garbage-collector-controller,namespace-controller,serviceaccount-controller")
}

// startControllersWith starts kube-controller-manager with the named controllers (its
// --controllers list) and kube-scheduler.
func (c *Cluster) startControllersWith(controllers string) error {
	ps := c.Procs
	if _, err := ps.Start("kube-controller-manager", c.bins.controllerManager, []string{
		"--kubeconfig=" + c.AdminKC, "--authentication-kubeconfig=" + c.AdminKC, "--authorization-kubeconfig=" + c.AdminKC,
		"--controllers=" + controllers,
		// The root-ca-certificate-publisher puts this into every namespace's kube-root-ca.crt,
		// which pods' service account volumes carry: the in-cluster clients verify the API
		// server with it.
		"--root-ca-file=" + c.pki.caCert,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0", "--v=2",
	}); err != nil {
		return err
	}
	// kube-scheduler really schedules the consumer pods of WaitForFirstConsumer claims: its
	// volume binding plugin picks the node and sets the selected-node annotation.
	if _, err := ps.Start("kube-scheduler", c.bins.scheduler, []string{
		"--kubeconfig=" + c.AdminKC, "--authentication-kubeconfig=" + c.AdminKC, "--authorization-kubeconfig=" + c.AdminKC,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0", "--v=2",
	}); err != nil {
		return err
	}
	return nil
}

// goarchForEtcd is set for etcd 3.4, which refuses to start on architectures it does not
// support officially unless told; it is ignored elsewhere.
func goarchForEtcd() string {
	out, err := exec.Command("uname", "-m").Output()
	if err != nil {
		return ""
	}
	switch strings.TrimSpace(string(out)) {
	case "aarch64":
		return "arm64"
	default:
		return ""
	}
}

// HTTPOK says whether a GET of url answers 200 OK. It fails when no answer comes, so a poll waits on.
func HTTPOK(ctx context.Context, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK, nil
}

// SnapshotCRDs returns the CustomResourceDefinitions external-snapshotter's client module
// ships, read from the module cache at the version go.mod pins.
func SnapshotCRDs(ctx context.Context) ([]*unstructured.Unstructured, error) {
	dir, err := moduleDir(ctx, ".", "github.com/kubernetes-csi/external-snapshotter/client/v8")
	if err != nil {
		return nil, err
	}
	return readObjects(filepath.Join(dir, "config", "crd", "*.storage.k8s.io_*.yaml"))
}

// moduleDir is where the module cache holds module at the version that the go.mod in dir pins;
// it downloads the module if needed.
func moduleDir(ctx context.Context, dir, module string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("find module %s from %s: %w", module, dir, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("find module %s from %s: %v %s", module, dir, err, m.Error)
	}
	return m.Dir, nil
}

// readObjects decodes every YAML document of the files matching pattern, in name order.
func readObjects(pattern string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no files match %s: %v", pattern, err)
	}
	sort.Strings(files)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue // comments only
			}
			js, err := utilyaml.ToJSON(doc)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(js); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			objs = append(objs, u)
		}
	}
	return objs, nil
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates CRDs and waits until each is established.
func (c *Cluster) InstallCRDs(ctx context.Context, crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		if _, err := c.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		name := crd.GetName()
		if err := Poll(ctx, "CRD "+name+" established", time.Minute, func(ctx context.Context) (bool, error) {
			u, err := c.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cd := range conds {
				m, _ := cd.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return err
		}
	}
	c.mapper.Reset()
	return nil
}

// Apply creates one decoded manifest through the dynamic client, as kubectl apply would the
// first time.
func (c *Cluster) Apply(ctx context.Context, m Manifest) error {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(m.raw); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	if err := c.Create(ctx, u); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	return nil
}

// Create creates an object of any kind the API server serves, in the default namespace when
// it is namespaced and names none.
func (c *Cluster) Create(ctx context.Context, u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = c.dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == "namespace" {
		ns := u.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		ri = c.dyn.Resource(mapping.Resource).Namespace(ns)
	}
	if _, err := ri.Create(ctx, u, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
		return fmt.Errorf("create %s %s: %w", gvk.Kind, u.GetName(), err)
	}
	return nil
}

// AddNode creates a Node as kubelet registers one: Ready, with room for pods, labelled with
// its host name and with the topology labels of the CSI drivers registered on it.
func (c *Cluster) AddNode(ctx context.Context, name string, labels map[string]string) error {
	l := map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}
	for k, v := range labels {
		l[k] = v
	}
	n, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	now := metav1.Now()
	n.Status = corev1.NodeStatus{
		Capacity: res, Allocatable: res,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}},
	}
	if n, err = c.Kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", name, err)
	}
	// The API server's TaintNodesByCondition admission taints a new node not-ready; the node
	// lifecycle controller lifts the taint once the node reports Ready. That controller is off
	// (no kubelet heartbeats), so the suite lifts it, as the controller would.
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if _, err := c.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s taints: %w", name, err)
	}
	return nil
}

// RegisterDriver does what kubelet does when node-driver-registrar announces a plugin: ask the
// plugin's NodeGetInfo, then record the answer in the node's CSINode object, its topology as
// node labels and its node ID in the node's annotation.
func (c *Cluster) RegisterDriver(ctx context.Context, nodeName, socket string) (*csi.NodeGetInfoResponse, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", socket, err)
	}
	defer conn.Close()
	var info *csi.NodeGetInfoResponse
	if err := Poll(ctx, "NodeGetInfo on "+socket, time.Minute, func(ctx context.Context) (bool, error) {
		info, err = csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
		return err == nil, err
	}); err != nil {
		return nil, err
	}
	node, err := c.Kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var keys []string
	for k, v := range info.GetAccessibleTopology().GetSegments() {
		keys = append(keys, k)
		node.Labels[k] = v
	}
	slices.Sort(keys)
	ids, _ := json.Marshal(map[string]string{hostpath.Name: info.GetNodeId()})
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations["csi.volume.kubernetes.io/nodeid"] = string(ids)
	if node, err = c.Kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("label node: %w", err)
	}
	d := storagev1.CSINodeDriver{Name: hostpath.Name, NodeID: info.GetNodeId(), TopologyKeys: keys}
	if n := info.GetMaxVolumesPerNode(); n > 0 {
		cnt := int32(n)
		d.Allocatable = &storagev1.VolumeNodeResources{Count: &cnt}
	}
	csiNode := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{d}},
	}
	if _, err := c.Kube.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create CSINode: %w", err)
	}
	return info, nil
}

// AddEmptyCSINode records a node without the driver, as kubelet does for every node.
func (c *Cluster) AddEmptyCSINode(ctx context.Context, nodeName string) error {
	node, err := c.Kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	_, err = c.Kube.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: nodeName,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}}}, metav1.CreateOptions{})
	return err
}

// ServiceAccountKubeconfig writes a kubeconfig with a fresh token of the service account, so
// that a sidecar runs with exactly the rights the manifests' RBAC gives it.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, ns, name string) (string, error) {
	exp := int64(24 * 3600)
	tr, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", ns, name, err)
	}
	path := filepath.Join(c.work, "sa-"+name+".kubeconfig")
	return path, c.pki.writeKubeconfig(path, c.server, tr.Status.Token)
}

// IgnoreNotFound is for deletions in cleanup paths.
func IgnoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
