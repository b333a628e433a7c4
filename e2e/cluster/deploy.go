package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

// DeployHostpath deploys deploy/kubernetes/hostpath as it is (see DeployDriver), with the
// snapshot-controller's group snapshots on.
func (n *Node) DeployHostpath(ctx context.Context, ms []Manifest) error {
	return n.DeployDriver(ctx, ms, "hostpath", "csikit-hostpath", hostpath.Name,
		[]string{"--feature-gates=CSIVolumeGroupSnapshot=true"}, nil)
}

// DeployDriver installs the snapshot CRDs and the cluster's snapshot-controller (add-ons the
// manifests assume; controllerFlags are added to its own), applies the manifests as they are,
// calling afterNamespace, if given, right after the namespace is created (where a user creates
// the Secret and ConfigMap the manifests name), and waits until the pods of app in ns are
// ready and kubelet has registered driver.
func (n *Node) DeployDriver(ctx context.Context, ms []Manifest, app, ns, driver string, controllerFlags []string, afterNamespace func(context.Context) error) error {
	crds, err := SnapshotCRDs(ctx)
	if err != nil {
		return fmt.Errorf("snapshot CRDs: %w", err)
	}
	if err := n.InstallCRDs(ctx, crds); err != nil {
		return fmt.Errorf("install snapshot CRDs: %w", err)
	}
	args := append([]string{"--kubeconfig=" + n.AdminKC, "--leader-election=false", "--v=2"}, controllerFlags...)
	if _, err := n.Procs.Start("snapshot-controller", n.bins.SnapshotController, args); err != nil {
		return fmt.Errorf("start snapshot-controller: %w", err)
	}
	for _, m := range ms {
		if err := n.Apply(ctx, m); err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		if m.GVK.Kind == "Namespace" && afterNamespace != nil {
			if err := afterNamespace(ctx); err != nil {
				return fmt.Errorf("after namespace %s: %w", ns, err)
			}
		}
	}
	if err := n.waitDriverPods(ctx, app, ns); err != nil {
		return fmt.Errorf("pods of %s in %s: %w", app, ns, err)
	}
	return Poll(ctx, "CSINode "+nodeName+" lists "+driver, 2*time.Minute, func(ctx context.Context) (bool, error) {
		cn, err := n.Kube.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
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

// PodReady says whether the pod's Ready condition is true.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DescribePod is a pod's phase and its containers' states, for timeout messages.
func DescribePod(p *corev1.Pod) string {
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

// PodSummary is every pod of ns with DescribePod, for failure messages.
func (n *Node) PodSummary(ctx context.Context, ns string) string {
	pods, err := n.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name+": "+DescribePod(&p))
	}
	return strings.Join(out, "; ")
}

// waitDriverPods waits until the driver's controller and node pods in ns (at least two) are all
// ready, failing at once if a cluster process died.
func (n *Node) waitDriverPods(ctx context.Context, driver, ns string) error {
	return Poll(ctx, driver+" controller and node pods ready", 5*time.Minute, func(ctx context.Context) (bool, error) {
		if err := n.Procs.CheckAlive(); err != nil {
			return false, err
		}
		pods, err := n.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(pods.Items) < 2 {
			return false, fmt.Errorf("%d pods", len(pods.Items))
		}
		for _, p := range pods.Items {
			if !PodReady(&p) {
				return false, fmt.Errorf("pod %s not ready: %s", p.Name, DescribePod(&p))
			}
		}
		return true, nil
	})
}

func findDeployment(ms []Manifest) (*appsv1.Deployment, bool) {
	for _, m := range ms {
		if d, ok := m.Obj.(*appsv1.Deployment); ok {
			return d, true
		}
	}
	return nil, false
}

// DeployMemorys3 installs the COSI v0.2.2 CRDs and runs the COSI controller as a process with
// upstream's service account and RBAC (as TestCOSILifecycle does: it is a cluster add-on, not
// part of the driver), applies deploy/kubernetes/memorys3 as it is, and waits until the
// Deployment's pod is ready, its S3 Service has an endpoint and the sidecar holds its lease. It
// returns the S3 endpoint the grants carry.
func (n *Node) DeployMemorys3(ctx context.Context, ms []Manifest) (string, error) {
	dep, ok := findDeployment(ms)
	if !ok {
		return "", fmt.Errorf("the memorys3 manifests have no Deployment")
	}
	var endpoint, driverName string
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == Memorys3Container {
			endpoint, _ = FlagValue(c.Args, "s3-endpoint")
			driverName, _ = FlagValue(c.Args, "driver-name")
		}
	}
	crds, err := COSICRDs(ctx)
	if err != nil {
		return "", err
	}
	if err := n.InstallCRDs(ctx, crds); err != nil {
		return "", err
	}
	rbac, err := UpstreamControllerRBAC(ctx)
	if err != nil {
		return "", err
	}
	for _, o := range rbac {
		if err := n.Create(ctx, o); err != nil {
			return "", fmt.Errorf("upstream controller RBAC: %w", err)
		}
	}
	kc, err := n.ServiceAccountKubeconfig(ctx, metav1.NamespaceDefault, "controller-sa")
	if err != nil {
		return "", err
	}
	if _, err := n.Procs.Start("cosi-controller", n.tools["cosi-controller"], []string{"--kubeconfig=" + kc, "--v=5"},
		"POD_NAMESPACE="+metav1.NamespaceDefault); err != nil {
		return "", err
	}
	for _, m := range ms {
		if err := n.Apply(ctx, m); err != nil {
			return "", fmt.Errorf("apply: %w", err)
		}
	}
	if err := n.waitServiceReady(ctx, dep.Namespace, "csikit-memorys3"); err != nil {
		return "", err
	}
	lease := strings.ReplaceAll(driverName, ".", "-") + "-cosi"
	for ns, name := range map[string]string{dep.Namespace: lease, metav1.NamespaceDefault: "leader-lock-cosi-controller-manager"} {
		if err := Poll(ctx, "lease "+ns+"/"+name+" held", 2*time.Minute, func(ctx context.Context) (bool, error) {
			l, err := n.Kube.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("%w; %v; pods: %s", err, n.Procs.CheckAlive(), n.PodSummary(ctx, dep.Namespace))
			}
			return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", n.Procs.CheckAlive()
		}); err != nil {
			return "", err
		}
	}
	return endpoint, nil
}

// NodePluginCalls counts the lines of the node plugin's hostpath container log (all of its
// pods) that contain what; hostpath logs every failed call at warn level with its code.
func (n *Node) NodePluginCalls(ctx context.Context, what string) (int, error) {
	pods, err := n.Kube.CoreV1().Pods("csikit-hostpath").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=csikit-hostpath-node"})
	if err != nil {
		return 0, err
	}
	count := 0
	for _, p := range pods.Items {
		b, err := n.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: "hostpath"}).DoRaw(ctx)
		if err != nil {
			return 0, fmt.Errorf("log of %s: %w", p.Name, err)
		}
		count += strings.Count(string(b), what)
	}
	return count, nil
}

// LogsContaining returns "pod/container" for each container of ns whose log (current and
// previous) contains s.
func (n *Node) LogsContaining(ctx context.Context, ns, s string) []string {
	pods, err := n.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"(list pods: " + err.Error() + ")"}
	}
	var out []string
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			for _, previous := range []bool{false, true} {
				b, err := n.Kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, Previous: previous}).DoRaw(ctx)
				if err == nil && strings.Contains(string(b), s) {
					out = append(out, p.Name+"/"+c.Name)
				}
			}
		}
	}
	return out
}
