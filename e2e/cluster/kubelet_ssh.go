package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// What Kubernetes' disruptive storage specs need of a node (k8s.io/kubernetes v1.36.1,
// test/e2e/storage/utils and test/e2e/framework/ssh): an SSH server on the node's address,
// port 22, that takes the key of $KUBE_SSH_KEY_PATH for the user $KUBE_SSH_USER and runs
// `sudo --version`, `[sudo] systemctl stop|start kubelet`,
// `systemctl show kubelet --property ActiveState --value` and mount checks (`mount | grep`,
// `cat /proc/self/mountinfo`, `ls`/`find` under /var/lib/kubelet) there. On the one-node
// cluster of kubelet-cluster.sh kubelet is a process of the test, not a systemd unit: the
// sshd below runs every command under a PATH that finds the shims of node-ssh/ first, whose
// systemctl asks the test, through kubelet-cluster.sh and a unix socket (kubeletSwitch), to
// stop or start its kubelet.

// kubeletStopGrace is how long a stopped kubelet gets between SIGTERM and SIGKILL, as in
// TestPods' kubelet-restart case.
const kubeletStopGrace = 30 * time.Second

// kubeletSwitch stops and starts one kubelet process on request, what `systemctl stop|start
// kubelet` does on a systemd node. It serves HTTP (serveControl): POST /kubelet/stop,
// POST /kubelet/start, POST /kubelet/restart and GET /kubelet/state, each answering the
// state afterwards (active, inactive or failed, systemd's ActiveState words).
type kubeletSwitch struct {
	ps    *Procs
	ready func(context.Context) error // waits until a started kubelet is healthy and its node Ready

	mu      sync.Mutex
	kubelet *Proc // the last one started
	stopped bool  // stopped on request (not crashed)
}

// current is the kubelet process last started.
func (k *kubeletSwitch) current() *Proc {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kubelet
}

// state is systemd's ActiveState of the kubelet unit: inactive once stopped on request, failed
// when the process ended by itself, else active.
func (k *kubeletSwitch) state() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stateLocked()
}

func (k *kubeletSwitch) stateLocked() string {
	if k.stopped {
		return "inactive"
	}
	if ok, _ := k.kubelet.exited(); ok {
		return "failed"
	}
	return "active"
}

// stop ends kubelet (SIGTERM, SIGKILL after kubeletStopGrace); stopping a stopped one is a no-op.
func (k *kubeletSwitch) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.stopped {
		k.ps.retire(k.kubelet, kubeletStopGrace)
		k.stopped = true
	}
}

// start runs kubelet again with its command line if it is not running (stopped or crashed) and
// waits until it is ready; starting a running one only waits.
func (k *kubeletSwitch) start(ctx context.Context) error {
	k.mu.Lock()
	if k.stateLocked() != "active" {
		// A crashed kubelet is still in the list CheckAlive watches.
		k.ps.retire(k.kubelet, 0)
		p, err := k.ps.again(k.kubelet)
		if err != nil {
			k.mu.Unlock()
			return err
		}
		k.kubelet, k.stopped = p, false
	}
	k.mu.Unlock()
	if err := k.ready(ctx); err != nil {
		return fmt.Errorf("kubelet started, not ready: %w", err)
	}
	return nil
}

// handler is the HTTP API of the switch.
func (k *kubeletSwitch) handler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, err error) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, k.state())
	}
	mux.HandleFunc("GET /kubelet/state", func(w http.ResponseWriter, r *http.Request) { reply(w, nil) })
	mux.HandleFunc("POST /kubelet/stop", func(w http.ResponseWriter, r *http.Request) {
		k.stop()
		reply(w, nil)
	})
	mux.HandleFunc("POST /kubelet/start", func(w http.ResponseWriter, r *http.Request) {
		reply(w, k.start(r.Context()))
	})
	mux.HandleFunc("POST /kubelet/restart", func(w http.ResponseWriter, r *http.Request) {
		k.stop()
		reply(w, k.start(r.Context()))
	})
	return mux
}

// serveControl serves h on a unix socket at path that only root may use; stop closes it and
// removes the socket.
func serveControl(path string, h http.Handler) (stop func(), err error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l) // returns http.ErrServerClosed on Close
	}()
	return func() {
		_ = srv.Close()
		<-done
		_ = os.Remove(path)
	}, nil
}

// sshdConfig is the configuration of the node's sshd: keys only, root only, and through
// authorized_keys' command= the session script only (forced-commands-only).
const sshdConfig = `# The csikit e2e node's sshd (e2e/cluster/kubelet_ssh.go): Kubernetes' disruptive storage specs run
# their node commands through it.
ListenAddress %[1]s
HostKey %[2]s/host_ed25519
AuthorizedKeysFile %[2]s/authorized_keys
PidFile %[2]s/sshd.pid
AllowUsers root
PermitRootLogin forced-commands-only
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
HostbasedAuthentication no
PermitEmptyPasswords no
UsePAM no
PermitUserEnvironment no
AllowTcpForwarding no
AllowAgentForwarding no
AllowStreamLocalForwarding no
X11Forwarding no
PermitTTY no
PermitTunnel no
PrintMotd no
# The keys live under the test's directory in /tmp, which is world-writable: the permission
# walk of StrictModes would refuse them there; the directory itself is root's, mode 0700.
StrictModes no
LogLevel VERBOSE
`

// sessionScript runs the command an SSH client asked for, under a PATH that finds the shims of
// node-ssh/ first, with the switch's socket for kubelet-cluster.sh.
const sessionScript = `#!/bin/sh
# authorized_keys runs this for every session of the e2e key (e2e/cluster/kubelet_ssh.go).
PATH='%s':/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CSIKIT_E2E_CONTROL='%s'
export PATH CSIKIT_E2E_CONTROL
exec /bin/bash -c "$SSH_ORIGINAL_COMMAND"
`

// nodeSSH is the node's sshd and what a client needs to use it.
type nodeSSH struct {
	dir    string // keys, configuration, session script
	key    string // the client's private key (KUBE_SSH_KEY_PATH)
	sshd   *Proc
	listen string // host:port
}

// startSSH runs an sshd on listen (host:port; the node's is nodeIP:22) for root with a key of
// its own, generated into work/ssh with a host key, whose sessions run their command through
// sessionScript (PATH with shims first, CSIKIT_E2E_CONTROL=control). It stops with the other
// processes of the test.
func startSSH(ctx context.Context, ps *Procs, work, listen, shims, control string) (*nodeSSH, error) {
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd" // root's PATH may lack sbin; sshd must be run by its absolute path anyway
	}
	if _, err := os.Stat(sshd); err != nil {
		return nil, fmt.Errorf("sshd for the disruptive specs (Debian: apt-get install openssh-server): %w", err)
	}
	for _, p := range []string{shims, control} {
		if strings.ContainsAny(p, "'\"\n") {
			return nil, fmt.Errorf("path %q: quotes and newlines have no place in a path the session script names", p)
		}
	}
	if c, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("something listens on %s already (a system sshd on every address?); the node's sshd needs it", listen)
	}
	s := &nodeSSH{dir: filepath.Join(work, "ssh"), listen: listen}
	s.key = filepath.Join(s.dir, "id_ed25519")
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	for _, k := range []struct{ path, comment string }{
		{filepath.Join(s.dir, "host_ed25519"), "csikit-e2e-node-host"},
		{s.key, "csikit-e2e"},
	} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", k.comment, "-f", k.path).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ssh-keygen %s: %w: %s", k.path, err, out)
		}
	}
	pub, err := os.ReadFile(s.key + ".pub")
	if err != nil {
		return nil, err
	}
	session := filepath.Join(s.dir, "session")
	if err := os.WriteFile(session, fmt.Appendf(nil, sessionScript, shims, control), 0o700); err != nil {
		return nil, err
	}
	authorized := fmt.Sprintf("restrict,command=\"%s\" %s", session, pub)
	if err := os.WriteFile(filepath.Join(s.dir, "authorized_keys"), []byte(authorized), 0o600); err != nil {
		return nil, err
	}
	config := filepath.Join(s.dir, "sshd_config")
	if err := os.WriteFile(config, fmt.Appendf(nil, sshdConfig, listen, s.dir), 0o600); err != nil {
		return nil, err
	}
	// sshd's privilege separation directory, which Debian's service unit creates.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return nil, err
	}
	if out, err := exec.Command(sshd, "-t", "-f", config).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sshd -t: %w: %s", err, out)
	}
	if s.sshd, err = ps.Start("sshd", sshd, []string{"-D", "-e", "-f", config}); err != nil {
		return nil, err
	}
	if err := Poll(ctx, "sshd on "+listen, 30*time.Second, func(ctx context.Context) (bool, error) {
		if ok, err := s.sshd.exited(); ok {
			return false, fmt.Errorf("sshd exited (%v); its log ends:\n%s", err, tail(s.sshd.Log, 10))
		}
		c, err := net.DialTimeout("tcp", listen, time.Second)
		if err != nil {
			return false, err
		}
		c.Close()
		return true, nil
	}); err != nil {
		return nil, err
	}
	return s, nil
}
