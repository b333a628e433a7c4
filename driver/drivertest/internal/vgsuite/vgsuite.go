// Package vgsuite holds csikit's volume-group specs, run inside the CSI suite.
//
// They build on csisuite's fixture and registration. drivertest owns the public
// VolumeGroupOptions; Options here has exactly its fields, so drivertest converts one into the
// other, and a field added to one side only fails to compile there.
package vgsuite

import (
	"context"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"

	"github.com/csikit/csikit/driver/drivertest/internal/csisuite"
)

// Options are drivertest.VolumeGroupOptions, field for field; see there for what each one means.
type Options struct {
	Parameters                   map[string]string
	IncompatibleParameters       map[string]string
	Secrets                      map[string]string
	MaxMembers                   int
	ExclusiveMembership          bool
	IncompatibleVolumeParameters map[string]string
	PublishedMemberInUse         bool
	JoinParameter                string
	SnapshotParameter            string
}

// The leaf texts of the volume-group specs.
const (
	itVGLifecycle    = "a volume group is created empty, read back, given exactly the listed members, emptied, listed, and deleted with its volumes"
	itVGIdempotent   = "a repeated CreateVolumeGroup or ModifyVolumeGroupMembership gets the same answer, other parameters under the same name are ALREADY_EXISTS, a repeated delete succeeds"
	itVGMissing      = "DeleteVolumeGroup of a missing group succeeds; ControllerGetVolumeGroup and ModifyVolumeGroupMembership of a missing group, or naming a missing volume, are NOT_FOUND and change nothing"
	itVGIncompatible = "ModifyVolumeGroupMembership adding an incompatible volume is INVALID_ARGUMENT and changes nothing"
	itVGLimit        = "ModifyVolumeGroupMembership past the member limit is RESOURCE_EXHAUSTED and changes nothing"
	itVGInUse        = "DeleteVolumeGroup of a group with a published member is FAILED_PRECONDITION and deletes nothing"
	itVGMemberDelete = "a member volume cannot be deleted alone (FAILED_PRECONDITION) until it leaves the group"
	itVGPages        = "ListVolumeGroups returns every group exactly once across pages of 1, 3 and 7 entries; an invalid starting_token is ABORTED"
	itVGConcurrent   = "concurrent ModifyVolumeGroupMembership calls on one group each succeed or are ABORTED, identical ones answer identically, and the group ends as one of them asked"
	itVGJoin         = "CreateVolume with the join parameter makes the volume a member of the group"
	itVGSnapshot     = "a group snapshot of a volume group's members is created through the snapshot parameter; a partial set of members is INVALID_ARGUMENT"

	itCanaryVolumeGroups = "no secret sent with any volume-group call appears in a response, an error or a log line"
)

// vgGroups is how many groups the pagination spec creates.
const vgGroups = 25

// register registers a spec group whose specs need the volume-group service; opts gives the
// options of the active run.
func register(active csisuite.Active, group string, opts func() Options, body func(sc *sanity.TestContext, v *vgFixture)) bool {
	return csisuite.Register(active, group, func(sc *sanity.TestContext, f *csisuite.Fixture) {
		v := &vgFixture{Fixture: f}
		BeforeEach(func() { v.setup(sc.ControllerConn, opts()) })
		body(sc, v)
	})
}

// DescribeSpecs adds the volume-group specs to the suite, as the group named group.
func DescribeSpecs(active csisuite.Active, group string, opts func() Options) {
	register(active, group, opts, func(sc *sanity.TestContext, v *vgFixture) {
		ctx := context.Background()

		It(itVGLifecycle, func() { vgLifecycleSpec(ctx, sc, v) })
		It(itVGIdempotent, func() { vgIdempotentSpec(ctx, sc, v) })
		It(itVGMissing, func() { vgMissingSpec(ctx, sc, v) })
		It(itVGIncompatible, func() { vgIncompatibleSpec(ctx, sc, v) })
		It(itVGLimit, func() { vgLimitSpec(ctx, sc, v) })
		It(itVGInUse, func() { vgInUseSpec(ctx, sc, v) })
		It(itVGMemberDelete, func() { vgMemberDeleteSpec(ctx, sc, v) })
		It(itVGPages, func() { vgPagesSpec(ctx, sc, v) })
		It(itVGConcurrent, func() { vgConcurrentSpec(ctx, sc, v) })
		It(itVGJoin, func() { vgJoinSpec(ctx, sc, v) })
		It(itVGSnapshot, func() { vgSnapshotSpec(ctx, sc, v) })
	})
}
