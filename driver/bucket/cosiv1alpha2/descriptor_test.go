package cosiv1alpha2_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	v1alpha2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

const (
	wantPath    = "csikit/cosi/v1alpha2/cosi.proto"
	wantPackage = "sigs.k8s.io.cosi.v1alpha2"
)

// file is the descriptor of cosi.proto as linked into this binary.
func file() protoreflect.FileDescriptor {
	return v1alpha2.File_csikit_cosi_v1alpha2_cosi_proto
}

// TestRegisteredFile pins the path the file is registered under, its package, its go_package,
// and the full names of its services, methods and message types, as a peer process or a
// reflection client sees them.
func TestRegisteredFile(t *testing.T) {
	fd := file()
	if got := fd.Path(); got != wantPath {
		t.Errorf("file path = %q, want %q", got, wantPath)
	}
	if got := fd.Package(); got != wantPackage {
		t.Errorf("package = %q, want %q", got, wantPackage)
	}
	if got := fd.Syntax(); got != protoreflect.Proto3 {
		t.Errorf("syntax = %v, want proto3", got)
	}
	if got, want := protodesc.ToFileDescriptorProto(fd).GetOptions().GetGoPackage(),
		"github.com/csikit/csikit/driver/bucket/cosiv1alpha2;cosiv1alpha2"; got != want {
		t.Errorf("go_package = %q, want %q", got, want)
	}

	reg, err := protoregistry.GlobalFiles.FindFileByPath(wantPath)
	if err != nil {
		t.Fatalf("GlobalFiles.FindFileByPath(%q): %v", wantPath, err)
	}
	if reg != fd {
		t.Errorf("the file registered under %q is not this package's", wantPath)
	}

	// The exact messages of the file, by full name, each resolvable in the global registries
	// to a Go type of this package.
	wantMessages := []protoreflect.FullName{
		"sigs.k8s.io.cosi.v1alpha2.AccessMode",
		"sigs.k8s.io.cosi.v1alpha2.AuthenticationType",
		"sigs.k8s.io.cosi.v1alpha2.AzureBucketInfo",
		"sigs.k8s.io.cosi.v1alpha2.AzureCredentialInfo",
		"sigs.k8s.io.cosi.v1alpha2.CredentialInfo",
		"sigs.k8s.io.cosi.v1alpha2.DriverCreateBucketRequest",
		"sigs.k8s.io.cosi.v1alpha2.DriverCreateBucketRequest.ParametersEntry",
		"sigs.k8s.io.cosi.v1alpha2.DriverCreateBucketResponse",
		"sigs.k8s.io.cosi.v1alpha2.DriverDeleteBucketRequest",
		"sigs.k8s.io.cosi.v1alpha2.DriverDeleteBucketRequest.ParametersEntry",
		"sigs.k8s.io.cosi.v1alpha2.DriverDeleteBucketResponse",
		"sigs.k8s.io.cosi.v1alpha2.DriverGetExistingBucketRequest",
		"sigs.k8s.io.cosi.v1alpha2.DriverGetExistingBucketRequest.ParametersEntry",
		"sigs.k8s.io.cosi.v1alpha2.DriverGetExistingBucketResponse",
		"sigs.k8s.io.cosi.v1alpha2.DriverGetInfoRequest",
		"sigs.k8s.io.cosi.v1alpha2.DriverGetInfoResponse",
		"sigs.k8s.io.cosi.v1alpha2.DriverGrantBucketAccessRequest",
		"sigs.k8s.io.cosi.v1alpha2.DriverGrantBucketAccessRequest.AccessedBucket",
		"sigs.k8s.io.cosi.v1alpha2.DriverGrantBucketAccessRequest.ParametersEntry",
		"sigs.k8s.io.cosi.v1alpha2.DriverGrantBucketAccessResponse",
		"sigs.k8s.io.cosi.v1alpha2.DriverGrantBucketAccessResponse.BucketInfo",
		"sigs.k8s.io.cosi.v1alpha2.DriverRevokeBucketAccessRequest",
		"sigs.k8s.io.cosi.v1alpha2.DriverRevokeBucketAccessRequest.AccessedBucket",
		"sigs.k8s.io.cosi.v1alpha2.DriverRevokeBucketAccessRequest.ParametersEntry",
		"sigs.k8s.io.cosi.v1alpha2.DriverRevokeBucketAccessResponse",
		"sigs.k8s.io.cosi.v1alpha2.GcsBucketInfo",
		"sigs.k8s.io.cosi.v1alpha2.GcsCredentialInfo",
		"sigs.k8s.io.cosi.v1alpha2.ObjectProtocol",
		"sigs.k8s.io.cosi.v1alpha2.ObjectProtocolAndBucketInfo",
		"sigs.k8s.io.cosi.v1alpha2.S3AddressingStyle",
		"sigs.k8s.io.cosi.v1alpha2.S3BucketInfo",
		"sigs.k8s.io.cosi.v1alpha2.S3CredentialInfo",
	}
	var got []protoreflect.FullName
	for md := range allMessages(fd.Messages()) {
		got = append(got, md.FullName())
	}
	slices.Sort(got)
	if !slices.Equal(got, wantMessages) {
		t.Errorf("messages:\n got %q\nwant %q", got, wantMessages)
	}
	for _, name := range wantMessages {
		if strings.HasSuffix(string(name), "Entry") {
			continue // map entries have no Go type of their own
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
		if err != nil {
			t.Errorf("GlobalTypes.FindMessageByName(%q): %v", name, err)
			continue
		}
		if got := mt.Descriptor().ParentFile().Path(); got != wantPath {
			t.Errorf("%s resolves to a type of file %q, want %q", name, got, wantPath)
		}
	}

	// Services and methods, with their gRPC method paths as the generated code uses them.
	type method struct {
		service, name, in, out, path string
	}
	wantMethods := []method{
		{"Identity", "DriverGetInfo", "DriverGetInfoRequest", "DriverGetInfoResponse", v1alpha2.Identity_DriverGetInfo_FullMethodName},
		{"Provisioner", "DriverCreateBucket", "DriverCreateBucketRequest", "DriverCreateBucketResponse", v1alpha2.Provisioner_DriverCreateBucket_FullMethodName},
		{"Provisioner", "DriverGetExistingBucket", "DriverGetExistingBucketRequest", "DriverGetExistingBucketResponse", v1alpha2.Provisioner_DriverGetExistingBucket_FullMethodName},
		{"Provisioner", "DriverDeleteBucket", "DriverDeleteBucketRequest", "DriverDeleteBucketResponse", v1alpha2.Provisioner_DriverDeleteBucket_FullMethodName},
		{"Provisioner", "DriverGrantBucketAccess", "DriverGrantBucketAccessRequest", "DriverGrantBucketAccessResponse", v1alpha2.Provisioner_DriverGrantBucketAccess_FullMethodName},
		{"Provisioner", "DriverRevokeBucketAccess", "DriverRevokeBucketAccessRequest", "DriverRevokeBucketAccessResponse", v1alpha2.Provisioner_DriverRevokeBucketAccess_FullMethodName},
	}
	var gotMethods []method
	for i := range fd.Services().Len() {
		sd := fd.Services().Get(i)
		if got, want := sd.FullName(), protoreflect.FullName(wantPackage).Append(sd.Name()); got != want {
			t.Errorf("service %s: full name %s", want, got)
		}
		for j := range sd.Methods().Len() {
			m := sd.Methods().Get(j)
			if m.IsStreamingClient() || m.IsStreamingServer() {
				t.Errorf("%s is streaming; every COSI RPC is unary", m.FullName())
			}
			gotMethods = append(gotMethods, method{
				service: string(sd.Name()),
				name:    string(m.Name()),
				in:      string(m.Input().Name()),
				out:     string(m.Output().Name()),
				path:    "/" + string(sd.FullName()) + "/" + string(m.Name()),
			})
		}
	}
	if !slices.Equal(gotMethods, wantMethods) {
		t.Errorf("methods:\n got %+v\nwant %+v", gotMethods, wantMethods)
	}
	if got := v1alpha2.Identity_ServiceDesc.ServiceName; got != "sigs.k8s.io.cosi.v1alpha2.Identity" {
		t.Errorf("Identity_ServiceDesc.ServiceName = %q", got)
	}
	if got := v1alpha2.Provisioner_ServiceDesc.ServiceName; got != "sigs.k8s.io.cosi.v1alpha2.Provisioner" {
		t.Errorf("Provisioner_ServiceDesc.ServiceName = %q", got)
	}
	if got := v1alpha2.Identity_ServiceDesc.Metadata; got != wantPath {
		t.Errorf("Identity_ServiceDesc.Metadata = %v, want %q", got, wantPath)
	}
}

// TestNoExtensionsOrOptions proves the file declares no extension and sets no option anywhere:
// the extend blocks of the draft (cosi_secret = 1115, alpha_* = 1116) must stay out, or linking
// beside COSI v1alpha1's bindings panics at start-up. A set option would show up as a known or
// unknown field on some options message.
func TestNoExtensionsOrOptions(t *testing.T) {
	fd := file()
	if n := fd.Extensions().Len(); n != 0 {
		t.Errorf("file declares %d extensions, want 0", n)
	}
	if n := fd.Imports().Len(); n != 0 {
		t.Errorf("file imports %d files, want none (descriptor.proto was only needed by the extend blocks)", n)
	}
	check := func(what string, opts protoreflect.ProtoMessage) {
		t.Helper()
		m := opts.ProtoReflect()
		if !m.IsValid() {
			return
		}
		m.Range(func(f protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
			if f.FullName() != "google.protobuf.MessageOptions.map_entry" && f.FullName() != "google.protobuf.FileOptions.go_package" {
				t.Errorf("%s sets option %s", what, f.FullName())
			}
			return true
		})
		if len(m.GetUnknown()) != 0 {
			t.Errorf("%s carries unknown (extension) options %x", what, m.GetUnknown())
		}
	}
	check(string(fd.Path()), fd.Options())
	for md := range allMessages(fd.Messages()) {
		check(string(md.FullName()), md.Options())
		if n := md.Extensions().Len(); n != 0 {
			t.Errorf("%s declares %d extensions", md.FullName(), n)
		}
		for i := range md.Fields().Len() {
			f := md.Fields().Get(i)
			check(string(f.FullName()), f.Options())
		}
	}
	for i := range fd.Services().Len() {
		sd := fd.Services().Get(i)
		check(string(sd.FullName()), sd.Options())
		for j := range sd.Methods().Len() {
			m := sd.Methods().Get(j)
			check(string(m.FullName()), m.Options())
		}
	}
}

// field is one pinned field: its number, cardinality and type. typ is the kind for scalars, the
// full name of the message or enum otherwise, and "map<string,string>" for the parameters maps.
type field struct {
	number protoreflect.FieldNumber
	typ    string
	list   bool
}

// wireFields is DESIGN.md section 5: every field of every v1alpha2 message, by message full
// name (relative to the package) and field name. These numbers are wire facts shared with the
// sidecar; changing one breaks every deployed driver.
var wireFields = map[string]map[string]field{
	"DriverGetInfoRequest": {},
	"DriverGetInfoResponse": {
		"name":                {1, "string", false},
		"supported_protocols": {2, "ObjectProtocol", true},
	},
	"ObjectProtocol": {
		"type": {1, "ObjectProtocol.Type", false},
	},
	"ObjectProtocolAndBucketInfo": {
		"s3":    {1, "S3BucketInfo", false},
		"azure": {2, "AzureBucketInfo", false},
		"gcs":   {3, "GcsBucketInfo", false},
	},
	"CredentialInfo": {
		"s3":    {1, "S3CredentialInfo", false},
		"azure": {2, "AzureCredentialInfo", false},
		"gcs":   {3, "GcsCredentialInfo", false},
	},
	"S3BucketInfo": {
		"bucket_id":        {1, "string", false},
		"endpoint":         {2, "string", false},
		"region":           {3, "string", false},
		"addressing_style": {4, "S3AddressingStyle", false},
	},
	"S3CredentialInfo": {
		"access_key_id":     {1, "string", false},
		"access_secret_key": {2, "string", false},
	},
	"S3AddressingStyle": {
		"style": {1, "S3AddressingStyle.Style", false},
	},
	"AzureBucketInfo": {
		"storage_account": {1, "string", false},
	},
	"AzureCredentialInfo": {
		"access_token":     {1, "string", false},
		"expiry_timestamp": {2, "string", false},
	},
	"GcsBucketInfo": {
		"project_id":  {1, "string", false},
		"bucket_name": {2, "string", false},
	},
	"GcsCredentialInfo": {
		"access_id":        {1, "string", false},
		"access_secret":    {2, "string", false},
		"private_key_name": {3, "string", false},
		"service_account":  {4, "string", false},
	},
	"AuthenticationType": {
		"type": {1, "AuthenticationType.Type", false},
	},
	"AccessMode": {
		"mode": {1, "AccessMode.Mode", false},
	},
	"DriverCreateBucketRequest": {
		"name":       {1, "string", false},
		"protocols":  {2, "ObjectProtocol", true},
		"parameters": {4, "map<string,string>", false},
	},
	"DriverCreateBucketResponse": {
		"bucket_id": {1, "string", false},
		"protocols": {2, "ObjectProtocolAndBucketInfo", false},
	},
	"DriverGetExistingBucketRequest": {
		"existing_bucket_id": {1, "string", false},
		"protocols":          {2, "ObjectProtocol", true},
		"parameters":         {4, "map<string,string>", false},
	},
	"DriverGetExistingBucketResponse": {
		"bucket_id": {1, "string", false},
		"protocols": {2, "ObjectProtocolAndBucketInfo", false},
	},
	"DriverDeleteBucketRequest": {
		"bucket_id":  {1, "string", false},
		"parameters": {4, "map<string,string>", false},
	},
	"DriverDeleteBucketResponse": {},
	"DriverGrantBucketAccessRequest": {
		"account_name":         {1, "string", false},
		"protocol":             {2, "ObjectProtocol", false},
		"authentication_type":  {3, "AuthenticationType", false},
		"service_account_name": {4, "string", false},
		"parameters":           {5, "map<string,string>", false},
		"buckets":              {6, "DriverGrantBucketAccessRequest.AccessedBucket", true},
	},
	"DriverGrantBucketAccessRequest.AccessedBucket": {
		"bucket_id":   {1, "string", false},
		"access_mode": {2, "AccessMode", false},
	},
	"DriverGrantBucketAccessResponse": {
		"account_id":  {1, "string", false},
		"buckets":     {2, "DriverGrantBucketAccessResponse.BucketInfo", true},
		"credentials": {3, "CredentialInfo", false},
	},
	"DriverGrantBucketAccessResponse.BucketInfo": {
		"bucket_id":   {1, "string", false},
		"bucket_info": {2, "ObjectProtocolAndBucketInfo", false},
	},
	"DriverRevokeBucketAccessRequest": {
		"account_id":           {1, "string", false},
		"protocol":             {2, "ObjectProtocol", false},
		"authentication_type":  {3, "AuthenticationType", false},
		"service_account_name": {4, "string", false},
		"parameters":           {5, "map<string,string>", false},
		"buckets":              {6, "DriverRevokeBucketAccessRequest.AccessedBucket", true},
	},
	"DriverRevokeBucketAccessRequest.AccessedBucket": {
		"bucket_id": {1, "string", false},
	},
	"DriverRevokeBucketAccessResponse": {},
}

// wireEnums pins every enum: value name -> number. Each is nested in a wrapper message and has
// UNKNOWN = 0, so an unset wrapper is distinguishable from every real value.
var wireEnums = map[string]map[string]protoreflect.EnumNumber{
	"ObjectProtocol.Type":     {"UNKNOWN": 0, "S3": 1, "AZURE": 2, "GCS": 3},
	"S3AddressingStyle.Style": {"UNKNOWN": 0, "PATH": 1, "VIRTUAL": 2},
	"AuthenticationType.Type": {"UNKNOWN": 0, "KEY": 1, "SERVICE_ACCOUNT": 2},
	"AccessMode.Mode":         {"UNKNOWN": 0, "READ_WRITE": 1, "READ_ONLY": 2, "WRITE_ONLY": 3},
}

// TestWireFieldNumbers walks every message descriptor of the file and compares each field's
// number, cardinality and type with wireFields, in both directions: no pinned field is missing
// and no unpinned field exists.
func TestWireFieldNumbers(t *testing.T) {
	fd := file()
	seen := map[string]bool{}
	for md := range allMessages(fd.Messages()) {
		if md.IsMapEntry() {
			continue
		}
		name := relName(md.FullName())
		seen[name] = true
		want, ok := wireFields[name]
		if !ok {
			t.Errorf("message %s is not pinned in wireFields", name)
			continue
		}
		if n := md.Oneofs().Len(); n != 0 {
			t.Errorf("%s has %d oneofs; the pinned wire has none", name, n)
		}
		got := map[string]bool{}
		for i := range md.Fields().Len() {
			f := md.Fields().Get(i)
			got[string(f.Name())] = true
			w, ok := want[string(f.Name())]
			if !ok {
				t.Errorf("%s.%s = %d is not in the pinned wire", name, f.Name(), f.Number())
				continue
			}
			t.Run(name+"."+string(f.Name()), func(t *testing.T) {
				if f.Number() != w.number {
					t.Errorf("number = %d, want %d", f.Number(), w.number)
				}
				if typ := fieldType(f); typ != w.typ {
					t.Errorf("type = %s, want %s", typ, w.typ)
				}
				if list := f.IsList(); list != w.list {
					t.Errorf("repeated = %v, want %v", list, w.list)
				}
				if f.HasPresence() && f.Kind() != protoreflect.MessageKind {
					t.Errorf("scalar has explicit presence (proto3 optional); the pinned wire has none")
				}
			})
		}
		for fname, w := range want {
			if !got[fname] {
				t.Errorf("%s.%s = %d is missing", name, fname, w.number)
			}
		}
	}
	for name := range wireFields {
		if !seen[name] {
			t.Errorf("pinned message %s is missing from the file", name)
		}
	}

	seenEnums := map[string]bool{}
	for ed := range allEnums(fd) {
		name := relName(ed.FullName())
		seenEnums[name] = true
		want, ok := wireEnums[name]
		if !ok {
			t.Errorf("enum %s is not pinned in wireEnums", name)
			continue
		}
		if _, nested := ed.Parent().(protoreflect.MessageDescriptor); !nested {
			t.Errorf("enum %s is not nested in its wrapper message", name)
		}
		got := map[string]protoreflect.EnumNumber{}
		for i := range ed.Values().Len() {
			v := ed.Values().Get(i)
			got[string(v.Name())] = v.Number()
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("enum %s = %v, want %v", name, got, want)
		}
	}
	for name := range wireEnums {
		if !seenEnums[name] {
			t.Errorf("pinned enum %s is missing from the file", name)
		}
	}

	// The Go constants a backend adapter will use, spot-checked against the same numbers.
	for _, c := range []struct {
		got  protoreflect.EnumNumber
		want protoreflect.EnumNumber
		name string
	}{
		{v1alpha2.ObjectProtocol_S3.Number(), 1, "ObjectProtocol_S3"},
		{v1alpha2.ObjectProtocol_GCS.Number(), 3, "ObjectProtocol_GCS"},
		{v1alpha2.S3AddressingStyle_VIRTUAL.Number(), 2, "S3AddressingStyle_VIRTUAL"},
		{v1alpha2.AuthenticationType_SERVICE_ACCOUNT.Number(), 2, "AuthenticationType_SERVICE_ACCOUNT"},
		{v1alpha2.AccessMode_READ_WRITE.Number(), 1, "AccessMode_READ_WRITE"},
		{v1alpha2.AccessMode_WRITE_ONLY.Number(), 3, "AccessMode_WRITE_ONLY"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// fieldType describes f's type the way wireFields does.
func fieldType(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return "map<" + fieldType(f.MapKey()) + "," + fieldType(f.MapValue()) + ">"
	case f.Message() != nil:
		return relName(f.Message().FullName())
	case f.Enum() != nil:
		return relName(f.Enum().FullName())
	default:
		return f.Kind().String()
	}
}

// relName strips the package from a full name.
func relName(n protoreflect.FullName) string {
	return strings.TrimPrefix(string(n), wantPackage+".")
}

// allMessages yields every message of the list, nested ones (map entries included) after their
// parent.
func allMessages(mds protoreflect.MessageDescriptors) func(func(protoreflect.MessageDescriptor) bool) {
	return func(yield func(protoreflect.MessageDescriptor) bool) {
		var walk func(protoreflect.MessageDescriptors) bool
		walk = func(mds protoreflect.MessageDescriptors) bool {
			for i := range mds.Len() {
				md := mds.Get(i)
				if !yield(md) || !walk(md.Messages()) {
					return false
				}
			}
			return true
		}
		walk(mds)
	}
}

// allEnums yields every enum of the file, top-level and nested.
func allEnums(fd protoreflect.FileDescriptor) func(func(protoreflect.EnumDescriptor) bool) {
	return func(yield func(protoreflect.EnumDescriptor) bool) {
		for i := range fd.Enums().Len() {
			if !yield(fd.Enums().Get(i)) {
				return
			}
		}
		for md := range allMessages(fd.Messages()) {
			for i := range md.Enums().Len() {
				if !yield(md.Enums().Get(i)) {
					return
				}
			}
		}
	}
}
