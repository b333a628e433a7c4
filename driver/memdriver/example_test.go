package memdriver_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/memdriver"
)

// The backend is called here the way the library calls it, after validation, to show the
// contract every backend keeps: a CreateVolume retried under the same name returns the same
// volume, a retry that asks for something else is refused with driver.ErrAlreadyExists (the
// library answers ALREADY_EXISTS), and deleting twice is not an error. A real plugin never calls
// these methods itself; it hands the backend to plugin.New in a plugin.Config.
func Example() {
	ctx := context.Background()
	backend := memdriver.New(memdriver.Options{NodeID: "node-1"})

	create := func(name string, size int64, params map[string]string) (*driver.Volume, error) {
		// The library always sets Raw; Fingerprint reads it, so a hand-built request sets it too.
		raw := &csi.CreateVolumeRequest{Name: name, Parameters: params}
		return backend.CreateVolume(ctx, &driver.CreateVolumeRequest{
			Name:         name,
			Capacity:     driver.CapacityRange{RequiredBytes: size},
			Capabilities: []driver.VolumeCapability{{AccessMode: driver.SingleNodeWriter}},
			Parameters:   params,
			Raw:          raw,
		})
	}

	first, _ := create("pvc-1", 10<<20, map[string]string{"tier": "fast"})
	retry, _ := create("pvc-1", 10<<20, map[string]string{"tier": "fast"})
	fmt.Println("retry returns the same volume:", first.ID == retry.ID, first.CapacityBytes)

	_, err := create("pvc-1", 10<<20, map[string]string{"tier": "slow"})
	fmt.Println("other parameters, same name:", errors.Is(err, driver.ErrAlreadyExists))

	for range 2 {
		err := backend.DeleteVolume(ctx, &driver.DeleteVolumeRequest{VolumeID: first.ID})
		// The second delete finds nothing: ErrNotFound, which the library answers with OK.
		fmt.Println("delete:", err == nil || errors.Is(err, driver.ErrNotFound))
	}
	// Output:
	// retry returns the same volume: true 10485760
	// other parameters, same name: true
	// delete: true
	// delete: true
}
