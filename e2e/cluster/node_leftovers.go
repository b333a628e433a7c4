package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// A kubelet-cluster run holds host state that outlives its processes: mounts under
// /var/lib/kubelet, loop devices, network namespaces, the CNI bridge, iptables rules, and
// containerd's shims and pods, which are not its children. Its t.Cleanup functions release them,
// but a run killed with SIGKILL, or a machine stopped in the middle of one, never gets there, and
// the next run would meet mounts it cannot tell from a real kubelet's. So each run records itself
// in runRecordPath while it holds the host, and a later run that finds the record of a dead run
// releases what that run left, instead of refusing to start.
const runRecordPath = "/run/csikit-e2e-node.json"

// runRecord says which run holds the host, and what a later run needs to release its state.
type runRecord struct {
	PID int `json:"pid"`
	// Started is the owner's start time in clock ticks since boot (/proc/PID/stat), so that a
	// reused PID is not mistaken for the run.
	Started uint64 `json:"started"`
	Work    string `json:"work"`
	// KubeProxy is the kube-proxy binary, whose --cleanup removes the rules it made.
	KubeProxy string `json:"kubeProxy,omitempty"`
	// NetnsBefore are the network namespaces that existed before the run; any other cni-*
	// namespace is one of its pods'.
	NetnsBefore []string `json:"netnsBefore"`
}

// SignalContext is the context of a test that brings a cluster up: it ends after timeout, or when
// the test binary gets SIGINT or SIGTERM (CI's budget ends a stage with SIGINT). Without it, a
// signal kills the binary before its clean-ups run, and the cluster's mounts, loop devices and
// network stay behind.
func SignalContext(t testing.TB, timeout time.Duration) context.Context {
	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	go func() {
		<-ctx.Done()
		// A second signal kills the binary, as it would without this context.
		stopSignals()
	}()
	t.Cleanup(func() {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			t.Log("ended early by a signal: the clean-ups ran")
		}
		cancel()
	})
	return ctx
}

// processStart returns a process's start time in clock ticks since boot.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces: count from its end.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// recordRun writes the record of this run and removes it when the test's clean-ups are done.
// It is registered before them, so it runs after all of them.
func recordRun(t testing.TB, rec *runRecord) error {
	rec.PID = os.Getpid()
	started, err := processStart(rec.PID)
	if err != nil {
		return err
	}
	rec.Started = started
	if err := writeRunRecord(rec); err != nil {
		return err
	}
	t.Cleanup(func() {
		if err := os.Remove(runRecordPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove %s: %v", runRecordPath, err)
		}
	})
	return nil
}

// writeRunRecord replaces the record atomically, so a run killed while writing it leaves the
// previous one.
func writeRunRecord(rec *runRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := runRecordPath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write the run's record: %w", err)
	}
	return os.Rename(tmp, runRecordPath)
}

// readRunRecord returns the record of the run holding the host, or nil when there is none.
func readRunRecord() (*runRecord, error) {
	b, err := os.ReadFile(runRecordPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec runRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", runRecordPath, err)
	}
	if rec.Work == "" || !strings.HasPrefix(filepath.Base(rec.Work), "csikit-") {
		return nil, fmt.Errorf("%s: work directory %q is not a kubelet-cluster run's", runRecordPath, rec.Work)
	}
	return &rec, nil
}

// alive reports whether the run that wrote rec is still running.
func (rec *runRecord) alive() bool {
	started, err := processStart(rec.PID)
	return err == nil && started == rec.Started
}

// releaseDeadRun releases what a dead run left on the host: its processes and its pods', the
// rules of its kube-proxy and its own, its pods' network namespaces, its mounts and loop
// devices, and the CNI bridge. It removes the record last, so a release that is itself cut
// short is done again by the next run.
func releaseDeadRun(ctx context.Context, t testing.TB, rec *runRecord) error {
	t.Logf("releasing what a dead run (pid %d, %s) left on this machine", rec.PID, rec.Work)
	if err := killLeftovers(ctx, rec.Work); err != nil {
		return err
	}
	if rec.KubeProxy != "" {
		if out, err := exec.CommandContext(ctx, rec.KubeProxy, "--cleanup", "--v=1").CombinedOutput(); err != nil {
			return fmt.Errorf("kube-proxy --cleanup: %w: %s", err, out)
		}
	}
	for _, table := range []string{"nat", "filter"} {
		if err := deleteTaggedRules(ctx, table); err != nil {
			return err
		}
	}
	removeNetns(t, rec.NetnsBefore)
	releaseNodeMounts(t, rec.Work)
	if _, err := os.Stat("/sys/class/net/" + nodeBridge); err == nil {
		if out, err := exec.CommandContext(ctx, "ip", "link", "del", nodeBridge).CombinedOutput(); err != nil {
			return fmt.Errorf("ip link del %s: %w: %s", nodeBridge, err, out)
		}
	}
	if mps := MountsUnder(KubeletDir); len(mps) > 0 {
		return fmt.Errorf("still mounted after the release: %s", strings.Join(mps, ", "))
	}
	return os.Remove(runRecordPath)
}

// killLeftovers kills the processes of a dead run: those that name its work directory
// (containerd, its shims, kubelet, the control plane) and, when no kubelet runs any more, those in
// kubelet's pod cgroups. It returns once they are gone.
func killLeftovers(ctx context.Context, work string) error {
	pids := leftoverPIDs(work)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return Poll(ctx, "the dead run's processes to exit", time.Minute, func(context.Context) (bool, error) {
		for _, pid := range pids {
			// A zombie keeps its /proc entry until its parent reaps it: only a live one counts.
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !bytes.Contains(b, []byte(") Z ")) {
				return false, fmt.Errorf("pid %d still runs", pid)
			}
		}
		return true, nil
	})
}

// leftoverPIDs lists the processes killLeftovers kills.
func leftoverPIDs(work string) []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var named, pods []int
	kubeletRuns := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if filepath.Base(args[0]) == "kubelet" && !bytes.Contains(cmdline, []byte(work)) {
			kubeletRuns = true
		}
		if bytes.Contains(cmdline, []byte(work+"/")) {
			named = append(named, pid)
			continue
		}
		if cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil && bytes.Contains(cg, []byte("/kubepods")) {
			pods = append(pods, pid)
		}
	}
	if kubeletRuns {
		// Those pods may be another kubelet's.
		return named
	}
	return append(named, pods...)
}

// deleteTaggedRules deletes the iptables rules of table whose comment starts with "csikit-e2e",
// the ones appendRule adds.
func deleteTaggedRules(ctx context.Context, table string) error {
	out, err := exec.CommandContext(ctx, "iptables", "-t", table, "-S").Output()
	if err != nil {
		return fmt.Errorf("iptables -t %s -S: %w", table, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, `--comment "csikit-e2e`) {
			continue
		}
		args, err := splitRule(line[len("-A "):])
		if err != nil {
			return err
		}
		if o, err := exec.CommandContext(ctx, "iptables", append([]string{"-t", table, "-D"}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables -t %s -D %s: %w: %s", table, strings.Join(args, " "), err, o)
		}
	}
	return sc.Err()
}

// splitRule splits a rule as iptables -S prints it: words, a comment in double quotes.
func splitRule(s string) ([]string, error) {
	var out []string
	for s = strings.TrimLeftFunc(s, unicode.IsSpace); s != ""; s = strings.TrimLeftFunc(s, unicode.IsSpace) {
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in the rule %q", s)
			}
			out = append(out, s[1:1+end])
			s = s[2+end:]
			continue
		}
		end := strings.IndexFunc(s, unicode.IsSpace)
		if end < 0 {
			end = len(s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out, nil
}

// removeNetns unmounts and removes the cni-* network namespaces that are not in before: those
// containerd made for the run's pods.
func removeNetns(t testing.TB, before []string) {
	after, _ := filepath.Glob("/run/netns/cni-*")
	for _, ns := range after {
		if slices.Contains(before, ns) {
			continue
		}
		if err := syscall.Unmount(ns, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Logf("unmount %s: %v", ns, err)
		}
		if err := os.Remove(ns); err != nil {
			t.Logf("remove %s: %v", ns, err)
		}
	}
}

// releaseNodeMounts unmounts what kubelet, containerd and the hostpath node plugin mounted, and
// detaches hostpath's loop devices.
func releaseNodeMounts(t testing.TB, work string) {
	unmountAll(t, KubeletDir)
	unmountAll(t, filepath.Join(work, "containerd"))
	for _, dev := range append(LoopsUnder(HostpathStateDir), detachedHostpathLoops()...) {
		if o, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Logf("detach %s: %v %s", dev, err, o)
		}
	}
	unmountAll(t, HostpathStateDir)
}

// updateRunRecord changes this run's record once the run knows more about what it will leave.
func updateRunRecord(change func(*runRecord)) error {
	rec, err := readRunRecord()
	if err != nil {
		return err
	}
	if rec == nil || rec.PID != os.Getpid() {
		return fmt.Errorf("%s is not this run's record", runRecordPath)
	}
	change(rec)
	return writeRunRecord(rec)
}

// LoopsUnder lists loop devices whose backing file lies under dir.
func LoopsUnder(dir string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), dir+"/") {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(f))))
		}
	}
	return out
}

// ReleaseHostResources undoes what a failed run may leave on the machine under work: mounts
// (lazily unmounted) and loop devices (detached), so that the directory can be removed.
func ReleaseHostResources(t testing.TB, work string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err == nil {
		var mps []string
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && strings.HasPrefix(f[4], work+"/") {
				mps = append(mps, f[4])
			}
		}
		for i := len(mps) - 1; i >= 0; i-- {
			if err := syscall.Unmount(mps[i], syscall.MNT_DETACH); err != nil {
				t.Logf("unmount %s: %v", mps[i], err)
			}
		}
	}
	for _, dev := range LoopsUnder(work) {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Logf("detach %s: %v %s", dev, err, out)
		}
	}
}
