package driver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/volumegroup"
	"github.com/csikit/csikit/internal/reqfmt"
	"github.com/csikit/csikit/secrets"
)

// printCanary is planted in every secret field; it must never show in a printed request.
const printCanary = "s3cr3t-canary-value-9f2c"

// requestTypes lists one value of every request type of the CSI and volume-group contracts that
// carries a Raw wire request.
// TestRequestTypesListIsComplete checks it against the source, so a new type cannot be
// forgotten here.
var requestTypes = []any{
	driver.CreateVolumeRequest{},
	driver.DeleteVolumeRequest{},
	driver.ValidateVolumeCapabilitiesRequest{},
	driver.ControllerPublishVolumeRequest{},
	driver.ControllerUnpublishVolumeRequest{},
	driver.ListVolumesRequest{},
	driver.GetCapacityRequest{},
	driver.CreateSnapshotRequest{},
	driver.DeleteSnapshotRequest{},
	driver.ListSnapshotsRequest{},
	driver.GetSnapshotRequest{},
	driver.ControllerExpandVolumeRequest{},
	driver.ControllerGetVolumeRequest{},
	driver.ControllerModifyVolumeRequest{},
	driver.ControllerGetVolumeHealthRequest{},
	driver.ControllerListVolumeHealthRequest{},
	driver.NodeStageVolumeRequest{},
	driver.NodeUnstageVolumeRequest{},
	driver.NodePublishVolumeRequest{},
	driver.NodeUnpublishVolumeRequest{},
	driver.NodeGetVolumeStatsRequest{},
	driver.NodeExpandVolumeRequest{},
	driver.NodeGetVolumeHealthRequest{},
	driver.NodeGetStorageHealthRequest{},
	driver.CreateVolumeGroupSnapshotRequest{},
	driver.DeleteVolumeGroupSnapshotRequest{},
	driver.GetVolumeGroupSnapshotRequest{},
	driver.GetMetadataAllocatedRequest{},
	driver.GetMetadataDeltaRequest{},
	volumegroup.CreateVolumeGroupRequest{},
	volumegroup.DeleteVolumeGroupRequest{},
	volumegroup.ModifyVolumeGroupMembershipRequest{},
	volumegroup.ControllerGetVolumeGroupRequest{},
	volumegroup.ListVolumeGroupsRequest{},
}

// TestFormattersAreGenerated fails when requests_format.go is stale: a request type was added,
// renamed or removed without `go generate ./driver`, which runs this test with
// CSIKIT_WRITE_FORMATTERS=1 to rewrite the file.
func TestFormattersAreGenerated(t *testing.T) {
	p := reqfmt.Package{Name: "driver", Dir: "driver", Redaction: reqfmt.Marked}
	if err := reqfmt.Sync(".", p, os.Getenv(reqfmt.WriteEnv) == "1"); err != nil {
		t.Fatal(err)
	}
}

// TestRequestTypesListIsComplete keeps requestTypes in step with the source, so that the leak
// test below covers every request type.
func TestRequestTypesListIsComplete(t *testing.T) {
	var listed []string
	for _, v := range requestTypes {
		listed = append(listed, reflect.TypeOf(v).String())
	}
	var want []string
	for pkg, dir := range map[string]string{"driver": ".", "volumegroup": "volumegroup"} {
		types, err := reqfmt.RawRequestTypes(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range types {
			want = append(want, pkg+"."+n)
		}
	}
	if len(want) == 0 {
		t.Fatal("no request type found: the source walk is broken")
	}
	for _, n := range want {
		if !slices.Contains(listed, n) {
			t.Errorf("%s has a Raw field but is missing from requestTypes", n)
		}
	}
	for _, n := range listed {
		if !slices.Contains(want, n) {
			t.Errorf("requestTypes lists %s, which has no Raw field", n)
		}
	}
}

const mountFlagsField = "csi.v1.VolumeCapability.MountVolume.mount_flags"

// planted records what fill put into a raw request.
type planted struct {
	secret bool // the canary sits in some secret field or mount option
	public bool // some public string field holds "pub-value"
}

// fill populates m for the leak test: secret fields and mount option values hold the printCanary
// (secret maps under the key "password"), public strings hold "pub-value", and every message
// reachable within a few levels is set, choosing in each oneof a member that can hold secrets.
func fill(m protoreflect.Message, depth int, p *planted) {
	if depth > 4 {
		return
	}
	fds := m.Descriptor().Fields()
	doneOneof := map[protoreflect.FullName]bool{}
	for i := range fds.Len() {
		fd := fds.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if doneOneof[od.FullName()] {
				continue
			}
			doneOneof[od.FullName()] = true
			fd = od.Fields().Get(0)
			for j := range od.Fields().Len() {
				if md := od.Fields().Get(j).Message(); md != nil && secrets.HasSecrets(md) {
					fd = od.Fields().Get(j)
					break
				}
			}
		}
		secret := secrets.IsSecretField(fd)
		switch {
		case fd.IsMap():
			if fd.MapKey().Kind() != protoreflect.StringKind || fd.MapValue().Kind() != protoreflect.StringKind {
				continue
			}
			mp := m.Mutable(fd).Map()
			if secret {
				mp.Set(protoreflect.ValueOfString("password").MapKey(), protoreflect.ValueOfString(printCanary))
				p.secret = true
			} else {
				mp.Set(protoreflect.ValueOfString("pub-key").MapKey(), protoreflect.ValueOfString("pub-value"))
				p.public = true
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			switch {
			case fd.FullName() == mountFlagsField:
				l.Append(protoreflect.ValueOfString("ro,password=" + printCanary))
				p.secret = true
			case fd.Kind() == protoreflect.MessageKind:
				fill(l.AppendMutable().Message(), depth+1, p)
			case fd.Kind() == protoreflect.StringKind && secret:
				l.Append(protoreflect.ValueOfString(printCanary))
				p.secret = true
			case fd.Kind() == protoreflect.StringKind:
				l.Append(protoreflect.ValueOfString("pub-value"))
				p.public = true
			}
		case fd.Kind() == protoreflect.MessageKind:
			fill(m.Mutable(fd).Message(), depth+1, p)
		case fd.Kind() == protoreflect.StringKind && secret:
			m.Set(fd, protoreflect.ValueOfString(printCanary))
			p.secret = true
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString("pub-value"))
			p.public = true
		}
	}
}

// TestPrintingARequestNeverLeaksItsSecrets prints, encodes and logs every request type with
// the printCanary in each secret field, lifted Secrets and mount option of its Raw request, and
// checks that the printCanary never shows while the keys and public values do.
func TestPrintingARequestNeverLeaksItsSecrets(t *testing.T) {
	secretsType := reflect.TypeFor[driver.Secrets]()
	for _, v := range requestTypes {
		typ := reflect.TypeOf(v)
		t.Run(typ.Name(), func(t *testing.T) {
			ptr := reflect.New(typ)
			raw, ok := typ.FieldByName("Raw")
			if !ok {
				t.Fatal("no Raw field")
			}
			msg, ok := reflect.New(raw.Type.Elem()).Interface().(proto.Message)
			if !ok {
				t.Fatalf("Raw is a %s, not a proto message", raw.Type)
			}
			var p planted
			fill(msg.ProtoReflect(), 0, &p)
			ptr.Elem().FieldByIndex(raw.Index).Set(reflect.ValueOf(msg))
			for i := range typ.NumField() {
				if typ.Field(i).Type == secretsType {
					ptr.Elem().Field(i).Set(reflect.ValueOf(driver.Secrets{"password": printCanary}))
				}
			}
			req, val := ptr.Interface(), ptr.Elem().Interface()
			if strings.Contains(fmt.Sprint(msg), printCanary) != p.secret {
				t.Fatalf("the printCanary was planted (%v) but the raw request disagrees: %v", p.secret, msg)
			}

			var logged bytes.Buffer
			logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&logged), zapcore.DebugLevel))
			logger.Error("request", zap.Any("req", req), zap.Any("value", val), zap.Reflect("reflected", val))
			asJSON, err := json.Marshal(map[string]any{"req": req, "value": val, "list": []any{val}})
			if err != nil {
				t.Fatal(err)
			}
			outputs := map[string]string{
				"zap":  logged.String(),
				"json": string(asJSON),
			}
			for _, verb := range []string{"%v", "%+v", "%s", "%#v", "%q"} {
				outputs[verb] = fmt.Sprintf(verb, req)
				outputs[verb+" value"] = fmt.Sprintf(verb, val)
				outputs[verb+" in a slice"] = fmt.Sprintf(verb, []any{val})
			}
			for how, out := range outputs {
				if strings.Contains(out, printCanary) {
					t.Errorf("%s leaks the secret: %s", how, out)
				}
				if p.secret && !strings.Contains(out, "password") {
					t.Errorf("%s lost the secret's key: %s", how, out)
				}
				if p.public && !strings.Contains(out, "pub-value") {
					t.Errorf("%s lost the public values: %s", how, out)
				}
			}
		})
	}
}

// TestSecretsNeverPrint: a Secrets map shows its keys and never a value in every form a log line
// may take: fmt's verbs, encoding/json, and zap's Any and Reflect (zap finds the redacted String
// or MarshalJSON; the contract has no zap-specific method).
func TestSecretsNeverPrint(t *testing.T) {
	s := driver.Secrets{"password": printCanary, "token": printCanary + "2"}
	var logged bytes.Buffer
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&logged), zapcore.DebugLevel))
	logger.Info("call", zap.Any("secrets", s), zap.Reflect("reflected", s), zap.Any("pointer", &s))
	js, err := json.Marshal(map[string]any{"s": s})
	if err != nil {
		t.Fatal(err)
	}
	forms := []string{logged.String(), string(js)}
	for _, verb := range []string{"%v", "%+v", "%s", "%#v", "%q"} {
		forms = append(forms, fmt.Sprintf(verb, s))
	}
	for _, form := range forms {
		if strings.Contains(form, printCanary) {
			t.Errorf("a secret value printed: %s", form)
		}
		if !strings.Contains(form, "password") {
			t.Errorf("the key is gone: %s", form)
		}
	}
}
