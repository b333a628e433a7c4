package plugin

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/internal/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// startAfter decodes a starting_token; a token this plugin did not mint for this listing is
// ABORTED, as the spec's List* error tables demand.
func (d *Plugin) startAfter(r rpc, token, scope string) (string, error) {
	if token == "" {
		return "", nil
	}
	after, err := d.tokens.Decode(token, string(r), scope)
	if err != nil {
		return "", status.Errorf(codes.Aborted,
			"starting_token is not valid for %s (not issued by this plugin, for another listing, or expired); start the listing again without a token", r)
	}
	return after, nil
}

// cutPage cuts a sorted, filtered listing to limit entries and mints the next token.
func cutPage[T any](d *Plugin, r rpc, scope string, items []T, id func(*T) string, limit int) ([]T, string, error) {
	if limit <= 0 || len(items) <= limit {
		return items, "", nil
	}
	items = items[:limit]
	next, err := d.tokens.Encode(string(r), scope, id(&items[limit-1]))
	if err != nil {
		return nil, "", status.Errorf(codes.Internal, "%s: cannot mint a pagination token: %v", r, err)
	}
	return items, next, nil
}

// sortedAfter sorts a full listing by ID and drops everything up to and including after. A
// duplicate ID is a backend bug: the CO could not tell the two apart.
//
// The backend's slice is copied first: it may be a cache the backend reuses.
func sortedAfter[T any](r rpc, items []T, id func(*T) string, after string) ([]T, error) {
	items = slices.Clone(items)
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(id(&a), id(&b)) })
	for i := range items {
		if id(&items[i]) == "" {
			return nil, pluginBug(r, "the listing returned an empty ID")
		}
		if i > 0 && id(&items[i-1]) == id(&items[i]) {
			return nil, pluginBug(r, "the listing returned ID %q twice", id(&items[i]))
		}
	}
	if after == "" {
		return items, nil
	}
	i, found := slices.BinarySearchFunc(items, after, func(it T, key string) int { return strings.Compare(id(&it), key) })
	if found {
		i++
	}
	return items[i:], nil
}

// collectPages asks a page lister for pages until it has want items (0 = all) or a page comes back
// empty, so a lister that returns short pages (as cloud APIs do) never truncates the listing.
// Each page is checked: ascending IDs after the cursor, no more than asked for.
func collectPages[T any](r rpc, after string, want int, id func(*T) string, fetch func(after string, limit int) ([]T, error)) ([]T, error) {
	var out []T
	for {
		limit := 0
		if want > 0 {
			limit = want - len(out)
		}
		page, err := fetch(after, limit)
		if err != nil {
			return nil, err
		}
		if err := checkPage(r, page, id, after, limit); err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return out, nil
		}
		out = append(out, page...)
		if want > 0 && len(out) >= want {
			return out, nil
		}
		after = id(&page[len(page)-1])
	}
}

// checkPage verifies a page lister's answer: ascending IDs after the cursor, at most limit items.
func checkPage[T any](r rpc, items []T, id func(*T) string, after string, limit int) error {
	if limit > 0 && len(items) > limit {
		return pluginBug(r, "the page lister returned %d items, more than the %d asked for", len(items), limit)
	}
	prev := after
	for i := range items {
		cur := id(&items[i])
		if cur == "" {
			return pluginBug(r, "the listing returned an empty ID")
		}
		if (i > 0 || after != "") && cur <= prev {
			return pluginBug(r, "the page lister returned ID %q after %q; pages must be in ascending ID order after the cursor", cur, prev)
		}
		prev = cur
	}
	return nil
}

func entryID(e *driver.VolumeEntry) string { return e.Volume.ID }

func snapshotID(s *driver.Snapshot) string { return s.ID }

func healthID(h *driver.VolumeHealth) string { return h.VolumeID }

func (s *controllerServer) ListVolumes(ctx context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	after, err := s.d.startAfter(rpcListVolumes, req.GetStartingToken(), "")
	if err != nil {
		return nil, err
	}
	limit := int(req.GetMaxEntries())
	var entries []driver.VolumeEntry
	if pager, ok := s.b.controller.(driver.VolumePageLister); ok {
		want := 0
		if limit > 0 {
			want = limit + 1 // one more tells whether another page exists
		}
		entries, err = collectPages(rpcListVolumes, after, want, entryID, func(after string, limit int) ([]driver.VolumeEntry, error) {
			page, err := pager.ListVolumesPage(ctx, &driver.ListVolumesRequest{After: after, Limit: limit, Raw: req})
			return page, mapError(ctx, rpcListVolumes, err)
		})
		if err != nil {
			return nil, err
		}
	} else {
		entries, err = impl[driver.VolumeLister](s.b.controller).ListVolumes(ctx, &driver.ListVolumesRequest{Raw: req})
		if err != nil {
			return nil, mapError(ctx, rpcListVolumes, err)
		}
		if entries, err = sortedAfter(rpcListVolumes, entries, entryID, after); err != nil {
			return nil, err
		}
	}
	entries, next, err := cutPage(s.d, rpcListVolumes, "", entries, entryID, limit)
	if err != nil {
		return nil, err
	}
	published := s.d.caps.features.ListVolumesPublishedNodes
	resp := &csi.ListVolumesResponse{NextToken: next, Entries: make([]*csi.ListVolumesResponse_Entry, len(entries))}
	for i := range entries {
		e := &csi.ListVolumesResponse_Entry{Volume: wire.CSIVolume(&entries[i].Volume)}
		if published {
			e.Status = &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: entries[i].PublishedNodeIDs}
		}
		resp.Entries[i] = e
	}
	return resp, nil
}

func (s *controllerServer) ListSnapshots(ctx context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	// The filter is part of the token's scope: a token minted for one filter is refused for another.
	scope := req.GetSourceVolumeId() + "\x00" + req.GetSnapshotId()
	after, err := s.d.startAfter(rpcListSnapshots, req.GetStartingToken(), scope)
	if err != nil {
		return nil, err
	}
	limit := int(req.GetMaxEntries())
	lreq := &driver.ListSnapshotsRequest{
		SourceVolumeID: req.GetSourceVolumeId(),
		SnapshotID:     req.GetSnapshotId(),
		Secrets:        req.GetSecrets(),
		Raw:            req,
	}
	var snaps []driver.Snapshot
	switch {
	case req.GetSnapshotId() != "" && impl[driver.SnapshotGetter](s.b.controller) != nil:
		// One snapshot by ID: ask for it directly instead of listing everything.
		raw := &csi.GetSnapshotRequest{SnapshotId: req.GetSnapshotId(), Secrets: req.GetSecrets()}
		snap, err := impl[driver.SnapshotGetter](s.b.controller).GetSnapshot(ctx, &driver.GetSnapshotRequest{SnapshotID: raw.SnapshotId, Secrets: raw.Secrets, Raw: raw})
		switch {
		case errors.Is(err, driver.ErrNotFound) || status.Code(err) == codes.NotFound:
		case err != nil:
			return nil, mapError(ctx, rpcListSnapshots, err)
		case snap != nil && snap.ID > after:
			snaps = []driver.Snapshot{*snap}
		}
	case impl[driver.SnapshotPageLister](s.b.controller) != nil:
		want := 0
		if limit > 0 {
			want = limit + 1
		}
		snaps, err = collectPages(rpcListSnapshots, after, want, snapshotID, func(after string, limit int) ([]driver.Snapshot, error) {
			page := *lreq
			page.After, page.Limit = after, limit
			snaps, err := impl[driver.SnapshotPageLister](s.b.controller).ListSnapshotsPage(ctx, &page)
			if err != nil {
				return nil, mapError(ctx, rpcListSnapshots, err)
			}
			// A page lister must filter itself: dropping entries here would hide whether more
			// pages exist.
			for i := range snaps {
				if !matches(req, &snaps[i]) {
					return nil, pluginBug(rpcListSnapshots, "the page lister returned snapshot %q, which does not match the request's filter", snaps[i].ID)
				}
			}
			return snaps, nil
		})
		if err != nil {
			return nil, err
		}
	default:
		snaps, err = impl[driver.SnapshotLister](s.b.controller).ListSnapshots(ctx, lreq)
		if err != nil {
			return nil, mapError(ctx, rpcListSnapshots, err)
		}
		if snaps, err = sortedAfter(rpcListSnapshots, snaps, snapshotID, after); err != nil {
			return nil, err
		}
	}
	// Filter again: a full lister may ignore the filters, the CO must never see a non-matching
	// entry. The slice is the library's own here (collected, cloned or built above).
	snaps = slices.DeleteFunc(snaps, func(sn driver.Snapshot) bool { return !matches(req, &sn) })
	snaps, next, err := cutPage(s.d, rpcListSnapshots, scope, snaps, snapshotID, limit)
	if err != nil {
		return nil, err
	}
	resp := &csi.ListSnapshotsResponse{NextToken: next, Entries: make([]*csi.ListSnapshotsResponse_Entry, len(snaps))}
	for i := range snaps {
		if err := s.d.checkSnapshot(rpcListSnapshots, &snaps[i]); err != nil {
			return nil, err
		}
		resp.Entries[i] = &csi.ListSnapshotsResponse_Entry{Snapshot: wire.CSISnapshot(&snaps[i])}
	}
	return resp, nil
}

func (s *controllerServer) ControllerListVolumeHealth(ctx context.Context, req *csi.ControllerListVolumeHealthRequest) (*csi.ControllerListVolumeHealthResponse, error) {
	after, err := s.d.startAfter(rpcControllerListHealth, req.GetStartingToken(), "")
	if err != nil {
		return nil, err
	}
	hs, err := impl[driver.VolumeHealthLister](s.b.controller).ControllerListVolumeHealth(ctx, &driver.ControllerListVolumeHealthRequest{Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcControllerListHealth, err)
	}
	if hs, err = sortedAfter(rpcControllerListHealth, hs, healthID, after); err != nil {
		return nil, err
	}
	hs, next, err := cutPage(s.d, rpcControllerListHealth, "", hs, healthID, int(req.GetMaxEntries()))
	if err != nil {
		return nil, err
	}
	resp := &csi.ControllerListVolumeHealthResponse{NextToken: next, Entries: make([]*csi.VolumeHealth, len(hs))}
	for i := range hs {
		if hs[i].VolumeID == "" {
			return nil, pluginBug(rpcControllerListHealth, "a health entry has no volume ID")
		}
		resp.Entries[i] = wire.CSIHealth(&hs[i])
	}
	return resp, nil
}

func matches(req *csi.ListSnapshotsRequest, sn *driver.Snapshot) bool {
	return (req.GetSnapshotId() == "" || sn.ID == req.GetSnapshotId()) &&
		(req.GetSourceVolumeId() == "" || sn.SourceVolumeID == req.GetSourceVolumeId())
}

func wrapInt64(v int64) *wrapperspb.Int64Value { return wrapperspb.Int64(v) }
