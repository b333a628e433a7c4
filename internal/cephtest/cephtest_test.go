package cephtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/csikit/csikit/internal/cephtest"
	"github.com/csikit/csikit/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(cephtest.Main(m)) }

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestSecretsNeverPrint decodes a cluster.json and formats it every way a test might log it:
// no key or secret may appear.
func TestSecretsNeverPrint(t *testing.T) {
	dir := t.TempDir()
	const adminKey, rgwSecret = "AQBadminkeyadminkeyadminkey==", "rgwsecretrgwsecretrgwsecret"
	doc := fmt.Sprintf(`{"version": 1, "dir": %q, "conf": "/c/ceph.conf", "fsid": "f",
		"admin": {"name": "client.admin", "key": %q, "keyring": "/c/k"},
		"rgw": {"endpoint": "http://127.0.0.1:1", "admin_user": "u", "access_key": "AK", "secret_key": %q}}`,
		dir, adminKey, rgwSecret)
	if err := os.WriteFile(filepath.Join(dir, "cluster.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := cephtest.ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(info.Admin.Key) != adminKey || string(info.RGW.SecretKey) != rgwSecret {
		t.Fatalf("decoded keys %q %q, want the file's", string(info.Admin.Key), string(info.RGW.SecretKey))
	}
	c := &cephtest.Cluster{Info: info}
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		for _, value := range []any{info, &info, c, info.Admin, info.RGW, info.Admin.Key} {
			out := fmt.Sprintf(format, value)
			if strings.Contains(out, adminKey) || strings.Contains(out, rgwSecret) {
				t.Errorf("fmt %s of %T shows a secret: %s", format, value, out)
			}
		}
	}
}

// TestReadInfoRejects feeds ReadInfo what it must refuse.
func TestReadInfoRejects(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"no file", "", "reading"},
		{"not JSON", "{", "decoding"},
		{"other version", `{"version": 2}`, "version 2"},
		{"no keys", `{"version": 1, "conf": "/c", "rgw": {"endpoint": "http://x"}}`, "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.doc != "" {
				if err := os.WriteFile(filepath.Join(dir, "cluster.json"), []byte(tc.doc), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := cephtest.ReadInfo(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadInfo: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestBringUp checks what ceph-up.sh promises of a new cluster: healthy, the files it writes
// (modes, and the env file agreeing with cluster.json), every daemon listening on 127.0.0.1
// only, within the cluster's block of ports.
func TestBringUp(t *testing.T) {
	c := cephtest.Start(t)
	ctx := testContext(t, 2*time.Minute)
	out, err := c.Ceph(ctx, "health")
	if err != nil || strings.TrimSpace(string(out)) != "HEALTH_OK" {
		t.Fatalf("ceph health: %q, %v", out, err)
	}
	out, err = c.Ceph(ctx, "fsid")
	if err != nil || strings.TrimSpace(string(out)) != c.FSID {
		t.Fatalf("ceph fsid: %q, %v; cluster.json says %s", out, err, c.FSID)
	}
	out, err = c.Ceph(ctx, "fs", "ls", "--format", "json")
	if err != nil || !strings.Contains(string(out), `"name":"`+c.CephFS.Name+`"`) ||
		!strings.Contains(string(out), c.CephFS.DataPool) {
		t.Fatalf("ceph fs ls: %s, %v; want %+v", out, err, c.CephFS)
	}

	mode := func(path string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if m := mode(c.Dir); m != 0o700 {
		t.Errorf("%s: mode %o, want 0700", c.Dir, m)
	}
	keyrings, err := filepath.Glob(filepath.Join(c.Dir, "keyring", "*.keyring"))
	if err != nil || len(keyrings) != 6 {
		t.Errorf("keyrings: %v, %v; want six (mon, mgr, osd, mds, rgw, admin)", keyrings, err)
	}
	for _, f := range append(keyrings, filepath.Join(c.Dir, "cluster.json"), filepath.Join(c.Dir, "cluster.env")) {
		if m := mode(f); m != 0o600 {
			t.Errorf("%s: mode %o, want 0600", f, m)
		}
	}
	keyring, err := os.ReadFile(c.Admin.Keyring)
	if err != nil || !strings.Contains(string(keyring), "key = "+string(c.Admin.Key)) {
		t.Errorf("%s does not hold cluster.json's admin key (%v)", c.Admin.Keyring, err)
	}

	env := readEnv(t, filepath.Join(c.Dir, "cluster.env"))
	for name, want := range map[string]string{
		"CEPH_CONF": c.Conf, "CEPH_FSID": c.FSID, "CEPH_MON_HOST": c.MonHost,
		"CEPH_ADMIN_NAME": c.Admin.Name, "CEPH_ADMIN_KEY": string(c.Admin.Key), "CEPH_KEYRING": c.Admin.Keyring,
		"CEPHFS_NAME": c.CephFS.Name, "CEPHFS_METADATA_POOL": c.CephFS.MetadataPool,
		"CEPHFS_DATA_POOL": c.CephFS.DataPool, "RGW_ENDPOINT": c.RGW.Endpoint,
		"RGW_ADMIN_USER": c.RGW.AdminUser, "RGW_ACCESS_KEY": c.RGW.AccessKey,
		"RGW_SECRET_KEY": string(c.RGW.SecretKey), "CEPHTEST_PORT_BASE": strconv.Itoa(c.PortBase),
	} {
		if env[name] != want {
			t.Errorf("cluster.env %s differs from cluster.json", name)
		}
	}

	if want := fmt.Sprintf("[v2:127.0.0.1:%d,v1:127.0.0.1:%d]", c.PortBase, c.PortBase+1); c.MonHost != want {
		t.Errorf("mon_host %s, want %s", c.MonHost, want)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d", c.PortBase+2); c.RGW.Endpoint != want {
		t.Errorf("RGW endpoint %s, want %s", c.RGW.Endpoint, want)
	}
	listening := map[string][]string{}
	for _, name := range c.Daemons {
		for _, addr := range listenAddrs(t, daemonPID(t, c, name)) {
			host, port, _ := net.SplitHostPort(addr)
			p, _ := strconv.Atoi(port)
			if host != "127.0.0.1" || p < c.PortBase || p >= c.PortBase+40 {
				t.Errorf("%s listens on %s, outside 127.0.0.1:%d-%d", name, addr, c.PortBase, c.PortBase+39)
			}
			listening[name] = append(listening[name], addr)
		}
	}
	for _, name := range c.Daemons {
		if len(listening[name]) == 0 {
			t.Errorf("%s listens nowhere", name)
		}
	}
	t.Logf("listening: %v", listening)
}

// TestS3WithAdminKeys speaks S3 and the admin ops API to RGW, signed with the admin user's
// keys, and checks that a wrong signature is refused.
func TestS3WithAdminKeys(t *testing.T) {
	c := cephtest.Start(t)
	ctx := testContext(t, time.Minute)
	body := []byte("hello from cephtest\n")
	steps := []struct {
		method, path string
		body         []byte
		want         int
	}{
		{http.MethodPut, "/cephtest-s3", nil, http.StatusOK},
		{http.MethodPut, "/cephtest-s3/hello.txt", body, http.StatusOK},
		{http.MethodGet, "/cephtest-s3/hello.txt", nil, http.StatusOK},
		{http.MethodGet, "/cephtest-s3?list-type=2", nil, http.StatusOK},
		{http.MethodDelete, "/cephtest-s3/hello.txt", nil, http.StatusNoContent},
		{http.MethodDelete, "/cephtest-s3", nil, http.StatusNoContent},
	}
	for _, step := range steps {
		status, got := s3Do(t, ctx, c, step.method, step.path, step.body, string(c.RGW.SecretKey))
		if status != step.want {
			t.Fatalf("%s %s: status %d, want %d: %s", step.method, step.path, status, step.want, got)
		}
		if step.method == http.MethodGet && strings.HasSuffix(step.path, "hello.txt") && !bytes.Equal(got, body) {
			t.Fatalf("GET %s: %q, want %q", step.path, got, body)
		}
		if strings.Contains(step.path, "list-type") && !strings.Contains(string(got), "<Key>hello.txt</Key>") {
			t.Fatalf("listing: %s, want hello.txt in it", got)
		}
	}

	// The admin ops API answers only a user with the caps ceph-up.sh gave.
	status, got := s3Do(t, ctx, c, http.MethodGet, "/admin/user?uid="+c.RGW.AdminUser, nil, string(c.RGW.SecretKey))
	if status != http.StatusOK {
		t.Fatalf("admin ops GET user: status %d: %s", status, got)
	}
	var user struct {
		UserID string `json:"user_id"`
		Caps   []struct{ Type, Perm string }
	}
	if err := json.Unmarshal(got, &user); err != nil {
		t.Fatalf("admin ops GET user: %v", err)
	}
	caps := map[string]string{}
	for _, c := range user.Caps {
		caps[c.Type] = c.Perm
	}
	if user.UserID != c.RGW.AdminUser || caps["users"] != "*" || caps["buckets"] != "*" {
		t.Fatalf("admin user %q caps %v, want %s with users=* and buckets=*", user.UserID, caps, c.RGW.AdminUser)
	}

	status, got = s3Do(t, ctx, c, http.MethodGet, "/", nil, string(c.RGW.SecretKey)+"x")
	if status != http.StatusForbidden || !strings.Contains(string(got), "SignatureDoesNotMatch") {
		t.Fatalf("a wrong secret: status %d: %s; want 403 SignatureDoesNotMatch", status, got)
	}
}

// TestSubvolume drives the mgr volumes module as ceph-csi does: create with a quota, getpath,
// resize, snapshot, clone (asynchronous: waits for it), remove.
func TestSubvolume(t *testing.T) {
	c := cephtest.Start(t)
	ctx := testContext(t, 2*time.Minute)
	fs := c.CephFS.Name
	ceph := func(args ...string) string {
		t.Helper()
		out, err := c.Ceph(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	ceph("fs", "subvolume", "create", fs, "sv-test", "--size", "1073741824")
	path := ceph("fs", "subvolume", "getpath", fs, "sv-test")
	if !strings.HasPrefix(path, "/volumes/_nogroup/sv-test/") {
		t.Fatalf("getpath: %q, want /volumes/_nogroup/sv-test/UUID", path)
	}
	ceph("fs", "subvolume", "resize", fs, "sv-test", "2147483648")
	var info struct {
		BytesQuota int64  `json:"bytes_quota"`
		Path       string `json:"path"`
	}
	if err := json.Unmarshal([]byte(ceph("fs", "subvolume", "info", fs, "sv-test", "--format", "json")), &info); err != nil {
		t.Fatal(err)
	}
	if info.BytesQuota != 2147483648 || info.Path != path {
		t.Fatalf("subvolume info: %+v, want quota 2147483648 at %s", info, path)
	}
	ceph("fs", "subvolume", "snapshot", "create", fs, "sv-test", "snap")
	ceph("fs", "subvolume", "snapshot", "clone", fs, "sv-test", "snap", "sv-clone")
	eventually(t, ctx, "the clone to complete", func() (bool, string) {
		var status struct {
			Status struct{ State string } `json:"status"`
		}
		out := ceph("fs", "clone", "status", fs, "sv-clone", "--format", "json")
		if err := json.Unmarshal([]byte(out), &status); err != nil {
			t.Fatalf("clone status %s: %v", out, err)
		}
		if status.Status.State == "failed" {
			t.Fatalf("clone failed: %s", out)
		}
		return status.Status.State == "complete", out
	})
	if p := ceph("fs", "subvolume", "getpath", fs, "sv-clone"); !strings.HasPrefix(p, "/volumes/_nogroup/sv-clone/") {
		t.Fatalf("clone getpath: %q", p)
	}
	ceph("fs", "subvolume", "rm", fs, "sv-clone")
	ceph("fs", "subvolume", "snapshot", "rm", fs, "sv-test", "snap")
	ceph("fs", "subvolume", "rm", fs, "sv-test")
	if out := ceph("fs", "subvolume", "ls", fs, "--format", "json"); strings.Contains(out, "sv-test") || strings.Contains(out, "sv-clone") {
		t.Fatalf("after rm: %s", out)
	}
}

// TestRestartKeepsData restarts the cluster and finds a subvolume and an object again, on the
// same ports and keys, served by new processes.
func TestRestartKeepsData(t *testing.T) {
	c := cephtest.Start(t)
	ctx := testContext(t, 3*time.Minute)
	if _, err := c.Ceph(ctx, "fs", "subvolume", "create", c.CephFS.Name, "sv-kept"); err != nil {
		t.Fatal(err)
	}
	path, err := c.Ceph(ctx, "fs", "subvolume", "getpath", c.CephFS.Name, "sv-kept")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("kept across a restart\n")
	for _, step := range []struct {
		method, path string
		body         []byte
	}{{http.MethodPut, "/cephtest-kept", nil}, {http.MethodPut, "/cephtest-kept/object", body}} {
		if status, got := s3Do(t, ctx, c, step.method, step.path, step.body, string(c.RGW.SecretKey)); status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", step.method, step.path, status, got)
		}
	}
	before, err := os.ReadFile(filepath.Join(c.Dir, "cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for _, name := range c.Daemons {
		pids[name] = daemonPID(t, c, name)
	}

	began := time.Now()
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart (stop + start + healthy) took %v", time.Since(began).Round(100*time.Millisecond))

	after, err := os.ReadFile(filepath.Join(c.Dir, "cluster.json"))
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("cluster.json changed across the restart (%v): ports or keys moved", err)
	}
	for _, name := range c.Daemons {
		if pid := daemonPID(t, c, name); pid == pids[name] {
			t.Errorf("%s still pid %d: not restarted", name, pid)
		}
	}
	again, err := c.Ceph(ctx, "fs", "subvolume", "getpath", c.CephFS.Name, "sv-kept")
	if err != nil || !bytes.Equal(again, path) {
		t.Errorf("subvolume after the restart: %q, %v; want %q", again, err, path)
	}
	if status, got := s3Do(t, ctx, c, http.MethodGet, "/cephtest-kept/object", nil, string(c.RGW.SecretKey)); status != http.StatusOK || !bytes.Equal(got, body) {
		t.Errorf("object after the restart: %d %q, want %q", status, got, body)
	}
}

// TestStopAndStartDaemons is the pair the examples' fault tests use: with RGW stopped its port
// refuses and the rest answers; with everything stopped nothing of the cluster runs, and the
// mon's and RGW's ports refuse (a client fails at once rather than waiting); StartDaemons
// brings it back to health.
func TestStopAndStartDaemons(t *testing.T) {
	c := cephtest.Start(t)
	ctx := testContext(t, 3*time.Minute)
	rgwAddr := strings.TrimPrefix(c.RGW.Endpoint, "http://")
	monAddr := fmt.Sprintf("127.0.0.1:%d", c.PortBase)

	t.Run("RGW only", func(t *testing.T) {
		if err := c.StopDaemons(ctx, cephtest.RGWDaemon); err != nil {
			t.Fatal(err)
		}
		if conn, err := net.Dial("tcp", rgwAddr); err == nil {
			conn.Close()
			t.Fatalf("RGW's port %s still accepts with RGW stopped", rgwAddr)
		}
		if out, err := c.Ceph(ctx, "fs", "subvolume", "ls", c.CephFS.Name); err != nil {
			t.Fatalf("the rest of the cluster stopped answering with RGW stopped: %s %v", out, err)
		}
		if err := c.StartDaemons(ctx); err != nil {
			t.Fatal(err)
		}
		if status, got := s3Do(t, ctx, c, http.MethodGet, "/", nil, string(c.RGW.SecretKey)); status != http.StatusOK {
			t.Fatalf("RGW after StartDaemons: %d %s", status, got)
		}
	})

	t.Run("everything", func(t *testing.T) {
		began := time.Now()
		if err := c.StopDaemons(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("stop took %v", time.Since(began).Round(100*time.Millisecond))
		if procs := processesMentioning(t, c.Dir); len(procs) > 0 {
			t.Fatalf("still running after StopDaemons: %v", procs)
		}
		for _, addr := range []string{rgwAddr, monAddr, fmt.Sprintf("127.0.0.1:%d", c.PortBase+1)} {
			if conn, err := net.Dial("tcp", addr); err == nil {
				conn.Close()
				t.Fatalf("%s still accepts with every daemon stopped", addr)
			}
		}
		began = time.Now()
		if err := c.StartDaemons(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("start took %v", time.Since(began).Round(100*time.Millisecond))
		if out, err := c.Ceph(ctx, "health"); err != nil || strings.TrimSpace(string(out)) != "HEALTH_OK" {
			t.Fatalf("after StartDaemons: %q %v", out, err)
		}
	})
}

// TestStopFollowsRespawns: a Ceph daemon respawns by exec'ing itself (the MDS when it finds
// itself blocklisted, which its own shutdown on SIGTERM can provoke; the mgr on a failover). The
// pid ceph-down.sh stops must stay the daemon's across a respawn: when the daemons forked into
// the background, the respawned image forked a new daemon and the pid in the pid file exited,
// and ceph-down.sh, taking that exit for the daemon's, left a ceph-mds running. After
// a respawn, and with a stop landing in the middle of one, the pid file still names the one
// process of the daemon, and the stop leaves no process of it, without the safety net of
// ceph-down.sh (its "stray process" line) having to act.
func TestStopFollowsRespawns(t *testing.T) {
	c := cephtest.Start(t)
	ctx := testContext(t, 10*time.Minute)
	asok := filepath.Join(c.Dir, "run", cephtest.MDS+".asok")
	mdsAdmin := func(ctx context.Context, command string) ([]byte, error) {
		return exec.CommandContext(ctx, "ceph", "--admin-daemon", asok, command).Output()
	}
	// Each probe gets a bound of its own: a daemon that crashed in its signal handler can keep
	// its admin socket open and answer nothing, and one hung probe must not use up the test.
	probe := func(f func(ctx context.Context) (bool, string)) func() (bool, string) {
		return func() (bool, string) {
			ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			return f(ctx)
		}
	}
	mdsActive := probe(func(ctx context.Context) (bool, string) {
		out, err := mdsAdmin(ctx, "status")
		var status struct{ State string }
		if err != nil || json.Unmarshal(out, &status) != nil {
			return false, fmt.Sprintf("%s %v", out, err)
		}
		return status.State == "up:active", status.State
	})
	mgrAvailable := probe(func(ctx context.Context) (bool, string) {
		out, err := c.Ceph(ctx, "mgr", "stat", "--format", "json")
		var stat struct{ Available bool }
		if err != nil || json.Unmarshal(out, &stat) != nil {
			return false, fmt.Sprintf("%s %v", out, err)
		}
		return stat.Available, string(out)
	})
	downLog := filepath.Join(c.Dir, "log", "cephtest.log")
	downLogStart := fileSize(t, downLog)
	t.Cleanup(func() {
		if got := readFrom(t, downLog, downLogStart); strings.Contains(got, "stray process") {
			t.Errorf("ceph-down.sh found daemons its pid files did not lead to:\n%s", got)
		}
	})

	for _, tc := range []struct {
		daemon, program string
		respawn         func() error
		back            func() (bool, string)
	}{
		{cephtest.MDS, "ceph-mds", func() error {
			out, err := mdsAdmin(ctx, "respawn")
			if err != nil {
				return fmt.Errorf("ceph daemon %s respawn: %w: %s", cephtest.MDS, err, out)
			}
			return nil
		}, mdsActive},
		{cephtest.Mgr, "ceph-mgr", func() error {
			_, err := c.Ceph(ctx, "mgr", "fail", strings.TrimPrefix(cephtest.Mgr, "mgr."))
			return err
		}, mgrAvailable},
	} {
		t.Run(tc.daemon+" respawn keeps its pid", func(t *testing.T) {
			logFile := filepath.Join(c.Dir, "log", tc.daemon+".log")
			var pid int
			// Ceph 16.2's respawned image can crash while it starts (a segfault in
			// ProtocolV2::handle_auth_request, "Caught signal" in its log; its admin socket can
			// then hang), or die before its signal handlers log anything. That is Ceph's fault,
			// not the pid handling under test, so the respawn is tried again on a fresh daemon.
			for attempt := 1; ; attempt++ {
				pid = daemonPID(t, c, tc.daemon)
				start := fileSize(t, logFile)
				if err := tc.respawn(); err != nil {
					t.Fatal(err)
				}
				// A starting image logs "process PROGRAM, pid PID": the respawned one does first.
				eventually(t, ctx, tc.daemon+" to respawn", func() (bool, string) {
					return strings.Contains(readFrom(t, logFile, start), "process "+tc.program+", pid "), ""
				})
				crashed := false
				eventually(t, ctx, tc.daemon+" to serve again", func() (bool, string) {
					if strings.Contains(readFrom(t, logFile, start), "Caught signal") || !running(pid) {
						crashed = true
						return true, ""
					}
					return tc.back()
				})
				if !crashed {
					break
				}
				if attempt == 3 {
					t.Fatalf("the respawned %s crashed %d times in a row; its log:\n%s", tc.daemon, attempt, readFrom(t, logFile, start))
				}
				t.Logf("the respawned %s crashed (attempt %d; Ceph's own fault): starting it again to retry", tc.daemon, attempt)
				if err := c.StopDaemons(ctx, tc.daemon); err != nil {
					t.Fatal(err)
				}
				if err := c.StartDaemons(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got := daemonPID(t, c, tc.daemon); got != pid {
				t.Errorf("after a respawn the pid file names %d, not %d: ceph-down.sh would wait for the wrong process", got, pid)
			}
			if procs := programProcesses(t, c, tc.program); len(procs) != 1 || procs[0] != pid {
				t.Errorf("%s processes of the cluster after a respawn: %v, want only %d:\n%s", tc.program, procs, pid, describeProcesses(procs))
			}
		})
	}

	t.Run("stop in the middle of an MDS respawn", func(t *testing.T) {
		if ok, state := mdsActive(); !ok {
			t.Fatalf("the MDS is not active before the test: %s", state)
		}
		out, err := mdsAdmin(ctx, "respawn")
		if err != nil {
			t.Fatalf("ceph daemon %s respawn: %v: %s", cephtest.MDS, err, out)
		}
		if err := c.StopDaemons(ctx, cephtest.MDS); err != nil {
			t.Fatal(err)
		}
		if procs := programProcesses(t, c, "ceph-mds"); len(procs) > 0 {
			t.Errorf("ceph-mds still running after StopDaemons:\n%s", describeProcesses(procs))
		}
		if err := c.StartDaemons(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("stop everything", func(t *testing.T) {
		if err := c.StopDaemons(ctx); err != nil {
			t.Fatal(err)
		}
		if procs := processesMentioning(t, c.Conf); len(procs) > 0 {
			t.Errorf("still naming %s after StopDaemons:\n%s", c.Conf, describeProcesses(procs))
		}
		if err := c.StartDaemons(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// programProcesses returns the live processes of the cluster running program: program's name
// as the kernel's and the cluster's ceph.conf as an argument.
func programProcesses(t *testing.T, c *cephtest.Cluster, program string) []int {
	t.Helper()
	var pids []int
	for _, pid := range processesMentioning(t, c.Conf) {
		if processName(pid) == program {
			pids = append(pids, pid)
		}
	}
	return pids
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// readFrom returns what path holds past offset.
func readFrom(t *testing.T, path string, offset int64) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if offset > int64(len(data)) {
		return ""
	}
	return string(data[offset:])
}

// TestStopUnmountsCephFuse mounts a subvolume with ceph-fuse under the cluster's directory,
// stops every daemon (which must unmount it and wait for ceph-fuse to exit), starts them again,
// and reads the file back through a new mount.
func TestStopUnmountsCephFuse(t *testing.T) {
	testenv.System(t, "starts a one-node Ceph")
	testenv.Root(t, "ceph-fuse mounts")
	fuse := testenv.Tool(t, "ceph-fuse", "ceph-fuse")
	c := cephtest.Start(t)
	ctx := testContext(t, 3*time.Minute)
	if _, err := c.Ceph(ctx, "fs", "subvolume", "create", c.CephFS.Name, "sv-fuse"); err != nil {
		t.Fatal(err)
	}
	out, err := c.Ceph(ctx, "fs", "subvolume", "getpath", c.CephFS.Name, "sv-fuse")
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSpace(string(out))
	mnt := filepath.Join(c.Dir, "mnt", "fuse")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	// mount returns the ceph-fuse processes serving mnt: ceph-fuse processes whose parent is
	// not one. At start-up ceph-fuse forks "sh -c mount -i -o remount MNT" to test dentry
	// invalidation, so for a moment a child of ceph-fuse (named ceph-fuse until it execs) and
	// then sh and mount name the mount point too; under load CI saw them still running.
	mount := func() []int {
		t.Helper()
		cmd := exec.CommandContext(ctx, fuse, "--conf", c.Conf, "--id", "admin", "-r", root, mnt)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ceph-fuse: %v: %s", err, out)
		}
		var pids []int
		for _, pid := range processesMentioning(t, mnt) {
			if processName(pid) == "ceph-fuse" && processName(parentOf(pid)) != "ceph-fuse" {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 || !isMounted(t, mnt) {
			t.Fatalf("after ceph-fuse: mounted %v, ceph-fuse processes %v; every process naming %s:\n%s",
				isMounted(t, mnt), pids, mnt, describeProcesses(processesMentioning(t, mnt)))
		}
		return pids
	}
	t.Cleanup(func() {
		// Only if the test failed between a mount and the stop: Main's Close would unmount it.
		if isMounted(t, mnt) {
			_ = exec.Command("umount", mnt).Run()
		}
	})

	pids := mount()
	data := []byte("written through ceph-fuse\n")
	if err := os.WriteFile(filepath.Join(mnt, "file"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.StopDaemons(ctx); err != nil {
		t.Fatal(err)
	}
	if isMounted(t, mnt) {
		t.Fatalf("%s still mounted after StopDaemons", mnt)
	}
	for _, pid := range pids {
		if running(pid) {
			t.Fatalf("ceph-fuse (pid %d) still running after StopDaemons:\n%s", pid, describeProcesses(pids))
		}
	}
	if err := c.StartDaemons(ctx); err != nil {
		t.Fatal(err)
	}
	mount()
	got, err := os.ReadFile(filepath.Join(mnt, "file"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after the restart: %q, %v; want %q", got, err, data)
	}
	if err := exec.Command("umount", mnt).Run(); err != nil {
		t.Fatalf("umount %s: %v", mnt, err)
	}
	eventually(t, ctx, "ceph-fuse to exit after umount", func() (bool, string) {
		procs := processesMentioning(t, mnt)
		return len(procs) == 0, fmt.Sprint(procs)
	})
}

// TestLaunchCancelledLeavesNothing cancels a bring-up in two of its phases: Launch must fail
// saying it was interrupted, and no daemon, watcher or cluster directory may remain. A phase
// is recognised by what the script does, not by a time, so each case cancels where it says
// on a loaded machine too. By a health check the daemons' logs are long: their tails outgrow
// the end of stderr that Launch's error keeps, so the reason must come last too.
func TestLaunchCancelledLeavesNothing(t *testing.T) {
	testenv.System(t, "starts a one-node Ceph")
	if missing := cephtest.MissingPackages(); len(missing) > 0 {
		testenv.Skip(t, "needs the Debian packages %v", missing)
	}
	for _, tc := range []struct {
		name string
		// ready says, given the cluster directory, that the phase has come: the test cancels.
		ready func(dir string) bool
	}{
		{"while the daemons start", func(dir string) bool {
			// The mon runs; the mgr, MDS and RGW are being started.
			_, err := os.Stat(filepath.Join(dir, "run", "mon.a.pid"))
			return err == nil
		}},
		{"during a health check", func(dir string) bool {
			// `ceph status` runs inside the function the script polls with its output
			// discarded, where a trap inherits that redirection.
			return runningWithArgs(filepath.Join(dir, "ceph.conf"), "status")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cluster")
			ctx, cancel := context.WithCancel(testContext(t, 5*time.Minute))
			defer cancel()
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				cancelWhen(ctx, func() bool { return tc.ready(dir) }, cancel)
			}()
			c, err := cephtest.Launch(ctx, dir)
			cancel()
			<-watched
			if err == nil {
				c.Close()
				t.Fatal("Launch succeeded: the cluster was healthy before the phase to cancel in came")
			}
			if !strings.Contains(err.Error(), "interrupted") {
				t.Errorf("Launch: %v; want the script to say it was interrupted", err)
			}
			if procs := processesMentioning(t, dir); len(procs) > 0 {
				t.Errorf("still running after a cancelled Launch: %v", procs)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s remains after a cancelled Launch (%v)", dir, err)
			}
		})
	}
}

// TestCtrlCTwiceStillStopsEverything interrupts ceph-up.sh the way an impatient user at a
// terminal does: SIGINT to its whole process group, twice. The second must not cut the
// cleanup short: the script says it was interrupted once, stops every daemon and keeps the
// directory for a look.
func TestCtrlCTwiceStillStopsEverything(t *testing.T) {
	testenv.System(t, "starts a one-node Ceph")
	if missing := cephtest.MissingPackages(); len(missing) > 0 {
		testenv.Skip(t, "needs the Debian packages %v", missing)
	}
	dir := filepath.Join(t.TempDir(), "cluster")
	ctx := testContext(t, 5*time.Minute)
	cmd := exec.CommandContext(ctx, "bash", "ceph-up.sh", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(dir, "bin", "ceph-down.sh")); err == nil {
			_ = exec.Command("bash", filepath.Join(dir, "bin", "ceph-down.sh"), "--purge", dir).Run()
		}
	})
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	running, exited := context.WithCancel(ctx)
	defer exited()
	interrupt := func() {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
			t.Errorf("SIGINT to the process group: %v", err)
		}
	}
	stopper, err := filepath.Abs("ceph-down.sh")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		// The first while the daemons start, the second while the script is stopping them.
		pidFile := filepath.Join(dir, "run", "mgr.x.pid")
		cancelWhen(running, func() bool { _, err := os.Stat(pidFile); return err == nil }, interrupt)
		cancelWhen(running, func() bool { return runningWithArgs(stopper, dir) }, interrupt)
	}()
	err = <-waited
	exited()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("ceph-up.sh: %v, want exit status 1\n%s", err, &stderr)
	}
	out := stderr.String()
	if n := strings.Count(out, "ceph-up.sh: interrupted"); n != 1 {
		t.Errorf("the script said it was interrupted %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "failed (interrupted); logs and data kept in "+dir) {
		t.Errorf("no word of the kept directory:\n%s", out)
	}
	if procs := processesMentioning(t, dir); len(procs) > 0 {
		t.Errorf("still running after the interrupt:\n%s", describeProcesses(procs))
	}
}

// cancelWhen calls cancel as soon as ready says so, or returns when ctx is done.
func cancelWhen(ctx context.Context, ready func() bool, cancel context.CancelFunc) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready() {
			cancel()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// childEnv makes the test binary, run again by TestOwnerExitLeavesNothing, start a cluster,
// print its directory and port base, then either return (Main closes the cluster) or wait to
// be killed (the watcher must clean up).
const childEnv = "CEPHTEST_CHILD_MODE"

func TestChildCluster(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("runs only as TestOwnerExitLeavesNothing's child process")
	}
	c := cephtest.Start(t)
	fmt.Printf("CHILD %s %d\n", c.Dir, c.PortBase)
	if mode == "hang" {
		_, _ = io.Copy(io.Discard, os.Stdin) // until killed
	}
}

// TestOwnerExitLeavesNothing runs two more test binaries, side by side with this one's cluster,
// each starting a cluster of its own (three clusters at once: their ports must differ). One
// ends normally and Main must stop its cluster; the other is killed with SIGKILL and the
// watcher must. Either way no process, directory or port claim may remain.
func TestOwnerExitLeavesNothing(t *testing.T) {
	parent := cephtest.Start(t)
	bases := make(chan int, 2)
	t.Cleanup(func() {
		close(bases)
		seen := map[int]bool{parent.PortBase: true}
		for b := range bases {
			if seen[b] {
				t.Errorf("two clusters on port base %d", b)
			}
			seen[b] = true
		}
	})
	for _, mode := range []string{"return", "hang"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 5*time.Minute)
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestChildCluster$", "-test.v")
			cmd.Env = append(os.Environ(), childEnv+"="+mode)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var dir string
			var base int
			var transcript strings.Builder
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				transcript.WriteString(sc.Text() + "\n")
				if _, err := fmt.Sscanf(sc.Text(), "CHILD %s %d", &dir, &base); err == nil {
					break
				}
			}
			if dir == "" {
				_ = cmd.Wait()
				t.Fatalf("the child started no cluster:\n%s%s", transcript.String(), stderr.String())
			}
			bases <- base
			if mode == "hang" {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
			} else {
				_, _ = io.Copy(&transcript, stdout)
				if err := cmd.Wait(); err != nil {
					t.Fatalf("child: %v\n%s%s", err, transcript.String(), stderr.String())
				}
			}
			eventually(t, ctx, "the cluster's directory and processes to go", func() (bool, string) {
				_, err := os.Stat(dir)
				procs := processesMentioning(t, dir)
				return errors.Is(err, os.ErrNotExist) && len(procs) == 0, fmt.Sprintf("stat: %v, processes %v", err, procs)
			})
			claim := fmt.Sprintf("/tmp/cephtest-ports-%d/%d", os.Getuid(), base)
			if _, err := os.Stat(claim); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("port claim %s remains (%v)", claim, err)
			}
		})
	}
}

// TestOwnerDiesDuringBringUp: the owner of a cluster dies while ceph-up.sh is still starting
// it, as a test binary does at its timeout. The watcher must stop the bring-up and every daemon
// it had started, and remove the directory, as it does for an owner that dies later.
func TestOwnerDiesDuringBringUp(t *testing.T) {
	testenv.System(t, "starts a one-node Ceph")
	if missing := cephtest.MissingPackages(); len(missing) > 0 {
		testenv.Skip(t, "needs the Debian packages %v", missing)
	}
	dir := filepath.Join(t.TempDir(), "cluster")
	ctx := testContext(t, 5*time.Minute)
	// The owner stands for the test binary: a process that dies when the test says.
	owner := exec.CommandContext(ctx, "sleep", "infinity")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	ownerDone := make(chan struct{})
	go func() { defer close(ownerDone); _ = owner.Wait() }()
	up := exec.CommandContext(ctx, "bash", "ceph-up.sh", "--owner", strconv.Itoa(owner.Process.Pid), dir)
	var stderr bytes.Buffer
	up.Stderr = &stderr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	upDone := make(chan struct{})
	go func() { defer close(upDone); _ = up.Wait() }()
	// The owner dies once the daemons are starting: the mon runs and the mgr has started.
	cancelWhen(ctx, func() bool { _, err := os.Stat(filepath.Join(dir, "run", "mgr.x.pid")); return err == nil }, func() {
		if err := owner.Process.Kill(); err != nil {
			t.Errorf("killing the owner: %v", err)
		}
	})
	<-ownerDone
	<-upDone
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ceph-up.sh's stderr:\n%s", &stderr)
		}
	})
	eventually(t, ctx, "the watcher to stop the bring-up and every daemon, and remove the directory", func() (bool, string) {
		_, err := os.Stat(dir)
		procs := processesMentioning(t, dir)
		return errors.Is(err, os.ErrNotExist) && len(procs) == 0, fmt.Sprintf("stat: %v, processes:\n%s", err, describeProcesses(procs))
	})
}

// s3Do sends a SigV4-signed request to RGW and returns the status and body.
func s3Do(t *testing.T, ctx context.Context, c *cephtest.Cluster, method, path string, body []byte, secret string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, c.RGW.Endpoint+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	signV4(req, body, c.RGW.AccessKey, secret, "us-east-1", time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return resp.StatusCode, got
}

// eventually polls cond until it holds: for what the tests wait on outside this process (a
// clone in the mgr, a watcher's cleanup) there is no event to wait for.
func eventually(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last: %s", what, ctx.Err(), state)
		case <-tick.C:
		}
	}
}

// readEnv parses cluster.env: NAME=VALUE lines, VALUE as Python's shlex.quote writes it.
func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(value, "'") {
			value = strings.ReplaceAll(strings.Trim(value, "'"), `'"'"'`, "'")
		}
		env[name] = value
	}
	return env
}

func daemonPID(t *testing.T, c *cephtest.Cluster, name string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.Dir, "run", name+".pid"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("%s: pid file: %v", name, err)
	}
	return pid
}

// listenAddrs returns the TCP addresses (IPv4 and IPv6) the process listens on: its socket
// inodes matched against /proc/net/tcp{,6} in state LISTEN.
func listenAddrs(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			addrs = append(addrs, decodeProcAddr(t, f[1]))
		}
	}
	return addrs
}

// decodeProcAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080" (IPv6 addresses
// come back in the kernel's hex, never equal to 127.0.0.1, which is all the tests compare).
func decodeProcAddr(t *testing.T, s string) string {
	t.Helper()
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	host := hexIP
	if len(hexIP) == 8 {
		ip, err := strconv.ParseUint(hexIP, 16, 32)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		host = net.IPv4(byte(ip), byte(ip>>8), byte(ip>>16), byte(ip>>24)).String()
	}
	return net.JoinHostPort(host, strconv.FormatUint(port, 10))
}

// processesMentioning returns the live processes (zombies left out) with the path s in their
// command line, as an argument or the start of one (s + "/..."), this test binary excepted.
func processesMentioning(t *testing.T, s string) []int {
	t.Helper()
	pids, err := processesWhere(func(cmdline []byte) bool {
		return bytes.Contains(cmdline, []byte(s+"/")) || bytes.Contains(cmdline, []byte(s+"\x00"))
	})
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// processesWhere lists the live processes (not this one, no zombies) whose NUL-separated
// command line satisfies match.
func processesWhere(match func(cmdline []byte) bool) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || isZombie(pid) || !match(cmdline) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// runningWithArgs reports whether a live process has every one of args among its arguments.
func runningWithArgs(args ...string) bool {
	pids, _ := processesWhere(func(cmdline []byte) bool {
		argv := strings.Split(string(cmdline), "\x00")
		for _, a := range args {
			if !slices.Contains(argv, a) {
				return false
			}
		}
		return true
	})
	return len(pids) > 0
}

// processName is the kernel's name of pid (its comm), "" if it is gone.
// running says whether pid is a live process. A daemon's pid stays its own across a respawn,
// which execs in place.
func running(pid int) bool {
	return syscall.Kill(pid, 0) == nil && !isZombie(pid)
}

func processName(pid int) string {
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(comm))
}

// parentOf is pid's parent, 0 if pid is gone.
func parentOf(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// After "pid (comm) ", the state and then the parent's pid.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// describeProcesses is one line per live pid: its parent, name and command line, for a
// failure message that says what ran.
func describeProcesses(pids []int) string {
	var b strings.Builder
	for _, pid := range pids {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		fmt.Fprintf(&b, "  pid %d stat %.80s cmdline %q\n", pid, stat, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	return b.String()
}

func isZombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone
	}
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	f := strings.Fields(string(rest))
	return len(f) > 0 && f[0] == "Z"
}

func isMounted(t *testing.T, path string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}
