package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/idempotency"
)

// volumeRecord is what a backend stores per volume: the fingerprint of the
// request that created it, next to the volume itself.
type volumeRecord struct {
	id          string
	fingerprint string
}

// errAlreadyExists stands for the backend's already-exists error, which the
// library maps to ALREADY_EXISTS.
var errAlreadyExists = errors.New("a volume with this name exists with different parameters")

type backend struct {
	byName map[string]volumeRecord
}

// createVolume is the create-by-name pattern: the same name with the same
// fingerprint is a retry (return what exists); with another fingerprint it
// is an incompatible request.
func (b *backend) createVolume(req *csi.CreateVolumeRequest) (string, error) {
	// The name is how the record was found, so it is left out of the
	// fingerprint; secrets and capability order never count.
	fp := idempotency.Fingerprint(req, "name")
	if rec, ok := b.byName[req.GetName()]; ok {
		if rec.fingerprint != fp {
			return "", fmt.Errorf("create volume %q: %w", req.GetName(), errAlreadyExists)
		}
		return rec.id, nil
	}
	id := fmt.Sprintf("vol-%d", len(b.byName)+1)
	b.byName[req.GetName()] = volumeRecord{id: id, fingerprint: fp}
	return id, nil
}

func ExampleFingerprint() {
	b := &backend{byName: map[string]volumeRecord{}}
	mount := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	block := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	first := &csi.CreateVolumeRequest{
		Name:               "pvc-1",
		CapacityRange:      &csi.CapacityRange{RequiredBytes: 1 << 30},
		VolumeCapabilities: []*csi.VolumeCapability{mount, block},
		Secrets:            map[string]string{"token": "s3cr3t"},
	}
	// A retry after a timeout: new secret, capabilities in another order.
	retry := &csi.CreateVolumeRequest{
		Name:               "pvc-1",
		CapacityRange:      &csi.CapacityRange{RequiredBytes: 1 << 30},
		VolumeCapabilities: []*csi.VolumeCapability{block, mount},
		Secrets:            map[string]string{"token": "rotated"},
	}
	// Same name, different size.
	bigger := &csi.CreateVolumeRequest{
		Name:               "pvc-1",
		CapacityRange:      &csi.CapacityRange{RequiredBytes: 2 << 30},
		VolumeCapabilities: []*csi.VolumeCapability{mount, block},
	}

	for _, req := range []*csi.CreateVolumeRequest{first, retry, bigger} {
		id, err := b.createVolume(req)
		if errors.Is(err, errAlreadyExists) {
			fmt.Println("ALREADY_EXISTS:", err)
			continue
		}
		fmt.Println("OK:", id)
	}
	// Output:
	// OK: vol-1
	// OK: vol-1
	// ALREADY_EXISTS: create volume "pvc-1": a volume with this name exists with different parameters
}

func ExampleManager() {
	locks := idempotency.NewManager()
	ctx := context.Background()

	// ControllerPublishVolume: the volume exclusively, the node shared.
	unlock, err := locks.Lock(ctx,
		idempotency.Key{Kind: "volume", ID: "vol-1"},
		idempotency.Key{Kind: "node", ID: "node-a", Shared: true},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer unlock()

	// A concurrent DeleteVolume on the same volume is refused at once; the
	// middleware turns this into ABORTED and the CO retries later.
	_, err = locks.Lock(ctx, idempotency.Key{Kind: "volume", ID: "vol-1"})
	fmt.Println(err)
	fmt.Println(errors.Is(err, idempotency.ErrBusy))

	// Another publish to the same node is fine: node holds are shared.
	unlock2, err := locks.Lock(ctx,
		idempotency.Key{Kind: "volume", ID: "vol-2"},
		idempotency.Key{Kind: "node", ID: "node-a", Shared: true},
	)
	fmt.Println(err)
	unlock2()
	// Output:
	// an operation on volume "vol-1" is already in progress
	// true
	// <nil>
}

func ExampleWithWait() {
	// Wait up to a second for a busy key instead of failing at once; a
	// shorter deadline on the caller's context wins.
	locks := idempotency.NewManager(idempotency.WithWait(time.Second))
	unlock, _ := locks.Lock(context.Background(), idempotency.Key{Kind: "snapshot", ID: "snap-1"})
	defer unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := locks.Lock(ctx, idempotency.Key{Kind: "snapshot", ID: "snap-1"})
	fmt.Println(err)
	fmt.Println(errors.Is(err, idempotency.ErrBusy), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// an operation on snapshot "snap-1" is already in progress; stopped waiting: context deadline exceeded
	// true true
}
