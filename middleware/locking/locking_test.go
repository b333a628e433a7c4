package locking

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/idempotency"
)

func TestCSIKeys(t *testing.T) {
	vs := func(id string) *csi.VolumeContentSource {
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}
	}
	ss := func(id string) *csi.VolumeContentSource {
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
	}
	tests := []struct {
		name string
		req  any
		want []idempotency.Key
	}{
		{"create", &csi.CreateVolumeRequest{Name: "n"}, []idempotency.Key{excl(KindVolumeName, "n")}},
		{"clone holds the source shared", &csi.CreateVolumeRequest{Name: "n", VolumeContentSource: vs("v")},
			[]idempotency.Key{excl(KindVolumeName, "n"), shared(KindVolume, "v")}},
		{"restore holds the snapshot shared", &csi.CreateVolumeRequest{Name: "n", VolumeContentSource: ss("s")},
			[]idempotency.Key{excl(KindVolumeName, "n"), shared(KindSnapshot, "s")}},
		{"delete", &csi.DeleteVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(KindVolume, "v")}},
		{"publish", &csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "n"}, []idempotency.Key{excl(KindVolume, "v")}},
		{"unpublish", &csi.ControllerUnpublishVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(KindVolume, "v")}},
		{"expand", &csi.ControllerExpandVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(KindVolume, "v")}},
		{"modify", &csi.ControllerModifyVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(KindVolume, "v")}},
		{"snapshot", &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: "v"},
			[]idempotency.Key{excl(KindSnapshotName, "s"), shared(KindVolume, "v")}},
		{"delete snapshot", &csi.DeleteSnapshotRequest{SnapshotId: "s"}, []idempotency.Key{excl(KindSnapshot, "s")}},
		{"stage", &csi.NodeStageVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(KindVolume, "v")}},
		{"unstage", &csi.NodeUnstageVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(KindVolume, "v")}},
		{"node publish", &csi.NodePublishVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(KindVolume, "v")}},
		{"node unpublish", &csi.NodeUnpublishVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(KindVolume, "v")}},
		{"node expand", &csi.NodeExpandVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(KindVolume, "v")}},
		{"group snapshot", &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{"a", "b"}},
			[]idempotency.Key{excl(KindGroupSnapshotName, "g"), shared(KindVolume, "a"), shared(KindVolume, "b")}},
		{"delete group snapshot", &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: "g", SnapshotIds: []string{"s1"}},
			[]idempotency.Key{excl(KindGroupSnapshot, "g"), excl(KindSnapshot, "s1")}},
		{"read-only calls take no lock", &csi.ListVolumesRequest{}, nil},
		{"get volume takes no lock", &csi.ControllerGetVolumeRequest{VolumeId: "v"}, nil},
		{"stats take no lock", &csi.NodeGetVolumeStatsRequest{VolumeId: "v"}, nil},
		{"empty IDs are skipped", &csi.DeleteVolumeRequest{}, nil},
		{"non-CSI requests take no lock", "hello", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CSIKeys(tt.req); !slices.Equal(got, tt.want) {
				t.Fatalf("CSIKeys = %v, want %v", got, tt.want)
			}
		})
	}
}

var info = &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/DeleteVolume"}

func TestConflictIsAbortedAndNamesTheResource(t *testing.T) {
	m := idempotency.NewManager()
	intercept := UnaryServerInterceptor(m, CSIKeys)
	req := &csi.DeleteVolumeRequest{VolumeId: "vol-7"}
	inside := make(chan struct{})
	release := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := intercept(context.Background(), req, info, func(context.Context, any) (any, error) {
			close(inside)
			<-release
			return &csi.DeleteVolumeResponse{}, nil
		})
		first <- err
	}()
	<-inside
	_, err := intercept(context.Background(), req, info, func(context.Context, any) (any, error) {
		t.Error("handler ran while the volume was locked")
		return nil, nil
	})
	if status.Code(err) != codes.Aborted || !strings.Contains(status.Convert(err).Message(), `volume "vol-7"`) {
		t.Fatalf("conflicting call: %v, want ABORTED naming volume \"vol-7\"", err)
	}
	// Another volume is not affected.
	if _, err := intercept(context.Background(), &csi.DeleteVolumeRequest{VolumeId: "vol-8"}, info,
		func(context.Context, any) (any, error) { return &csi.DeleteVolumeResponse{}, nil }); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if m.Len() != 0 {
		t.Fatalf("%d lock entries left after every call returned", m.Len())
	}
}

func TestLockReleasedOnErrorAndPanic(t *testing.T) {
	m := idempotency.NewManager()
	intercept := UnaryServerInterceptor(m, CSIKeys)
	req := &csi.DeleteVolumeRequest{VolumeId: "v"}
	_, err := intercept(context.Background(), req, info, func(context.Context, any) (any, error) {
		return nil, errors.New("boom")
	})
	if err == nil || m.Len() != 0 {
		t.Fatalf("after an error: err=%v, %d entries left", err, m.Len())
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = intercept(context.Background(), req, info, func(context.Context, any) (any, error) { panic("handler bug") })
	}()
	if m.Len() != 0 {
		t.Fatalf("after a panic: %d entries left", m.Len())
	}
}

func TestBoundedWaitHonoursTheContext(t *testing.T) {
	m := idempotency.NewManager(idempotency.WithWait(time.Hour))
	intercept := UnaryServerInterceptor(m, CSIKeys)
	req := &csi.DeleteVolumeRequest{VolumeId: "v"}
	unlock, err := m.Lock(context.Background(), excl(KindVolume, "v"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := intercept(ctx, req, info, func(context.Context, any) (any, error) { return nil, nil })
		done <- err
	}()
	cancel()
	if err := <-done; status.Code(err) != codes.Aborted && status.Code(err) != codes.Canceled {
		t.Fatalf("waiting call after its context ended: %v, want ABORTED or CANCELED", err)
	}
}
