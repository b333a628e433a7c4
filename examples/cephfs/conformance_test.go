package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/examples/cephfs/cephfs"
)

// allSecrets sends the test user's secrets with every call that takes secrets, as a
// StorageClass naming the provisioner, node-stage, expand and snapshotter secrets does. None go
// with ControllerModifyVolume: Kubernetes' external-resizer sends none.
func (e *env) allSecrets() *sanity.CSISecrets {
	s := e.secrets
	return &sanity.CSISecrets{CreateVolumeSecret: s, DeleteVolumeSecret: s, ControllerValidateVolumeCapabilitiesSecret: s,
		NodeStageVolumeSecret: s, NodePublishVolumeSecret: s, CreateSnapshotSecret: s, DeleteSnapshotSecret: s,
		ControllerExpandVolumeSecret: s, ListSnapshotsSecret: s, GetSnapshotSecret: s}
}

// warmUp makes the one call a CO makes before any listing in practice (here a delete of a volume
// that does not exist), so that ListVolumes and GetCapacity, which carry no secrets, have an
// identity to act as. A driver that has seen none answers them UNAVAILABLE.
func warmUp(t *testing.T, d *cephfs.Driver, secrets map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := d.DeleteVolume(ctx, &driver.DeleteVolumeRequest{VolumeID: "warm-up", Secrets: secrets})
	if err != nil && !errors.Is(err, driver.ErrNotFound) { // NOT_FOUND answers OK through the plugin
		t.Fatalf("warm-up DeleteVolume: %v", err)
	}
}

// TestConformance runs drivertest's in-process csi-sanity v5.6.0 and csikit's own specs against
// the driver on the live cluster, privileged: every stage is a real ceph-fuse mount. The only
// skips allowed are for abilities the driver does not advertise; the secret canary searches the
// debug log for the key.
func TestConformance(t *testing.T) {
	e := newEnv(t)
	cfg, d, logs := e.config(t, time.Minute, time.Minute) // generous: the suite runs beside the whole tree's tests in CI
	warmUp(t, d, e.secrets)
	res := drivertest.CSI(t, cfg, drivertest.Options{
		Privileged:     true,
		TestVolumeSize: 64 << 20,
		Secrets:        e.allSecrets(),
		// The ModifyVolume specs run with the one mutable parameter (a VolumeAttributesClass).
		TestVolumeMutableParameters: map[string]string{cephfs.ParamMaxFiles: "1000"},
		Logs:                        func() string { return dump(logs) },
	})
	t.Logf("ran %d, passed %d, skipped %d, failed %d", res.Ran, res.Passed, res.Skipped, res.Failed)
	for name, reason := range res.Skips {
		if !notAdvertised(reason) {
			t.Errorf("skipped for another reason than an ability not advertised: %s: %s", name, reason)
		}
	}
	if res.Failed != 0 {
		t.Errorf("%d specs failed", res.Failed)
	}
}

// notAdvertised reports whether a skip reason is one drivertest gives for an ability the driver
// does not advertise (a capability, a service it does not serve) or for a spec csi-sanity
// disables itself.
func notAdvertised(reason string) bool {
	for _, s := range []string{" not supported", " not advertised", "does not have single node multi writer capability",
		"volumegroup.Controller not served", "disabled in csi-sanity itself"} {
		if strings.Contains(reason, s) {
			return true
		}
	}
	return false
}
