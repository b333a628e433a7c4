package secrets_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/csikit/csikit/secrets"
)

func ExampleField() {
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = "" // keep the example's output stable
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(os.Stdout), zapcore.DebugLevel))

	req := &csi.NodeStageVolumeRequest{
		VolumeId:          "vol-1",
		StagingTargetPath: "/var/lib/kubelet/staging/vol-1",
		Secrets:           map[string]string{"username": "admin", "password": "hunter2"},
	}
	// The request is only walked if the entry is written; guard with Check
	// to make a disabled level cost nothing at all.
	if ce := logger.Check(zapcore.DebugLevel, "NodeStageVolume"); ce != nil {
		ce.Write(secrets.Field("request", req))
	}
	// Output:
	// {"level":"debug","msg":"NodeStageVolume","request":{"volume_id":"vol-1","staging_target_path":"/var/lib/kubelet/staging/vol-1","secrets":{"password":"***stripped***","username":"***stripped***"}}}
}

func ExampleString() {
	req := &csi.CreateVolumeRequest{
		Name:       "pvc-1",
		Parameters: map[string]string{"pool": "gold", "encryptionPassphrase": "open sesame"},
		Secrets:    map[string]string{"token": "t0k3n"},
	}
	fmt.Println(secrets.String(req))
	// The heuristic also hides parameters whose key looks secret.
	fmt.Println(secrets.NewRedactor(secrets.WithHeuristic(true)).String(req))
	// Output:
	// {"name":"pvc-1","parameters":{"encryptionPassphrase":"open sesame","pool":"gold"},"secrets":{"token":"***stripped***"}}
	// {"name":"pvc-1","parameters":{"encryptionPassphrase":"***stripped***","pool":"gold"},"secrets":{"token":"***stripped***"}}
}

func ExampleScrub() {
	req := &csi.NodeStageVolumeRequest{Secrets: map[string]string{"password": "hunter2"}}
	// An error from a storage backend that echoes what it was given.
	err := errors.New(`login "admin" with password "hunter2" refused`)
	fmt.Println(secrets.Scrub(err.Error(), req))
	// Output:
	// login "admin" with password "***stripped***" refused
}

func ExampleWithSecretFields() {
	// A Redactor of the driver's own hides these fields in what the driver logs itself. The
	// plugin's logs use plugin.Config.RedactSecretLookingKeys instead.
	r := secrets.NewRedactor(secrets.WithSecretFields("csi.v1.CreateVolumeRequest.parameters"))
	req := &csi.CreateVolumeRequest{Name: "pvc-1", Parameters: map[string]string{"pool": "gold"}}
	fmt.Println(r.String(req))
	fmt.Println(secrets.String(req))
	// Output:
	// {"name":"pvc-1","parameters":{"pool":"***stripped***"}}
	// {"name":"pvc-1","parameters":{"pool":"gold"}}
}
