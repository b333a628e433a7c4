package csisuite

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
)

// WalkPages follows next_token from the first page to the last and counts every ID it sees. It
// fails when a page exceeds max entries, a token exceeds 128 bytes, or the listing does not end
// within maxPages.
func WalkPages(what string, max int32, maxPages int, list func(token string) (ids []string, next string, err error)) map[string]int {
	GinkgoHelper()
	counts := map[string]int{}
	token := ""
	for page := 0; ; page++ {
		Expect(page).To(BeNumerically("<", maxPages), "%s with max_entries %d: still returning next_token after %d pages", what, max, page)
		ids, next, err := list(token)
		Expect(err).NotTo(HaveOccurred(), "%s page %d with max_entries %d", what, page, max)
		if max > 0 {
			Expect(len(ids)).To(BeNumerically("<=", max), "%s page %d: %d entries, more than max_entries %d", what, page, len(ids), max)
		}
		Expect(len(next)).To(BeNumerically("<=", maxToken), "%s page %d: next_token is %d bytes, more than the %d a CSI string may have", what, page, len(next), maxToken)
		for _, id := range ids {
			counts[id]++
		}
		if next == "" {
			return counts
		}
		token = next
	}
}

// ExpectEachOnce checks a walk: every wanted ID exactly once, no ID twice.
func ExpectEachOnce(what string, max int32, counts map[string]int, want []string) {
	GinkgoHelper()
	for id, n := range counts {
		Expect(n).To(Equal(1), "%s with max_entries %d returned %q %d times", what, max, id, n)
	}
	for _, id := range want {
		Expect(counts).To(HaveKey(id), "%s with max_entries %d never returned %q, which existed through the whole listing", what, max, id)
	}
}

// DescribePagination adds the pagination specs to the suite.
func DescribePagination(active Active, group string) {
	Register(active, group, func(sc *sanity.TestContext, f *Fixture) {
		ctx := context.Background()

		It(ItPageVolumes, func() {
			f.Caps.Require(csi.ControllerServiceCapability_RPC_LIST_VOLUMES)
			var want []string
			for i := range pageItems {
				want = append(want, f.MustCreateVolume(fmt.Sprintf("csikit-page-%02d", i)).GetVolumeId())
			}
			// The unlimited listing bounds the walks: with one entry per page, a listing that
			// existed before plus ours cannot take more pages than entries, twice over.
			all := WalkPages("ListVolumes", 0, 1000, pageListVolumes(ctx, f, 0))
			ExpectEachOnce("ListVolumes", 0, all, want)
			maxPages := 2*len(all) + 8
			for _, max := range PageSizes {
				By(fmt.Sprintf("listing volumes %d at a time", max))
				ExpectEachOnce("ListVolumes", max, WalkPages("ListVolumes", max, maxPages, pageListVolumes(ctx, f, max)), want)
			}
		})

		It(ItPageSnapshots, func() {
			f.Caps.Require(csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS)
			f.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT)
			// Five volumes with five snapshots each: enough pages, and a filter that matters.
			var want, ofFirst []string
			var first string
			for v := range 5 {
				vol := f.MustCreateVolume(fmt.Sprintf("csikit-page-src-%d", v))
				if v == 0 {
					first = vol.GetVolumeId()
				}
				for s := range pageItems / 5 {
					name := sanity.UniqueString(fmt.Sprintf("csikit-page-snap-%d-%d", v, s))
					snap := f.CreateSnapshotStep(ctx, "CreateSnapshot "+name, sanity.MakeCreateSnapshotReq(sc, name, vol.GetVolumeId())).GetSnapshot()
					want = append(want, snap.GetSnapshotId())
					if v == 0 {
						ofFirst = append(ofFirst, snap.GetSnapshotId())
					}
				}
			}
			all := WalkPages("ListSnapshots", 0, 1000, pageListSnapshots(ctx, sc, f, 0, ""))
			ExpectEachOnce("ListSnapshots", 0, all, want)
			maxPages := 2*len(all) + 8
			for _, max := range PageSizes {
				By(fmt.Sprintf("listing snapshots %d at a time", max))
				ExpectEachOnce("ListSnapshots", max, WalkPages("ListSnapshots", max, maxPages, pageListSnapshots(ctx, sc, f, max, "")), want)
			}
			By("listing the snapshots of one volume 2 at a time")
			counts := WalkPages("ListSnapshots by source_volume_id", 2, maxPages, pageListSnapshots(ctx, sc, f, 2, first))
			ExpectEachOnce("ListSnapshots by source_volume_id", 2, counts, ofFirst)
			Expect(counts).To(HaveLen(len(ofFirst)), "ListSnapshots by source_volume_id returned snapshots of other volumes")
		})

		It(ItPageErrors, func() {
			vols := f.Caps.Has(csi.ControllerServiceCapability_RPC_LIST_VOLUMES)
			snaps := f.Caps.Has(csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS)
			if !vols && !snaps {
				Skip("neither LIST_VOLUMES nor LIST_SNAPSHOTS advertised")
			}
			bad := sc.Config.TestInvalidListVolumesStartingToken
			if vols {
				_, err := f.Ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: bad})
				ExpectCode(err, codes.Aborted, "ListVolumes with an invalid starting_token")
				_, err = f.Ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: -1})
				ExpectCode(err, codes.InvalidArgument, "ListVolumes with max_entries -1")
			}
			if snaps {
				_, err := f.Ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{StartingToken: bad, Secrets: sc.Secrets.ListSnapshotsSecret})
				ExpectCode(err, codes.Aborted, "ListSnapshots with an invalid starting_token")
				_, err = f.Ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{MaxEntries: -1, Secrets: sc.Secrets.ListSnapshotsSecret})
				ExpectCode(err, codes.InvalidArgument, "ListSnapshots with max_entries -1")
			}
		})
	})
}

// pageListVolumes lists volumes a page of max at a time, for the pagination checks.
func pageListVolumes(ctx context.Context, f *Fixture, max int32) func(string) ([]string, string, error) {
	return func(token string) ([]string, string, error) {
		resp, err := f.Ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: max, StartingToken: token})
		var ids []string
		for _, e := range resp.GetEntries() {
			ids = append(ids, e.GetVolume().GetVolumeId())
		}
		return ids, resp.GetNextToken(), err
	}
}

// pageListSnapshots lists snapshots (of the volume source, if not empty) a page of max at a
// time, and fails on a snapshot of another source.
func pageListSnapshots(ctx context.Context, sc *sanity.TestContext, f *Fixture, max int32, source string) func(string) ([]string, string, error) {
	return func(token string) ([]string, string, error) {
		resp, err := f.Ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{MaxEntries: max, StartingToken: token,
			SourceVolumeId: source, Secrets: sc.Secrets.ListSnapshotsSecret})
		var ids []string
		for _, e := range resp.GetEntries() {
			snap := e.GetSnapshot()
			if source != "" {
				Expect(snap.GetSourceVolumeId()).To(Equal(source), "ListSnapshots filtered by source_volume_id %q returned snapshot %q of %q", source, snap.GetSnapshotId(), snap.GetSourceVolumeId())
			}
			ids = append(ids, snap.GetSnapshotId())
		}
		return ids, resp.GetNextToken(), err
	}
}
