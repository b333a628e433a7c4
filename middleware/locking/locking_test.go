package locking

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/idempotency"
)

// volumeKeys locks the volume of a DeleteVolumeRequest, as the driver's table does.
func volumeKeys(req any) []idempotency.Key {
	if r, ok := req.(*csi.DeleteVolumeRequest); ok && r.GetVolumeId() != "" {
		return []idempotency.Key{{Kind: "volume", ID: r.GetVolumeId()}}
	}
	return nil
}

var info = &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/DeleteVolume"}

func TestConflictIsAbortedAndNamesTheResource(t *testing.T) {
	m := idempotency.NewManager()
	intercept := UnaryServerInterceptor(m, volumeKeys)
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
	intercept := UnaryServerInterceptor(m, volumeKeys)
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
	intercept := UnaryServerInterceptor(m, volumeKeys)
	req := &csi.DeleteVolumeRequest{VolumeId: "v"}
	unlock, err := m.Lock(context.Background(), idempotency.Key{Kind: "volume", ID: "v"})
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
