package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/plugin"
)

// mountFailing fails or panics in NodePublishVolume quoting its mount options, as a driver that
// passes mount(8)'s output through would.
type mountFailing struct {
	minimal
	panics bool
}

func (b mountFailing) NodePublishVolume(_ context.Context, r *driver.NodePublishVolumeRequest) error {
	flags := r.Raw.GetVolumeCapability().GetMount().GetMountFlags()
	msg := fmt.Sprintf("mount -o %s /dev/x %s: exit status 32 (flags %q)", strings.Join(flags, ","), r.TargetPath, flags)
	if b.panics {
		panic(msg)
	}
	return errors.New(msg)
}

// TestMountFlagValuesNeverLeakOverTheWire is the mount-flag property through
// a real server: for random option lists, no option value reaches the status message or any
// log line, whether the backend returns an error quoting the flags or panics with them.
func TestMountFlagValuesNeverLeakOverTheWire(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.AddSync(writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) })), zapcore.DebugLevel)
	logger := zap.New(core)
	// Values are drawn from characters no log boilerplate holds, so any occurrence is a leak.
	rng := rand.New(rand.NewPCG(2, 4))
	value := func() string {
		const alphabet = "Q~^!"
		b := make([]byte, 1+rng.IntN(5))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for _, panics := range []bool{false, true} {
		p := start(t, plugin.Config{Name: "leak.example.com", VendorVersion: "1", Node: mountFailing{panics: panics}, Logger: logger})
		for range 20 {
			var flags, values []string
			for range 1 + rng.IntN(3) {
				var opts []string
				for range 1 + rng.IntN(3) {
					switch k := []string{"user", "password", "uid", "ro", ""}[rng.IntN(5)]; k {
					case "ro":
						opts = append(opts, k)
					default:
						v := value()
						values = append(values, v)
						opts = append(opts, k+"="+v)
					}
				}
				flags = append(flags, strings.Join(opts, ","))
			}
			mu.Lock()
			logs.Reset()
			mu.Unlock()
			_, err := p.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
				VolumeId: "vol-1", TargetPath: "/mnt/target",
				VolumeCapability: &csi.VolumeCapability{
					AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: flags}},
					AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
				},
			})
			if err == nil {
				t.Fatal("the failing backend succeeded")
			}
			mu.Lock()
			logged := logs.String()
			mu.Unlock()
			if !strings.Contains(logged, "password=") && slices.ContainsFunc(flags, func(f string) bool { return strings.Contains(f, "password=") }) {
				t.Errorf("the option keys should stay readable in the log:\n%s", logged)
			}
			for _, v := range values {
				if strings.Contains(err.Error(), v) {
					t.Fatalf("panics=%v flags %q: value %q in the status: %v", panics, flags, v, err)
				}
				if strings.Contains(logged, v) {
					t.Fatalf("panics=%v flags %q: value %q in the log:\n%s", panics, flags, v, logged)
				}
			}
		}
	}
}
