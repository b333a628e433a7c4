package drivertest

import (
	"regexp"
	"strings"

	"github.com/csikit/csikit/driver/drivertest/internal/csisuite"
)

// MountSpec is a spec that needs real mounts, with the reason it is skipped in the unprivileged
// profile.
type MountSpec struct {
	// Spec is the spec's full text as Ginkgo reports it (containers and leaf, space-separated).
	Spec string
	// Reason says what the spec mounts.
	Reason string
}

// A spec needs mounts when it needs NodeStageVolume or NodePublishVolume to succeed: for a driver
// that really mounts, success means a mount, and a mount needs root. Specs that call them only to
// check the answer to a bad argument mount nothing and run in every profile, as do all controller,
// identity and group controller specs. No csi-sanity v5.6.0 spec inspects the mount table itself;
// the one that looks at the filesystem ("should remove target path") only checks that the target
// exists after publishing and is gone after unpublishing.
const (
	reasonStagePublish = "stages and publishes a volume on this node, which mounts it for a real driver: needs root (privileged profile) or Options.NoMounts"
	reasonPublishTwice = "publishes a volume at two target paths on this node, which mounts it: needs root (privileged profile) or Options.NoMounts"
)

// Full texts of the csikit specs that stage and publish.
const (
	specConcurrentNode = "csikit " + string(CheckConcurrency) + " " + csisuite.ItConcurrentNode
	specRepeatNode     = "csikit " + string(CheckIdempotency) + " " + csisuite.ItRepeatNode
	specCanaryNode     = "csikit " + string(CheckSecretCanary) + " " + csisuite.ItCanaryNode
)

// groupText is the container text of a csikit spec group; skipReason matches on it.
func groupText(c Check) string { return csisuite.GroupText(string(c)) }

// mountSpecs is the one list of specs that need mounts: csi-sanity v5.6.0's and csikit's own.
var mountSpecs = []MountSpec{
	{"Node Service NodePublishVolume with single node multi writer capability should fail when volume with single node single writer access mode is already mounted at a different target path", reasonPublishTwice},
	{"Node Service NodeUnpublishVolume should remove target path", reasonStagePublish},
	{"Node Service NodeGetVolumeStats should fail when volume does not exist on the specified path", reasonStagePublish},
	{"Node Service NodeExpandVolume should work if node-expand is called after node-publish", reasonStagePublish},
	{"Node Service NodeGetVolumeHealth should return health for a valid volume", reasonStagePublish},
	{"Node Service should work", reasonStagePublish},
	{"Node Service should be idempotent", reasonStagePublish},
	{specConcurrentNode, reasonStagePublish},
	{specRepeatNode, reasonStagePublish},
	{specCanaryNode, reasonStagePublish},
}

// MountSpecs returns the specs that the unprivileged profile skips (unless Options.NoMounts is
// set), with the reason for each.
func MountSpecs() []MountSpec {
	return append([]MountSpec(nil), mountSpecs...)
}

// mountsAllowed reports whether specs that stage and publish may run.
func (r *run) mountsAllowed() bool { return r.opts.Privileged || r.opts.NoMounts }

// skipReason decides, by name only, whether a spec is skipped and why.
func (r *run) skipReason(spec string) (string, bool) {
	if !r.mountsAllowed() {
		for _, m := range mountSpecs {
			if m.Spec == spec {
				return "unprivileged profile: " + m.Reason, true
			}
		}
	}
	for check, reason := range r.opts.Disable {
		if strings.HasPrefix(spec, groupText(check)+" ") {
			return "csikit " + string(check) + " specs disabled: " + reason, true
		}
	}
	return "", false
}

// skipPatterns are the Ginkgo skip expressions for everything skipReason skips.
func (r *run) skipPatterns() []string {
	var out []string
	if !r.mountsAllowed() {
		for _, m := range mountSpecs {
			out = append(out, "^"+regexp.QuoteMeta(suiteDescription+" "+m.Spec)+"$")
		}
	}
	for check := range r.opts.Disable {
		out = append(out, "^"+regexp.QuoteMeta(suiteDescription+" "+groupText(check)+" "))
	}
	return out
}
