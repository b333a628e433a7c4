package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// PodsWorkDir makes the directory a kubelet-cluster test works in, with logs/ for its processes'
// logs. The clean-up releases what the cluster held on the host (mounts, loop devices, network)
// and removes the directory, unless the test failed or CSIKIT_E2E_KEEP is set: then it stays
// for its logs.
func PodsWorkDir(t testing.TB) (work, logDir string) {
	t.Helper()
	work, err := os.MkdirTemp("", "csikit-pods-")
	if err != nil {
		t.Fatal(err)
	}
	// Before the clean-up below is registered, so its record is removed after it has run.
	netnsBefore, _ := filepath.Glob("/run/netns/cni-*")
	if err := recordRun(t, &runRecord{Work: work, NetnsBefore: netnsBefore}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ReleaseHostResources(t, work)
		if t.Failed() || os.Getenv("CSIKIT_E2E_KEEP") != "" {
			t.Logf("kept %s for its logs (logs/*.log, kubelet's pods' logs under /var/log/pods)", work)
			return
		}
		if err := os.RemoveAll(work); err != nil {
			t.Errorf("remove %s: %v", work, err)
		}
	})
	logDir = filepath.Join(work, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return work, logDir
}

// LogTimings logs how long each phase of the run took and the whole run since start: the
// numbers docs/kubernetes.md and the CI log quote.
func (n *Node) LogTimings(t testing.TB, start time.Time) {
	for _, p := range n.phases {
		t.Logf("timing %-30s %s", p.name, p.took.Round(100*time.Millisecond))
	}
	t.Logf("timing %-30s %s", "whole run", time.Since(start).Round(time.Second))
}

// Hold keeps the cluster up until a signal, for a person with kubectl. It serves the kubelet
// switch on work/control.sock (kubelet-cluster.sh stop-kubelet, start-kubelet, kubelet-state)
// and, with CSIKIT_E2E_SSH set, runs the node's sshd for Kubernetes' disruptive storage specs
// (kubelet_ssh.go), printing KUBE_SSH_KEY_PATH and KUBE_SSH_USER for e2e.test.
func (n *Node) Hold(t testing.TB, work string) {
	sw := &kubeletSwitch{ps: n.Procs, kubelet: n.Kubelet, ready: n.WaitKubelet}
	control := filepath.Join(work, "control.sock")
	stop, err := serveControl(control, sw.handler())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		stop()
		// The clean-up stops kubelet before it removes containers: the one running now.
		n.Kubelet = sw.current()
	}()
	if os.Getenv("CSIKIT_E2E_SSH") != "" {
		shims, err := filepath.Abs("node-ssh")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := startSSH(ctx, n.Procs, work, net.JoinHostPort(nodeIP, "22"), shims, control)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("sshd on %s for root with the key %s; sessions run with %s first on PATH", s.listen, s.key, shims)
		fmt.Printf("KUBE_SSH_KEY_PATH=%s\nKUBE_SSH_USER=root\n", s.key)
	}
	t.Logf("cluster up: export KUBECONFIG=%s (node %s, containerd at %s, kubelet switch at %s); SIGINT or SIGTERM ends it",
		n.AdminKC, nodeName, n.containerd, control)
	fmt.Printf("KUBECONFIG=%s\n", n.AdminKC)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	<-sig
}
