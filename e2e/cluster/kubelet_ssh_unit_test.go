package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeKubelet is a kubeletSwitch over a sleep process standing in for kubelet, served on a
// control socket; notReady makes its ready check fail.
type fakeKubelet struct {
	sw       *kubeletSwitch
	sock     string
	readies  int
	notReady error
}

func newFakeKubelet(t *testing.T) *fakeKubelet {
	t.Helper()
	dir := t.TempDir()
	ps := NewProcs(t, dir)
	p, err := ps.Start("kubelet", "/bin/sleep", []string{"600"})
	if err != nil {
		t.Fatal(err)
	}
	fk := &fakeKubelet{sock: filepath.Join(dir, "control.sock")}
	fk.sw = &kubeletSwitch{ps: ps, kubelet: p, ready: func(context.Context) error {
		fk.readies++
		return fk.notReady
	}}
	stop, err := serveControl(fk.sock, fk.sw.handler())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return fk
}

// TestKubeletSwitchUnit drives the kubelet switch over its socket as kubelet-cluster.sh does: a
// stop ends the process and is not a crash to CheckAlive, a start runs the same command line
// again and waits for readiness, a crashed kubelet is "failed" and starts again, a readiness
// failure is an error, and only the four requests are served.
func TestKubeletSwitchUnit(t *testing.T) {
	fk := newFakeKubelet(t)
	if fi, err := os.Stat(fk.sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", fk.sock)
	}}}
	first := fk.sw.current()
	var pids []int
	for _, step := range []struct {
		name, method, path string
		before             func()
		code               int
		body               string
		check              func() error
	}{
		{name: "state of a running kubelet", method: "GET", path: "/kubelet/state", code: 200, body: "active\n"},
		{name: "stop", method: "POST", path: "/kubelet/stop", code: 200, body: "inactive\n", check: func() error {
			if ok, _ := first.exited(); !ok {
				return errors.New("the kubelet process still runs")
			}
			return fk.sw.ps.CheckAlive()
		}},
		{name: "stop again", method: "POST", path: "/kubelet/stop", code: 200, body: "inactive\n"},
		{name: "state of a stopped kubelet", method: "GET", path: "/kubelet/state", code: 200, body: "inactive\n"},
		{name: "start", method: "POST", path: "/kubelet/start", code: 200, body: "active\n", check: func() error {
			if fk.readies != 1 {
				return fmt.Errorf("ready checked %d times, want 1", fk.readies)
			}
			p := fk.sw.current()
			if p == first || p.cmd.Process.Pid == first.cmd.Process.Pid || strings.Join(p.cmd.Args, " ") != strings.Join(first.cmd.Args, " ") {
				return fmt.Errorf("started %v (pid %d), want a new process of %v", p.cmd.Args, p.cmd.Process.Pid, first.cmd.Args)
			}
			pids = append(pids, p.cmd.Process.Pid)
			return nil
		}},
		{name: "start of a running kubelet waits only", method: "POST", path: "/kubelet/start", code: 200, body: "active\n", check: func() error {
			if p := fk.sw.current(); p.cmd.Process.Pid != pids[0] || fk.readies != 2 {
				return fmt.Errorf("pid %d (want %d), ready checked %d times (want 2)", p.cmd.Process.Pid, pids[0], fk.readies)
			}
			return nil
		}},
		{name: "state of a crashed kubelet", method: "GET", path: "/kubelet/state", before: func() {
			p := fk.sw.current()
			_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}, code: 200, body: "failed\n"},
		{name: "start after a crash", method: "POST", path: "/kubelet/start", code: 200, body: "active\n", check: func() error {
			if p := fk.sw.current(); p.cmd.Process.Pid == pids[0] {
				return errors.New("the crashed process was not replaced")
			}
			return fk.sw.ps.CheckAlive()
		}},
		{name: "restart that never gets ready", method: "POST", path: "/kubelet/restart", before: func() {
			fk.notReady = errors.New("node NotReady")
		}, code: 500, body: "kubelet started, not ready: node NotReady\n"},
		{name: "stop by GET", method: "GET", path: "/kubelet/stop", code: 405},
		{name: "another unit", method: "POST", path: "/containerd/stop", code: 404},
	} {
		if step.before != nil {
			step.before()
		}
		req, err := http.NewRequest(step.method, "http://kubelet-cluster"+step.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != step.code || (step.body != "" && string(body) != step.body) {
			t.Errorf("%s: %d %q, want %d %q", step.name, resp.StatusCode, body, step.code, step.body)
		}
		if step.check != nil {
			if err := step.check(); err != nil {
				t.Errorf("%s: %v", step.name, err)
			}
		}
	}
}

// TestNodeSSHShimsUnit runs node-ssh/systemctl and node-ssh/sudo as the storage e2e specs do
// over SSH, against a kubelet switch, through kubelet-cluster.sh and curl: stop and start reach
// the switch, the state reads back in systemd's words, and anything else is refused.
func TestNodeSSHShimsUnit(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		SkipOrFail(t, "kubelet-cluster.sh talks to the switch with curl: %v", err)
	}
	fk := newFakeKubelet(t)
	shims, err := filepath.Abs("../node-ssh")
	if err != nil {
		t.Fatal(err)
	}
	root := os.Getuid() == 0
	for _, tc := range []struct {
		cmd     string
		control string // CSIKIT_E2E_CONTROL; the switch's socket when empty
		ok      bool
		stdout  string
		state   string // the switch's state afterwards
	}{
		{cmd: "systemctl is-active kubelet", ok: true, stdout: "active\n", state: "active"},
		{cmd: "systemctl stop kubelet", ok: true, state: "inactive"},
		{cmd: "systemctl is-active kubelet", ok: false, stdout: "inactive\n", state: "inactive"},
		{cmd: "systemctl show kubelet --property ActiveState --value", ok: true, stdout: "inactive\n", state: "inactive"},
		{cmd: "sudo systemctl start kubelet", ok: root, state: map[bool]string{true: "active", false: "inactive"}[root]},
		{cmd: "systemctl start kubelet", ok: true, state: "active"},
		{cmd: "systemctl restart kubelet", ok: true, state: "active"},
		{cmd: "systemctl status kubelet", ok: false, state: "active"},
		{cmd: "systemctl stop containerd", ok: false, state: "active"},
		{cmd: "systemctl stop kubelet now", ok: false, state: "active"},
		{cmd: "systemctl show kubelet --property MainPID --value", ok: false, state: "active"},
		{cmd: "sudo --version", ok: root, state: "active"},
		{cmd: "sudo -u nobody id", ok: false, state: "active"},
		{cmd: "systemctl stop kubelet", control: filepath.Join(t.TempDir(), "none.sock"), ok: false, state: "active"},
	} {
		control := tc.control
		if control == "" {
			control = fk.sock
		}
		cmd := exec.Command("/bin/bash", "-c", tc.cmd)
		cmd.Env = append(os.Environ(), "PATH="+shims+":"+os.Getenv("PATH"), "CSIKIT_E2E_CONTROL="+control)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if (err == nil) != tc.ok || (tc.stdout != "" && stdout.String() != tc.stdout) {
			t.Errorf("%s: %v, stdout %q (stderr %q); want success %v, stdout %q", tc.cmd, err, stdout.String(), stderr.String(), tc.ok, tc.stdout)
		}
		if strings.Contains(stderr.String(), "command not found") {
			t.Errorf("%s: stderr %q: the specs take that for a node without sudo", tc.cmd, stderr.String())
		}
		if got := fk.sw.state(); got != tc.state {
			t.Errorf("%s: kubelet %s, want %s", tc.cmd, got, tc.state)
		}
	}
}

// TestNodeSSHUnit starts the node's sshd on a loopback port and logs in as the storage e2e
// framework does (root, the generated key): a session runs its command with the shims first on
// PATH and reaches the kubelet switch; another key, a password and a shell other than the
// forced command's are refused.
func TestNodeSSHUnit(t *testing.T) {
	if os.Getuid() != 0 {
		SkipOrFail(t, "the node's sshd serves root's sessions: run as root")
	}
	for _, bin := range []string{"/usr/sbin/sshd", "ssh", "ssh-keygen", "curl"} {
		if _, err := exec.LookPath(bin); err != nil {
			SkipOrFail(t, "%s (Debian: openssh-server, openssh-client, curl): %v", bin, err)
		}
	}
	fk := newFakeKubelet(t)
	shims, err := filepath.Abs("../node-ssh")
	if err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	ps := NewProcs(t, work)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	listen := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	s, err := startSSH(ctx, ps, work, listen, shims, fk.sock)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(work, "other")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	ssh := func(key, user string, extra []string, command string) (string, error) {
		args := append([]string{"-p", fmt.Sprint(port), "-i", key, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
			"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"}, extra...)
		args = append(args, user+"@127.0.0.1", command)
		out, err := exec.Command("ssh", args...).CombinedOutput()
		return string(out), err
	}
	for _, tc := range []struct {
		name, key, user string
		extra           []string
		command         string
		ok              bool
		out             string
		state           string
	}{
		{name: "state", key: s.key, command: "systemctl show kubelet --property ActiveState --value", ok: true, out: "active\n", state: "active"},
		{name: "sudo present", key: s.key, command: "sudo --version", ok: true, state: "active"},
		{name: "stop with sudo", key: s.key, command: "sudo systemctl stop kubelet", ok: true, state: "inactive"},
		{name: "start", key: s.key, command: "systemctl start kubelet", ok: true, state: "active"},
		{name: "the node's mount table", key: s.key, command: "mount | grep -c ' on / '", ok: true, state: "active"},
		{name: "another key", key: other, command: "true", ok: false, state: "active"},
		{name: "a password", key: s.key, extra: []string{"-o", "PreferredAuthentications=password,keyboard-interactive"}, command: "true", ok: false, state: "active"},
		{name: "another user", key: s.key, user: "nobody", command: "true", ok: false, state: "active"},
	} {
		user := tc.user
		if user == "" {
			user = "root"
		}
		out, err := ssh(tc.key, user, tc.extra, tc.command)
		if (err == nil) != tc.ok || (tc.out != "" && out != tc.out) {
			t.Errorf("%s: %v, output %q; want success %v, output %q", tc.name, err, out, tc.ok, tc.out)
		}
		if got := fk.sw.state(); got != tc.state {
			t.Errorf("%s: kubelet %s, want %s", tc.name, got, tc.state)
		}
	}
}
