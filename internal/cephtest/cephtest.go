// Package cephtest gives tests a one-node Ceph cluster: a mon, a mgr (with the volumes module
// that `ceph fs subvolume` needs), an OSD on a sparse file, an MDS serving the CephFS
// filesystem "cephfs", and RGW, all plain processes on 127.0.0.1 with cephx on. The scripts
// beside this file do the work (ceph-up.sh, ceph-down.sh; run them with --help); this package
// runs them from a test binary, once per binary, and stops the cluster when the binary ends.
//
// A test package that uses it:
//
//	func TestMain(m *testing.M) { os.Exit(cephtest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		c := cephtest.Start(t) // the first call brings the cluster up (about 10 s)
//		out, err := c.Ceph(ctx, "fs", "subvolume", "getpath", c.CephFS.Name, "sv")
//		...
//	}
//
// Start makes its caller a system test (internal/testenv): it skips unless CSIKIT_SYSTEM=1, so
// that the unit tier never starts a cluster because the Ceph packages happen to be installed.
// In the system tier it skips the test when the Ceph packages are missing, naming them, and
// fails it instead under CI. Tests that share the cluster and also stop it (Restart,
// StopDaemons) must not run in parallel with the tests they would disturb.
//
// A cluster belongs to the process that started it: if that process dies without stopping it
// (a test timeout, SIGKILL), a watcher started by ceph-up.sh stops every daemon and removes the
// directory within seconds. Nothing here needs root; mounting CephFS with ceph-fuse does.
package cephtest

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/csikit/csikit/internal/testenv"
)

// The scripts travel inside the test binary, so that a test runs them from any module of the
// workspace and with -trimpath; ceph-up.sh copies both into the cluster's bin/.
var (
	//go:embed ceph-up.sh
	upScript []byte
	//go:embed ceph-down.sh
	downScript []byte
)

// The daemons of a cluster, as ceph-up.sh names them: the names StopDaemons takes.
const (
	Mon       = "mon.a"
	Mgr       = "mgr.x"
	OSD       = "osd.0"
	MDS       = "mds.a"
	RGWDaemon = "client.rgw.a"
)

// KeepEnv is the environment variable that, set to anything, makes Main and Close stop the
// daemons but keep the cluster's directory (its log/ has every daemon's log) and say where.
const KeepEnv = "CSIKIT_CEPHTEST_KEEP"

// ErrNotInstalled is returned (wrapped, naming the Debian packages) by Launch when a program
// ceph-up.sh needs is missing.
var ErrNotInstalled = errors.New("the Ceph packages are not installed")

// tools are the programs the scripts run, with the Debian package of each.
var tools = []struct{ command, debianPackage string }{
	{"ceph", "ceph-common"}, {"ceph-authtool", "ceph-common"}, {"monmaptool", "ceph-common"},
	{"radosgw-admin", "ceph-common"}, {"ceph-mon", "ceph-mon"}, {"ceph-mgr", "ceph-mgr"},
	{"ceph-osd", "ceph-osd"}, {"ceph-mds", "ceph-mds"}, {"radosgw", "radosgw"},
	{"python3", "python3"}, {"bash", "bash"}, {"flock", "util-linux"}, {"setsid", "util-linux"},
	{"timeout", "coreutils"},
}

// MissingPackages returns the Debian packages whose programs the cluster needs and this
// machine lacks, each once, in a fixed order; nil when everything is there.
func MissingPackages() []string {
	var missing []string
	for _, tool := range tools {
		if _, err := exec.LookPath(tool.command); err != nil && !slices.Contains(missing, tool.debianPackage) {
			missing = append(missing, tool.debianPackage)
		}
	}
	return missing
}

// Secret is a key or secret access key. It prints as [REDACTED] with every fmt verb, so that a
// test logging an Info, a Cluster or an error never writes a key into the test output; convert
// it with string() where the value is needed.
type Secret string

// String returns "[REDACTED]", never the secret.
func (Secret) String() string { return "[REDACTED]" }

// GoString returns a redacted Go literal, for %#v.
func (Secret) GoString() string { return `"[REDACTED]"` }

// Info is DIR/cluster.json as ceph-up.sh writes it (Version 1): everything a client of the
// cluster needs. cluster.env holds the same as shell assignments.
type Info struct {
	// Version is the format of cluster.json: 1.
	Version int `json:"version"`
	// Dir is the cluster's directory (absolute), holding everything below.
	Dir string `json:"dir"`
	// Conf is the path of the cluster's ceph.conf: mon_host, fsid, and the keyring of every
	// entity at Dir/keyring/NAME.keyring. CEPH_CONF=Conf is enough for ceph, rados, ceph-fuse.
	Conf string `json:"conf"`
	// FSID is the cluster's fsid.
	FSID string `json:"fsid"`
	// MonHost is the mon's address in ceph.conf's mon_host syntax:
	// "[v2:127.0.0.1:PORT,v1:127.0.0.1:PORT+1]".
	MonHost string `json:"mon_host"`
	// PortBase is the first of the 40 ports the cluster holds on 127.0.0.1: the mon's msgr2
	// port; PortBase+1 is its msgr1 port, PortBase+2 RGW's, the rest the daemons' bind range.
	PortBase int `json:"port_base"`
	// Admin is client.admin, allowed everything.
	Admin Entity `json:"admin"`
	// CephFS is the filesystem the MDS serves.
	CephFS FS `json:"cephfs"`
	// RGW is the object gateway and its admin user.
	RGW RGW `json:"rgw"`
	// Daemons names the cluster's daemons: Mon, Mgr, OSD, MDS, RGWDaemon.
	Daemons []string `json:"daemons"`
}

// Entity is a cephx identity.
type Entity struct {
	// Name is the full entity name, such as "client.admin" (ceph --name; --id takes the part
	// after "client.").
	Name string `json:"name"`
	// Key is the cephx secret, the value of "key" in the keyring.
	Key Secret `json:"key"`
	// Keyring is the path of a keyring file (mode 0600) holding Key.
	Keyring string `json:"keyring"`
}

// FS is a CephFS filesystem.
type FS struct {
	// Name is the filesystem's name, "cephfs": the volume of `ceph fs subvolume` commands.
	Name string `json:"name"`
	// MetadataPool is the name of its metadata pool.
	MetadataPool string `json:"metadata_pool"`
	// DataPool is the name of its data pool.
	DataPool string `json:"data_pool"`
}

// RGW is the object gateway.
type RGW struct {
	// Endpoint is its URL, "http://127.0.0.1:PORT": S3, and the admin ops API under /admin.
	// It takes SigV4 signatures for any region name.
	Endpoint string `json:"endpoint"`
	// AdminUser is the uid of the user with the caps "users=*;buckets=*", whose keys sign
	// admin ops API requests (and S3 requests, as that user).
	AdminUser string `json:"admin_user"`
	// AccessKey is AdminUser's S3 access key ID.
	AccessKey string `json:"access_key"`
	// SecretKey is AdminUser's S3 secret access key.
	SecretKey Secret `json:"secret_key"`
}

// ReadInfo reads and checks DIR/cluster.json.
func ReadInfo(dir string) (Info, error) {
	var info Info
	data, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		return info, fmt.Errorf("reading the cluster's description: %w", err)
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return info, fmt.Errorf("decoding %s: %w", filepath.Join(dir, "cluster.json"), err)
	}
	if info.Version != 1 {
		return info, fmt.Errorf("%s: format version %d, want 1", filepath.Join(dir, "cluster.json"), info.Version)
	}
	if info.Conf == "" || info.Admin.Key == "" || info.RGW.Endpoint == "" || info.RGW.SecretKey == "" {
		return info, fmt.Errorf("%s: conf, admin key or RGW endpoint or keys missing", filepath.Join(dir, "cluster.json"))
	}
	return info, nil
}

// Cluster is a one-node Ceph cluster started by Launch or Start. Its methods may be called
// from any goroutine; they run one at a time.
type Cluster struct {
	Info

	mu     sync.Mutex
	closed bool
}

// Launch starts a new cluster in dir (which must be empty or missing), or in a new directory
// under os.TempDir if dir is "", and returns once it is healthy: HEALTH_OK with the OSD up,
// every PG active+clean and the MDS active, the volumes module and RGW answering; about 10 s
// on two cores. The cluster belongs to this process (see the package doc); Close stops it.
// If ctx ends first, or the bring-up fails, Launch stops every daemon it started and removes
// the cluster's directory (unless KeepEnv is set; a dir that was not empty is left as it was),
// and the error carries the end of every daemon's log.
func Launch(ctx context.Context, dir string) (*Cluster, error) {
	if missing := MissingPackages(); len(missing) > 0 {
		return nil, fmt.Errorf("%w: install the Debian packages %v", ErrNotInstalled, missing)
	}
	created := dir == ""
	if created {
		var err error
		if dir, err = os.MkdirTemp("", "cephtest-"); err != nil {
			return nil, fmt.Errorf("creating the cluster's directory: %w", err)
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("the cluster's directory: %w", err)
	}
	scripts, err := os.MkdirTemp("", "cephtest-scripts-")
	if err != nil {
		return nil, fmt.Errorf("writing the scripts: %w", err)
	}
	defer os.RemoveAll(scripts)
	for name, body := range map[string][]byte{"ceph-up.sh": upScript, "ceph-down.sh": downScript} {
		if err := os.WriteFile(filepath.Join(scripts, name), body, 0o700); err != nil {
			return nil, fmt.Errorf("writing the scripts: %w", err)
		}
	}
	if _, err := runScript(ctx, filepath.Join(scripts, "ceph-up.sh"), "--owner", strconv.Itoa(os.Getpid()), dir); err != nil {
		if os.Getenv(KeepEnv) == "" {
			// ceph-up.sh stopped what it started; if it did not get that far (killed), the
			// down script finds nothing to stop. It removes only a directory ceph-up.sh made
			// into a cluster's: one the caller gave that was not empty stays as it was.
			_, _ = runScript(context.Background(), filepath.Join(scripts, "ceph-down.sh"), "--purge", dir)
			if created {
				_ = os.RemoveAll(dir)
			}
		}
		return nil, err
	}
	info, err := ReadInfo(dir)
	if err != nil {
		c := &Cluster{Info: Info{Dir: dir}}
		return nil, errors.Join(err, c.Close())
	}
	return &Cluster{Info: info}, nil
}

// stderrLimit bounds how much of a script's stderr an error carries: the end, where the
// reason and the daemons' log tails are.
const stderrLimit = 16 << 10

// runScript runs a script with bash and returns its stdout. Cancelling ctx sends SIGTERM, which
// ceph-up.sh answers by stopping what it started; SIGKILL follows if it has not exited a
// minute later.
func runScript(ctx context.Context, script string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := stderr.Bytes()
		if len(msg) > stderrLimit {
			msg = append([]byte("[...]"), msg[len(msg)-stderrLimit:]...)
		}
		return nil, fmt.Errorf("%s %v: %w\n%s", filepath.Base(script), args, err, bytes.TrimSpace(msg))
	}
	// A daemon ceph-down.sh found only by its safety net is a leak it stopped: a bug in the
	// scripts that must show in the test's output, not only in the cluster's (removed) log.
	for line := range bytes.Lines(stderr.Bytes()) {
		if bytes.Contains(line, []byte("stray process")) {
			fmt.Fprintf(os.Stderr, "cephtest: %s", line)
		}
	}
	return stdout.Bytes(), nil
}

func (c *Cluster) script(name string) string { return filepath.Join(c.Dir, "bin", name) }

// StopDaemons stops the named daemons (Mon, Mgr, OSD, MDS, RGWDaemon), or, with no name, every
// daemon after unmounting any ceph-fuse mount under Dir (and waiting for each ceph-fuse to
// exit): SIGTERM (again to a daemon that respawns meanwhile, as the MDS may), SIGKILL after
// 10 s, and it returns once they have exited, 2-4 s for all (the MDS takes the longest; one
// that crashes while respawning takes the 10 s). The MDS writes its journal out first, so no acknowledged change
// is lost. The data, ports and keys stay for StartDaemons. With every daemon stopped, clients
// find nothing listening on the cluster's ports; with the OSD stopped, the mon knows it is down.
func (c *Cluster) StopDaemons(ctx context.Context, names ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("cephtest: the cluster is closed")
	}
	_, err := runScript(ctx, c.script("ceph-down.sh"), append([]string{c.Dir}, names...)...)
	return err
}

// StartDaemons starts every daemon that is not running, on the same data, ports and keys, and
// returns once the cluster is healthy again (as for Launch). After a full stop this takes
// about 5 s.
func (c *Cluster) StartDaemons(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("cephtest: the cluster is closed")
	}
	_, err := runScript(ctx, c.script("ceph-up.sh"), "--owner", strconv.Itoa(os.Getpid()), c.Dir)
	return err
}

// Restart stops every daemon and starts them again, as StopDaemons then StartDaemons: the
// data, ports and keys are kept.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.StopDaemons(ctx); err != nil {
		return err
	}
	return c.StartDaemons(ctx)
}

// Close stops every daemon, unmounts what ceph-fuse mounted under Dir, and removes Dir and
// the cluster's claim on its ports (keeps Dir if KeepEnv is set). Closing twice is a no-op.
func (c *Cluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"--purge", c.Dir}
	if os.Getenv(KeepEnv) != "" {
		args = args[1:]
	}
	if _, err := runScript(ctx, c.script("ceph-down.sh"), args...); err != nil {
		return err
	}
	if os.Getenv(KeepEnv) != "" {
		fmt.Fprintf(os.Stderr, "cephtest: %s is set: the stopped cluster's directory is kept: %s\n", KeepEnv, c.Dir)
	}
	return nil
}

// Ceph runs the ceph CLI as client.admin against the cluster (`ceph --conf Conf
// --connect-timeout 10 ARGS...`) and returns its stdout; the error carries its stderr.
func (c *Cluster) Ceph(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "ceph", append([]string{"--conf", c.Conf, "--connect-timeout", "10"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ceph %v: %w: %s", args, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// Env returns the environment entries that point Ceph's command-line tools (ceph, rados,
// radosgw-admin, ceph-fuse) at the cluster: CEPH_CONF; append them to os.Environ().
func (c *Cluster) Env() []string { return []string{"CEPH_CONF=" + c.Conf} }

// shared is the test binary's cluster: started by the first Start, closed by Main.
var shared struct {
	mu      sync.Mutex
	inMain  bool
	started bool
	cluster *Cluster
	err     error
}

// Main runs the binary's tests and then closes the cluster Start started, if any; it returns
// the exit code for os.Exit, 1 if closing failed. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(cephtest.Main(m)) }
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	c := shared.cluster
	shared.mu.Unlock()
	if c != nil {
		if err := c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "cephtest: stopping the cluster: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Start returns the test binary's cluster, launching it on the first call (Launch, in a new
// temporary directory; later calls wait for that and share the cluster or its failure). It
// skips t unless CSIKIT_SYSTEM=1 (testenv.System), skips it when the Ceph packages are
// missing (fails it under CI) and fails t if the cluster cannot start or TestMain does not
// call Main.
func Start(t testing.TB) *Cluster {
	t.Helper()
	testenv.System(t, "starts a one-node Ceph")
	if missing := MissingPackages(); len(missing) > 0 {
		testenv.Skip(t, "needs a one-node Ceph: install the Debian packages %v", missing)
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		t.Fatal("cephtest.Start: nothing would stop the cluster when the tests end: " +
			"call os.Exit(cephtest.Main(m)) from the package's TestMain")
	}
	if !shared.started {
		shared.started = true
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		shared.cluster, shared.err = Launch(ctx, "")
		cancel()
		if shared.err == nil {
			t.Logf("cephtest: one-node Ceph healthy in %v, in %s", time.Since(began).Round(100*time.Millisecond), shared.cluster.Dir)
		}
	}
	if shared.err != nil {
		t.Fatalf("cephtest: starting the cluster: %v", shared.err)
	}
	return shared.cluster
}
