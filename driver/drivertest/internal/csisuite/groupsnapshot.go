package csisuite

import (
	"context"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// DescribeGroupSnapshot adds the group-snapshot lifecycle specs to the suite.
func DescribeGroupSnapshot(active Active, group string) {
	Register(active, group, func(sc *sanity.TestContext, f *Fixture) {
		ctx := context.Background()

		It(ItGroupLifecycle, func() { groupLifecycleSpec(ctx, sc, f) })
	})
}

// groupLifecycleSpec is the spec named by ItGroupLifecycle.
func groupLifecycleSpec(ctx context.Context, sc *sanity.TestContext, f *Fixture) {
	if !f.Caps.Group {
		Skip("GROUP_CONTROLLER_SERVICE with CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT not advertised")
	}
	a, b := f.MustCreateVolume("csikit-group-a").GetVolumeId(), f.MustCreateVolume("csikit-group-b").GetVolumeId()
	req := &csi.CreateVolumeGroupSnapshotRequest{
		Name:            sanity.UniqueString("csikit-group"),
		SourceVolumeIds: []string{a, b},
		Parameters:      sc.Config.TestSnapshotParameters,
		Secrets:         sc.Secrets.CreateSnapshotSecret,
	}
	By("creating a group snapshot of two volumes")
	created, err := f.Group.CreateVolumeGroupSnapshot(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "CreateVolumeGroupSnapshot")
	g := created.GetGroupSnapshot()
	Expect(g.GetGroupSnapshotId()).NotTo(BeEmpty(), "group_snapshot_id")
	ids := groupMemberIDs(g)
	deleteReq := &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids, Secrets: sc.Secrets.DeleteSnapshotSecret}
	deleted := false
	f.OnEnd(func() {
		if !deleted {
			_, _ = f.Group.DeleteVolumeGroupSnapshot(ctx, deleteReq)
		}
	})
	Expect(g.GetCreationTime()).NotTo(BeNil(), "creation_time")
	Expect(g.GetSnapshots()).To(HaveLen(2), "one member snapshot per source volume")
	var sources []string
	for _, s := range g.GetSnapshots() {
		Expect(s.GetSnapshotId()).NotTo(BeEmpty(), "member snapshot_id")
		Expect(s.GetGroupSnapshotId()).To(Equal(g.GetGroupSnapshotId()), "member %s group_snapshot_id", s.GetSnapshotId())
		Expect(s.GetCreationTime()).NotTo(BeNil(), "member %s creation_time", s.GetSnapshotId())
		sources = append(sources, s.GetSourceVolumeId())
	}
	Expect(sources).To(ConsistOf(a, b), "member source_volume_ids")

	By("creating it again with the same name")
	again, err := f.Group.CreateVolumeGroupSnapshot(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "repeated CreateVolumeGroupSnapshot")
	Expect(again.GetGroupSnapshot().GetGroupSnapshotId()).To(Equal(g.GetGroupSnapshotId()), "repeated CreateVolumeGroupSnapshot returned another group")
	Expect(groupMemberIDs(again.GetGroupSnapshot())).To(Equal(ids), "repeated CreateVolumeGroupSnapshot returned other members")

	groupReadBack(ctx, sc, f, g, ids)
	member := g.GetSnapshots()[0]
	groupMemberUse(ctx, sc, f, g.GetGroupSnapshotId(), member)

	By("deleting it twice")
	_, err = f.Group.DeleteVolumeGroupSnapshot(ctx, deleteReq)
	Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroupSnapshot")
	deleted = true
	_, err = f.Group.DeleteVolumeGroupSnapshot(ctx, deleteReq)
	Expect(err).NotTo(HaveOccurred(), "repeated DeleteVolumeGroupSnapshot")
	_, err = f.Group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{
		GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids, Secrets: sc.Secrets.ListSnapshotsSecret})
	ExpectCode(err, codes.NotFound, "GetVolumeGroupSnapshot after deletion")
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_GET_SNAPSHOT) {
		_, err := f.Ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: member.GetSnapshotId(), Secrets: sc.Secrets.GetSnapshotSecret})
		ExpectCode(err, codes.NotFound, "GetSnapshot of a member after its group was deleted")
	}
}

// groupMemberIDs lists the snapshot IDs of g's members, sorted.
func groupMemberIDs(g *csi.VolumeGroupSnapshot) []string {
	var ids []string
	for _, s := range g.GetSnapshots() {
		ids = append(ids, s.GetSnapshotId())
	}
	slices.Sort(ids)
	return ids
}

// groupReadBack reads the group snapshot g back, with its member IDs ids, and waits until it is
// ready to use.
func groupReadBack(ctx context.Context, sc *sanity.TestContext, f *Fixture, g *csi.VolumeGroupSnapshot, ids []string) {
	By("reading it back")
	get := func() *csi.VolumeGroupSnapshot {
		resp, err := f.Group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{
			GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids, Secrets: sc.Secrets.ListSnapshotsSecret})
		Expect(err).NotTo(HaveOccurred(), "GetVolumeGroupSnapshot")
		return resp.GetGroupSnapshot()
	}
	got := get()
	Expect(got.GetGroupSnapshotId()).To(Equal(g.GetGroupSnapshotId()))
	Expect(groupMemberIDs(got)).To(Equal(ids), "GetVolumeGroupSnapshot members")
	Expect(proto.Equal(got.GetCreationTime(), g.GetCreationTime())).To(BeTrue(), "GetVolumeGroupSnapshot creation_time differs from CreateVolumeGroupSnapshot's")
	if !got.GetReadyToUse() {
		By("waiting for it to become ready")
		Eventually(func() bool { return get().GetReadyToUse() }).WithTimeout(wait).WithPolling(poll).Should(BeTrue(), "group snapshot never became ready_to_use")
	}
}

// groupMemberUse reads a member of the group snapshot groupID as a snapshot, and restores it into
// a new volume, as far as the plugin's capabilities allow.
func groupMemberUse(ctx context.Context, sc *sanity.TestContext, f *Fixture, groupID string, member *csi.Snapshot) {
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_GET_SNAPSHOT) {
		snap, err := f.Ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: member.GetSnapshotId(), Secrets: sc.Secrets.GetSnapshotSecret})
		Expect(err).NotTo(HaveOccurred(), "GetSnapshot of a member")
		Expect(snap.GetSnapshot().GetGroupSnapshotId()).To(Equal(groupID), "GetSnapshot of a member: group_snapshot_id")
	}
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT) {
		By("restoring a member into a new volume")
		vreq := f.CreateVolumeReq("csikit-group-restore")
		vreq.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: member.GetSnapshotId()}}}
		restored := f.CreateVolumeStep(ctx, "CreateVolume from a member of the group snapshot", vreq)
		Expect(restored.GetContentSource().GetSnapshot().GetSnapshotId()).To(Equal(member.GetSnapshotId()), "restored volume's content_source")
		_, err := f.R.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, restored.GetVolumeId()))
		Expect(err).NotTo(HaveOccurred(), "DeleteVolume of the restored volume")
	}
}
