package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Service routing and cluster DNS of the kubelet cluster, as a real node has them: kube-proxy
// v1.36.1 (iptables mode, Debian's iptables) as a process beside kubelet, and CoreDNS as a pod
// behind the kube-dns Service, whose address kubelet gives pods as their name server. The bucket
// pods reach memorys3 at the Service name its grants carry through both.
const (
	// clusterDNSIP is the kube-dns Service's address (fixed, in --service-cluster-ip-range), the
	// clusterDNS of kubelet's configuration.
	clusterDNSIP  = "10.0.0.10"
	clusterDomain = "cluster.local"
	// corednsImage is CoreDNS's released image name, at the version built here.
	corednsImage = "registry.k8s.io/coredns/coredns:" + corednsVersion
)

// corefile serves the cluster domain (and reverse lookups of Services and pods) from the API.
// Nothing is forwarded: the pods' network is not masqueraded to the outside on this machine,
// and no test resolves a name outside the cluster, so a name outside cluster.local is refused
// rather than sent to a server the pods could not reach.
const corefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes ` + clusterDomain + ` in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
`

// startKubeProxy runs kube-proxy with the rights kubeadm gives it (the kube-proxy service account
// bound to system:node-proxier) and waits until it has synced its rules once (healthz). Its
// iptables rules are removed when the test ends (kube-proxy --cleanup), after it has stopped.
func (n *Node) startKubeProxy(ctx context.Context, work, bin string) error {
	kube := n.Kube
	if _, err := kube.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy"}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kube-proxy service account: %w", err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "csikit-e2e:kube-proxy"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-proxier"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "kube-proxy", Namespace: metav1.NamespaceSystem}},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kube-proxy binding: %w", err)
	}
	kc, err := n.ServiceAccountKubeconfig(ctx, metav1.NamespaceSystem, "kube-proxy")
	if err != nil {
		return err
	}
	healthz, err := FreePort()
	if err != nil {
		return err
	}
	metrics, err := FreePort()
	if err != nil {
		return err
	}
	dir := filepath.Join(work, "kube-proxy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// conntrack: zeros leave the kernel's table size and timeouts as they are (this VM may not
	// change them). localhostNodePorts off: kube-proxy would set route_localnet for them, and no
	// test uses a NodePort.
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %q
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
nodePortAddresses: [primary]
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kc, podSubnet, nodeName, nodeIP, healthz, metrics)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	p, err := n.Procs.Start("kube-proxy", bin, []string{"--config=" + cfgPath, "--v=2"})
	if err != nil {
		return err
	}
	// Runs before procs stops everything (cleanups run last-registered first): kube-proxy is
	// stopped here, so that no sync of its own puts back the rules --cleanup removes.
	n.t.Cleanup(func() {
		p.stop(10 * time.Second)
		if out, err := exec.Command(bin, "--cleanup", "--v=1").CombinedOutput(); err != nil {
			n.t.Logf("kube-proxy --cleanup: %v\n%s", err, out)
		}
	})
	url := "http://127.0.0.1:" + strconv.Itoa(healthz) + "/healthz"
	return Poll(ctx, "kube-proxy healthz (rules synced)", 2*time.Minute, func(ctx context.Context) (bool, error) {
		if err := n.Procs.CheckAlive(); err != nil {
			return false, err
		}
		return HTTPOK(ctx, url)
	})
}

// deployCoreDNS runs CoreDNS as kube-system's Deployment behind the kube-dns Service, as
// kubeadm's add-on does (its RBAC, ConfigMap and Service shapes), and waits until the Service
// has a ready endpoint.
func (n *Node) deployCoreDNS(ctx context.Context) error {
	kube, ns := n.Kube, metav1.NamespaceSystem
	labels := map[string]string{"k8s-app": "kube-dns"}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "coredns"}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("coredns service account: %w", err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("coredns role: %w", err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:coredns"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "coredns", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("coredns binding: %w", err)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns"},
		Data: map[string]string{"Corefile": corefile}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("coredns config: %w", err)
	}
	dnsPorts := []corev1.ServicePort{
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
		{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
	}
	if _, err := kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Labels: labels},
		Spec:       corev1.ServiceSpec{Selector: labels, ClusterIP: clusterDNSIP, Ports: dnsPorts},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kube-dns Service: %w", err)
	}
	c := corev1.Container{
		Name: "coredns", Image: corednsImage, ImagePullPolicy: corev1.PullNever,
		Args: []string{"-conf", "/etc/coredns/Corefile"},
		Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP}},
		VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
		LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}}, PeriodSeconds: 1},
		// Upstream's: port 53 needs NET_BIND_SERVICE, nothing else.
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}},
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "coredns", PriorityClassName: "system-cluster-critical",
					// The cluster's DNS cannot use itself.
					DNSPolicy:  corev1.DNSDefault,
					Containers: []corev1.Container{c},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"}}}}},
					TerminationGracePeriodSeconds: ptr.To(int64(1)),
				},
			},
		},
	}
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("coredns Deployment: %w", err)
	}
	return n.waitServiceReady(ctx, ns, "kube-dns")
}

// waitServiceReady waits until a Service has a ready endpoint in an EndpointSlice, which is what
// kube-proxy routes to; a timeout names the Service's pods and their states.
func (n *Node) waitServiceReady(ctx context.Context, ns, svc string) error {
	return Poll(ctx, "Service "+ns+"/"+svc+" has a ready endpoint", 3*time.Minute, func(ctx context.Context) (bool, error) {
		if err := n.Procs.CheckAlive(); err != nil {
			return false, err
		}
		slices, err := n.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc})
		if err != nil {
			return false, err
		}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					return true, nil
				}
			}
		}
		return false, fmt.Errorf("no ready endpoint; pods: %s", n.PodSummary(ctx, ns))
	})
}
