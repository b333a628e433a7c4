package driver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/csikit/csikit/driver"
)

func TestPrintingARequestNeverLeaksItsSecrets(t *testing.T) {
	raw := &csi.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: "/s", Secrets: map[string]string{"password": canary},
		VolumeCapability: &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
			MountFlags: []string{"ro", "key=" + canary}}}}}
	req := &driver.NodeStageRequest{VolumeID: "vol-1", StagingTargetPath: "/s", Secrets: raw.Secrets, Raw: raw}
	var logged strings.Builder
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&logged), zapcore.DebugLevel))
	logger.Info("request", zap.Any("req", req), zap.Any("value", *req), zap.Any("secrets", req.Secrets))
	asJSON, err := json.Marshal(map[string]any{"req": req, "value": *req, "secrets": req.Secrets})
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"%v":   fmt.Sprintf("%v", req),
		"%+v":  fmt.Sprintf("%+v", req),
		"%#v":  fmt.Sprintf("%#v", req),
		"%s":   fmt.Sprintf("%s", req),
		"%+v*": fmt.Sprintf("%+v", *req),
		"zap":  logged.String(),
		"json": string(asJSON),
	}
	for how, out := range outputs {
		if strings.Contains(out, canary) {
			t.Errorf("%s leaks the secret: %s", how, out)
		}
		if !strings.Contains(out, "password") || !strings.Contains(out, "vol-1") {
			t.Errorf("%s lost the secret's key or the volume ID: %s", how, out)
		}
	}
}
