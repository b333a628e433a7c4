package cluster

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is one program of the test cluster, its output in a log file.
type Proc struct {
	name string
	env  []string // what start added to the environment
	cmd  *exec.Cmd
	Log  string        // the path of its log file
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, valid once done is closed
}

// Procs starts programs and stops all of them, in reverse order, when the test ends.
type Procs struct {
	t      testing.TB
	logDir string
	mu     sync.Mutex
	list   []*Proc
}

// NewProcs returns a Procs that writes logs under logDir and stops its processes in t's cleanup.
func NewProcs(t testing.TB, logDir string) *Procs {
	ps := &Procs{t: t, logDir: logDir}
	t.Cleanup(ps.stopAll)
	return ps
}

// Start runs bin with args, stdout and stderr into <logDir>/<name>.log. The process gets
// SIGKILL if the test binary dies first (Pdeathsig), so nothing outlives a crashed run.
func (ps *Procs) Start(name, bin string, args []string, env ...string) (*Proc, error) {
	logPath := filepath.Join(ps.logDir, name+".log")
	// Appended to: a restarted program (procs.restart) keeps its earlier log above the new one.
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: start %s: %w", name, bin, err)
	}
	p := &Proc{name: name, env: env, cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	ps.t.Logf("started %s (pid %d): %s %s", name, cmd.Process.Pid, filepath.Base(bin), strings.Join(args, " "))
	return p, nil
}

// exited reports whether p has ended, and how.
func (p *Proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to p's process group and SIGKILL after grace; it returns when p is gone.
func (p *Proc) stop(grace time.Duration) {
	if ok, _ := p.exited(); ok {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (ps *Procs) stopAll() {
	ps.mu.Lock()
	list := ps.list
	ps.list = nil
	ps.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		list[i].stop(10 * time.Second)
	}
}

// Restart stops p (SIGTERM, then SIGKILL after grace) and starts its program again with the
// same command line, under the same name; CheckAlive then watches the new process only.
func (ps *Procs) Restart(p *Proc, grace time.Duration) (*Proc, error) {
	ps.retire(p, grace)
	return ps.again(p)
}

// retire stops p (SIGTERM, then SIGKILL after grace) and forgets it, so that CheckAlive does
// not take the stop for a crash.
func (ps *Procs) retire(p *Proc, grace time.Duration) {
	p.stop(grace)
	ps.mu.Lock()
	for i, q := range ps.list {
		if q == p {
			ps.list = append(ps.list[:i], ps.list[i+1:]...)
			break
		}
	}
	ps.mu.Unlock()
}

// again starts the program of a retired p with the same command line, under the same name.
func (ps *Procs) again(p *Proc) (*Proc, error) {
	return ps.Start(p.name, p.cmd.Path, p.cmd.Args[1:], p.env...)
}

// CheckAlive fails with the tail of the log of the first program that has exited: a crashed
// component otherwise shows up only as a timeout much later.
func (ps *Procs) CheckAlive() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.list {
		if ok, err := p.exited(); ok {
			return fmt.Errorf("%s exited (%v); its log ends:\n%s", p.name, err, tail(p.Log, 30))
		}
	}
	return nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// FreePort asks the kernel for an unused TCP port on the loopback address. The port is free
// when this returns; a program started right after binds it.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
