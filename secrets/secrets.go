package secrets

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Placeholder replaces every secret value in redacted output. It is the
// string csi-lib-utils' protosanitizer uses, so log scrapers that already
// know it keep working.
const Placeholder = "***stripped***"

// Field-option extension numbers that mark a field as sensitive.
const (
	csiSecretNumber  = 1059 // csi.v1.csi_secret
	vgSecretNumber   = 1101 // volumegroup.vg_csi_secret
	cosiSecretNumber = 1115 // sigs.k8s.io.cosi.v1alpha2.cosi_secret
)

// defaultSensitive lists, by full field name, the credential fields of the COSI versions
// known today; cosiCredential recognises the same fields in COSI versions to come. Full names
// are used so that the generated packages need not be linked in: a name that never resolves
// costs one map entry.
var defaultSensitive = []protoreflect.FullName{
	// COSI v1alpha1: DriverGrantBucketAccessResponse.credentials maps a protocol name to
	// CredentialDetails, whose secrets map holds the keys.
	"cosi.v1alpha1.CredentialDetails.secrets",
	// COSI v1alpha2: DriverGrantBucketAccessResponse.credentials is a CredentialInfo holding
	// one of these per protocol.
	"sigs.k8s.io.cosi.v1alpha2.S3CredentialInfo.access_key_id",
	"sigs.k8s.io.cosi.v1alpha2.S3CredentialInfo.access_secret_key",
	"sigs.k8s.io.cosi.v1alpha2.AzureCredentialInfo.access_token",
	"sigs.k8s.io.cosi.v1alpha2.GcsCredentialInfo.access_id",
	"sigs.k8s.io.cosi.v1alpha2.GcsCredentialInfo.access_secret",
	"sigs.k8s.io.cosi.v1alpha2.GcsCredentialInfo.private_key_name",
}

// cosiCredentialFields are COSI's credential fields by message and field name. COSI annotates
// none of them, and each API version lives in a package of its own, so listing full names
// alone would leave a new version's keys in clear until someone noticed: any message of a COSI
// package with one of these names has these fields secret.
var cosiCredentialFields = map[protoreflect.Name][]protoreflect.Name{
	"CredentialDetails":   {"secrets"},
	"S3CredentialInfo":    {"access_key_id", "access_secret_key"},
	"AzureCredentialInfo": {"access_token"},
	"GcsCredentialInfo":   {"access_id", "access_secret", "private_key_name"},
}

// cosiCredential reports whether fd is a credential field of a COSI message (cosi.* or
// sigs.k8s.io.cosi.*, any version).
func cosiCredential(fd protoreflect.FieldDescriptor) bool {
	md, ok := fd.Parent().(protoreflect.MessageDescriptor)
	if !ok || fd.IsExtension() {
		return false
	}
	names, ok := cosiCredentialFields[md.Name()]
	if !ok || !slices.Contains(names, fd.Name()) {
		return false
	}
	pkg := string(md.ParentFile().Package())
	return strings.HasPrefix(pkg, "cosi.") || strings.HasPrefix(pkg, "sigs.k8s.io.cosi.")
}

// registry is one immutable set of sensitive fields together with the caches derived from it.
// builtin is the library's own; a Redactor built WithSecretFields has one of its own.
type registry struct {
	marked map[protoreflect.FullName]struct{}
	fields sync.Map // protoreflect.FieldDescriptor -> bool
	plans  sync.Map // protoreflect.MessageDescriptor -> *plan
}

// builtin backs every package-level function and the Redactors without extra fields. Its set
// never changes, so a cached answer never goes stale.
var builtin = newRegistry(defaultSensitive)

func newRegistry(lists ...[]protoreflect.FullName) *registry {
	m := make(map[protoreflect.FullName]struct{})
	for _, l := range lists {
		for _, k := range l {
			m[k] = struct{}{}
		}
	}
	return &registry{marked: m}
}

// with returns a new registry, with empty caches, of the fields of r and those named.
func (r *registry) with(fields []protoreflect.FullName) *registry {
	return newRegistry(slices.Collect(maps.Keys(r.marked)), fields)
}

// IsSecretField reports whether the value of fd must never be shown. It is
// the one definition of "secret" for every wire package csikit serves, so
// redaction, scrubbing and request fingerprints agree: a field is secret when
// it carries one of the secret options (csi.v1.csi_secret = 1059,
// volumegroup.vg_csi_secret = 1101, COSI's cosi_secret = 1115; recognised
// with or without their Go packages linked in), or when it is a COSI credential
// field (CredentialDetails.secrets, S3CredentialInfo.access_key_id and
// access_secret_key, AzureCredentialInfo.access_token, GcsCredentialInfo
// access_id, access_secret and private_key_name, in any COSI version's
// package). The set is fixed: a Redactor built WithSecretFields adds
// fields for itself alone (see Redactor.IsSecretField). Mount options are
// not secret fields as a whole: only their values are (see Values). The
// answer is cached per descriptor.
func IsSecretField(fd protoreflect.FieldDescriptor) bool {
	if fd == nil {
		return false
	}
	return builtin.isSecret(fd)
}

func (r *registry) isSecret(fd protoreflect.FieldDescriptor) bool {
	if v, ok := r.fields.Load(fd); ok {
		return v.(bool)
	}
	_, marked := r.marked[fd.FullName()]
	secret := marked || hasSecretOption(fd) || cosiCredential(fd)
	r.fields.Store(fd, secret)
	return secret
}

// hasSecretOption looks for the secret options on fd. The option is found
// either as a resolved extension (its Go package is linked in, so the
// options message knows it) or, when the extension is not registered, as a
// raw unknown varint on the options message.
func hasSecretOption(fd protoreflect.FieldDescriptor) bool {
	opts := fd.Options()
	if opts == nil {
		return false
	}
	om := opts.ProtoReflect()
	if !om.IsValid() {
		return false
	}
	found := false
	om.Range(func(xd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if xd.IsExtension() && isSecretExtension(xd) && xd.Kind() == protoreflect.BoolKind &&
			xd.Cardinality() != protoreflect.Repeated && v.Bool() {
			found = true
		}
		return !found
	})
	if found {
		return true
	}
	return unknownSecretOption(om.GetUnknown())
}

func isSecretExtension(xd protoreflect.FieldDescriptor) bool {
	switch xd.Number() {
	case csiSecretNumber:
		return xd.Name() == "csi_secret"
	case vgSecretNumber:
		return xd.Name() == "vg_csi_secret"
	case cosiSecretNumber:
		return xd.Name() == "cosi_secret"
	}
	return false
}

// unknownSecretOption scans raw option bytes for one of the secret option
// numbers set to a non-zero varint (true).
func unknownSecretOption(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if typ == protowire.VarintType &&
			(num == csiSecretNumber || num == vgSecretNumber || num == cosiSecretNumber) {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false
			}
			if v != 0 {
				return true
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return false
		}
		b = b[m:]
	}
	return false
}

// HasSecrets reports whether any field of md, or of any message type
// reachable from it (nested, repeated and map values included), is
// sensitive as IsSecretField says. It is computed once per message type.
func HasSecrets(md protoreflect.MessageDescriptor) bool {
	if md == nil {
		return false
	}
	return builtin.planFor(md).hasSecrets
}
