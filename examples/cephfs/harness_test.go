package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/cephfs/cephfs"
	"github.com/csikit/csikit/internal/cephtest"
)

func TestMain(m *testing.M) { os.Exit(cephtest.Main(m)) }

// testUser is the cephx user the tests give the driver in its secrets: not client.admin, so
// the caps ceph-csi documents for its users are shown to be enough.
const testUser = "csikit-e2e"

// env is a running cluster and the secrets that let the driver act on it.
type env struct {
	c       *cephtest.Cluster
	secrets map[string]string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	c := cephtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := c.Ceph(ctx, "auth", "get-or-create-key", "client."+testUser,
		"mon", "allow r", "mgr", "allow rw", "mds", "allow rwp", "osd", "allow rw tag cephfs *=*")
	if err != nil {
		t.Fatalf("create the test user: %v", err)
	}
	key := strings.TrimSpace(string(out))
	return &env{c: c, secrets: map[string]string{cephfs.SecretUserID: testUser, cephfs.SecretUserKey: key}}
}

func (e *env) key() string { return e.secrets[cephfs.SecretUserKey] }

// config builds the driver for the cluster, with a Ceph timeout and a clone wait, logging at debug level into the returned observer.
func (e *env) config(t testing.TB, timeout, cloneWait time.Duration) (plugin.Config, *cephfs.Driver, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	logger := zap.New(core)
	cfg, d, err := config(cephfs.Config{Monitors: e.c.MonHost, FSName: e.c.CephFS.Name, NodeID: "node-1",
		DefaultSize: 1 << 30, Timeout: timeout, CloneWait: cloneWait, Logger: logger.Named("cephfs")}, "both")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	cfg.Logger = logger
	cfg.CheckResponses = true
	return cfg, d, logs
}

// dump returns everything logs holds, fields included, as one string.
func dump(logs *observer.ObservedLogs) string {
	var b strings.Builder
	for _, e := range logs.All() {
		fmt.Fprintf(&b, "%s %v\n", e.Message, e.ContextMap())
	}
	return b.String()
}

func mountCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	}
}

var _ = driver.ErrNotFound
