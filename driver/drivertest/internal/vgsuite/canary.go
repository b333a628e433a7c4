package vgsuite

import (
	"context"
	"slices"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csikit/csikit/driver/drivertest/internal/canary"
	"github.com/csikit/csikit/driver/drivertest/internal/csisuite"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/kubernetes-csi/csi-test/v5/utils"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
)

// dialVolumeGroupCanary opens a connection to the plugin's controller that passes through the
// canary and returns a volume-group client on it. DialCanary has already pointed the CSI clients
// at connections of their own.
func (v *vgFixture) dialVolumeGroupCanary(c *canary.Canary) vgpb.ControllerClient {
	GinkgoHelper()
	cfg := v.SC.Config
	addr, opts := cfg.Address, cfg.DialOptions
	if cfg.ControllerAddress != "" {
		addr, opts = cfg.ControllerAddress, cfg.ControllerDialOptions
	}
	opts = append(slices.Clip(opts), grpc.WithChainUnaryInterceptor(c.Unary), grpc.WithChainStreamInterceptor(c.Stream))
	conn, err := utils.Connect(addr, opts...)
	Expect(err).NotTo(HaveOccurred(), "connecting to the plugin's controller")
	v.After(func() { conn.Close() })
	return vgpb.NewControllerClient(conn)
}

// DescribeCanary adds the volume-group canary to the suite: a fresh random value in
// every vg_csi_secret field of every call (the interceptor finds them from the annotation, as it
// finds csi_secret), on happy and error paths.
func DescribeCanary(active csisuite.Active, group string, opts func() Options) {
	register(active, group, opts, func(sc *sanity.TestContext, v *vgFixture) {
		ctx := context.Background()

		It(itCanaryVolumeGroups, func() {
			c := canary.New()
			v.DialCanary(c)
			v.vg = v.dialVolumeGroupCanary(c)
			ignore := func(any, error) {} // error paths: only the leak check matters

			req := v.createReq("csikit-canary-vg")
			created, err := v.vg.CreateVolumeGroup(ctx, req)
			Expect(err).NotTo(HaveOccurred(), "CreateVolumeGroup")
			id := created.GetVolumeGroup().GetVolumeGroupId()
			v.cleanupGroup(id)
			ignore(v.vg.CreateVolumeGroup(ctx, req))
			other := v.createReq("csikit-canary-vg")
			other.Name = req.GetName()
			other.Parameters = map[string]string{"csikit.dev/incompatible": "true"}
			ignore(v.vg.CreateVolumeGroup(ctx, other))                            // ALREADY_EXISTS
			ignore(v.vg.CreateVolumeGroup(ctx, &vgpb.CreateVolumeGroupRequest{})) // INVALID_ARGUMENT: no name
			badKey := v.createReq("csikit-canary-vg-badkey")
			badKey.Secrets = map[string]string{"not a valid key!": c.Value("CreateVolumeGroup (under an invalid key)")}
			ignore(v.vg.CreateVolumeGroup(ctx, badKey))

			var members []string
			if v.Caps.Has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME) {
				members = ids(v.volumes("csikit-canary-vg-vol", 2)...)
				v.setMembers(id, members...)
				ignore(v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(id, members[0], sc.Config.IDGen.GenerateUniqueValidVolumeID()))) // NOT_FOUND
				ignore(v.Ctrl.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, members[0])))                                              // FAILED_PRECONDITION
			}
			ignore(v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(missingGroupID()))) // NOT_FOUND
			if v.rpcs["ControllerGetVolumeGroup"] {
				_, err := v.vg.ControllerGetVolumeGroup(ctx, &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: id, Secrets: v.secrets()})
				Expect(err).NotTo(HaveOccurred(), "ControllerGetVolumeGroup")
				ignore(v.vg.ControllerGetVolumeGroup(ctx, &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: missingGroupID()}))
			}
			if v.rpcs["ListVolumeGroups"] {
				for _, lreq := range []*vgpb.ListVolumeGroupsRequest{{}, {MaxEntries: 1}, {StartingToken: sc.Config.TestInvalidListVolumesStartingToken}, {MaxEntries: -1}} {
					ignore(v.vg.ListVolumeGroups(ctx, lreq))
				}
			}
			if len(members) > 0 {
				v.setMembers(id)
			}
			for range 2 {
				_, err := v.vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: id, Secrets: v.secrets()})
				Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroup")
			}
			v.Verify(c)
		})
	})
}
