package rgwdriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/csikit/csikit/driver/bucket"
)

// A grant is statements in the bucket's policy naming the account's RGW user as principal. RGW
// evaluates a bucket policy before ACLs: an explicit Deny refuses, an Allow admits, and only
// when neither matches do ACLs decide. ACLs are the hole to close: a user owns the objects it
// uploads, and an object's owner may do anything with it (a write-only key reading back what it
// wrote, a revoked key reading what it left behind) and set its ACL (public-read, for anyone on
// the network), which policies alone, with only Allows, never see. So every bucket of the driver
// has, from its creation to its deletion, whatever its grants:
//
//   - a Deny of everything to every principal but the owner and the accounts granted now
//     (NotPrincipal), which anonymous requests, other RGW users and revoked accounts meet whatever
//     an object's ACL or owner says: with no grant it is the whole policy, never no policy;
//   - a Deny of PutObject carrying an ACL: a canned ACL other than "private" (the default) or any
//     x-amz-grant-* header. Pacific's RGW puts these condition keys in PutObject's environment
//     only: CopyObject, CreateMultipartUpload and browser-form POST carry an ACL no condition
//     sees, which the Deny above and the public access block (rgwdriver.go) leave inert, except
//     for UploadPartCopy (below);
//   - an Allow of PutObjectAcl to the owner, which no object's ACL gives it: a revoke resets the
//     ACLs of the objects the revoked account owns to the owner alone. Pacific's RGW checks the
//     source of an UploadPartCopy by the source object's ACL alone, never by its bucket's policy
//     or public access block, so without the reset a revoked key could copy what it uploaded
//     into a bucket it still has, and read it there;
//
// and per account, an Allow of its mode's actions and a Deny of every other object action, ACL
// writes included (Pacific's RGW ignores NotAction, so the Deny lists them).
//
// Statements this driver writes carry Sids derived from the user IDs, or fixed ones for the
// bucket's own, so it finds and replaces exactly its own, in a fixed order (anyone else's first,
// as they were), and a repeated grant writes nothing.

// readActions and writeActions are what each half of an access mode allows: reading lists and
// gets objects; writing puts and deletes them and runs multipart uploads (create, upload parts,
// complete: s3:PutObject; abort). uploadListActions, the listings of uploads in progress and of
// their parts, are reads: they show other writers' keys and each part's ETag, the MD5 of its
// data, against which a guess is confirmed offline. Only read-write has them.
var (
	readActions       = []string{"s3:GetBucketLocation", "s3:ListBucket", "s3:GetObject"}
	writeActions      = []string{"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"}
	uploadListActions = []string{"s3:ListMultipartUploadParts", "s3:ListBucketMultipartUploads"}
	// objectActions are every action on a bucket's objects and listings that some statement
	// could let in; an account is denied those its mode does not allow.
	objectActions = []string{"s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketVersions", "s3:GetObject", "s3:GetObjectVersion",
		"s3:GetObjectAcl", "s3:GetObjectVersionAcl", "s3:GetObjectTagging", "s3:GetObjectVersionTagging", "s3:GetObjectTorrent",
		"s3:GetObjectVersionTorrent", "s3:GetObjectRetention", "s3:GetObjectLegalHold",
		"s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts",
		"s3:ListBucketMultipartUploads", "s3:PutObjectAcl", "s3:PutObjectVersionAcl", "s3:PutObjectTagging",
		"s3:PutObjectVersionTagging", "s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging", "s3:PutObjectRetention",
		"s3:PutObjectLegalHold", "s3:BypassGovernanceRetention", "s3:RestoreObject"}
)

func modeActions(m bucket.AccessMode) ([]string, error) {
	switch m {
	case bucket.ReadWrite:
		return slices.Concat(readActions, writeActions, uploadListActions), nil
	case bucket.ReadOnly:
		return slices.Clone(readActions), nil
	case bucket.WriteOnly:
		return slices.Clone(writeActions), nil
	}
	return nil, fmt.Errorf("access mode %v", m)
}

// deniedActions are the object actions mode does not allow.
func deniedActions(allowed []string) []string {
	var out []string
	for _, a := range objectActions {
		if !slices.Contains(allowed, a) {
			out = append(out, a)
		}
	}
	return out
}

// Sids (letters and digits): sidPrefix and the user ID's hex digits for an account's Allow, with
// denySuffix for its Deny; strangersSid for the bucket's Deny of everyone else, aclSid and the
// keys of grantHeaders for its Denies of ACLs on upload. None of the fixed ones is 32 hex digits
// after the prefix, so none reads as an account's.
const (
	sidPrefix    = "csikitcosi"
	denySuffix   = "deny"
	strangersSid = sidPrefix + "strangers"
	aclSid       = sidPrefix + "noaclheader"
	ownerACLSid  = sidPrefix + "ownersetsacls"
)

// grantHeaders are the condition keys of the x-amz-grant-* headers, by the Sid of the Deny that
// refuses a PutObject carrying one. Each has a statement of its own: the keys of one condition
// must all match, and a PutObject with any one header must be refused.
var grantHeaders = map[string]string{
	sidPrefix + "nograntread":        "s3:x-amz-grant-read",
	sidPrefix + "nograntwrite":       "s3:x-amz-grant-write",
	sidPrefix + "nograntreadacp":     "s3:x-amz-grant-read-acp",
	sidPrefix + "nograntwriteacp":    "s3:x-amz-grant-write-acp",
	sidPrefix + "nograntfullcontrol": "s3:x-amz-grant-full-control",
}

func allowSid(uid string) string { return sidPrefix + strings.TrimPrefix(uid, hashedPrefix) }
func denySid(uid string) string  { return allowSid(uid) + denySuffix }

// uidOfAllowSid is the user ID of an account's Allow Sid, "" for any other Sid.
func uidOfAllowSid(sid string) string {
	hexPart, ok := strings.CutPrefix(sid, sidPrefix)
	if uid := hashedPrefix + hexPart; ok && validAccountUID(uid) {
		return uid
	}
	return ""
}

// ours says whether sid is one this driver writes.
func ours(sid string) bool {
	return bucketSid(sid) || uidOfAllowSid(sid) != "" || uidOfAllowSid(strings.TrimSuffix(sid, denySuffix)) != ""
}

// bucketSid says whether sid is one of the statements every bucket of the driver has once.
func bucketSid(sid string) bool {
	_, grant := grantHeaders[sid]
	return sid == strangersSid || sid == aclSid || sid == ownerACLSid || grant
}

type policyDoc struct {
	Version   string            `json:"Version"`
	ID        string            `json:"Id,omitempty"`
	Statement []json.RawMessage `json:"Statement"`
}

type statement struct {
	Sid          string                         `json:"Sid"`
	Effect       string                         `json:"Effect"`
	Principal    map[string][]string            `json:"Principal,omitempty"`
	NotPrincipal map[string][]string            `json:"NotPrincipal,omitempty"`
	Action       []string                       `json:"Action"`
	Resource     []string                       `json:"Resource"`
	Condition    map[string]map[string][]string `json:"Condition,omitempty"`
}

func userARN(uid string) string { return "arn:aws:iam:::user/" + uid }

func resources(bucketName string) []string {
	return []string{"arn:aws:s3:::" + bucketName, "arn:aws:s3:::" + bucketName + "/*"}
}

// errPolicy is a bucket policy this driver cannot read: it never overwrites what it cannot parse.
var errPolicy = errors.New("the bucket policy is not a JSON policy document this driver can edit")

// withGrant returns policy (a JSON policy document, or "" for none) with uid's statements set
// to mode on bucketName, the bucket's own statements (strangersSid naming owner and every granted
// account), and every statement of anyone else kept as it was. changed is false when that is
// policy as it stands, so a repeated grant writes nothing.
func withGrant(policy, bucketName, owner, uid string, mode bucket.AccessMode) (out string, changed bool, err error) {
	allowed, err := modeActions(mode)
	if err != nil {
		return "", false, err
	}
	return rewrite(policy, bucketName, owner, uid, allowed)
}

// withoutGrant returns policy without uid's statements. The bucket's own statements stay, so a
// bucket with no grant left has them alone: never no policy, which would leave its objects to
// their ACLs.
func withoutGrant(policy, bucketName, owner, uid string) (out string, changed bool, err error) {
	return rewrite(policy, bucketName, owner, uid, nil)
}

// closed returns policy with the bucket's own statements as they should be and every account's
// statements as they are: what a bucket no grant has touched yet, or one an earlier version of
// this driver left without a policy, is brought to.
func closed(policy, bucketName, owner string) (out string, changed bool, err error) {
	return rewrite(policy, bucketName, owner, "", nil)
}

// rewrite drops uid's statements (none when uid is "") and the bucket's own from policy, adds
// uid's for allowed (none when allowed is nil), and the bucket's own again, naming the accounts
// left.
func rewrite(policy, bucketName, owner, uid string, allowed []string) (out string, changed bool, err error) {
	doc, err := parsePolicy(policy)
	if err != nil {
		return "", false, err
	}
	var others []json.RawMessage
	accounts := map[string]json.RawMessage{} // allow Sid -> its statement
	denies := map[string]json.RawMessage{}   // allow Sid -> the account's Deny
	for _, s := range doc.Statement {
		sid, err := sidOf(s)
		if err != nil {
			return "", false, err
		}
		switch {
		case !ours(sid):
			others = append(others, s)
		case bucketSid(sid), uid != "" && (sid == allowSid(uid) || sid == denySid(uid)):
		case uidOfAllowSid(sid) != "":
			accounts[sid] = s
		default:
			denies[strings.TrimSuffix(sid, denySuffix)] = s
		}
	}
	res := resources(bucketName)
	if allowed != nil {
		a, _ := json.Marshal(statement{Sid: allowSid(uid), Effect: "Allow", Principal: map[string][]string{"AWS": {userARN(uid)}},
			Action: allowed, Resource: res})
		d, _ := json.Marshal(statement{Sid: denySid(uid), Effect: "Deny", Principal: map[string][]string{"AWS": {userARN(uid)}},
			Action: deniedActions(allowed), Resource: res})
		accounts[allowSid(uid)], denies[allowSid(uid)] = a, d
	}
	doc.Statement = others
	admitted := []string{userARN(owner)}
	for _, sid := range slices.Sorted(maps.Keys(accounts)) {
		doc.Statement = append(doc.Statement, accounts[sid])
		if d, ok := denies[sid]; ok {
			doc.Statement = append(doc.Statement, d)
		}
		admitted = append(admitted, userARN(uidOfAllowSid(sid)))
	}
	doc.Statement = append(doc.Statement, bucketStatements(bucketName, owner, admitted)...)
	b, err := json.Marshal(doc)
	if err != nil {
		return "", false, err
	}
	return string(b), string(b) != policy, nil
}

// bucketStatements are the statements every bucket of the driver has once: the Deny of everyone
// but admitted, the Denies of PutObject carrying an ACL, and the owner's Allow of ACL writes.
func bucketStatements(bucketName, owner string, admitted []string) []json.RawMessage {
	everyone := map[string][]string{"AWS": {"*"}}
	objects := []string{"arn:aws:s3:::" + bucketName + "/*"}
	out := []statement{
		{Sid: strangersSid, Effect: "Deny", NotPrincipal: map[string][]string{"AWS": admitted}, Action: []string{"s3:*"},
			Resource: resources(bucketName)},
		// s3:x-amz-acl is "" in PutObject's environment when the header is absent. RGW reads a
		// list of values as "any of them", so "neither empty nor private" takes two operators.
		{Sid: aclSid, Effect: "Deny", Principal: everyone, Action: []string{"s3:PutObject"}, Resource: objects,
			Condition: map[string]map[string][]string{"StringNotEquals": {"s3:x-amz-acl": {""}},
				"StringNotLike": {"s3:x-amz-acl": {"private"}}}},
	}
	for _, sid := range slices.Sorted(maps.Keys(grantHeaders)) {
		// The key is in the environment only when its header is in the request.
		out = append(out, statement{Sid: sid, Effect: "Deny", Principal: everyone, Action: []string{"s3:PutObject"}, Resource: objects,
			Condition: map[string]map[string][]string{"StringLike": {grantHeaders[sid]: {"*"}}}})
	}
	out = append(out, statement{Sid: ownerACLSid, Effect: "Allow", Principal: map[string][]string{"AWS": {userARN(owner)}},
		Action: []string{"s3:PutObjectAcl"}, Resource: objects})
	raw := make([]json.RawMessage, len(out))
	for i, s := range out {
		raw[i], _ = json.Marshal(s) // strings, slices and maps of strings: cannot fail
	}
	return raw
}

// accountsIn lists the user IDs of the accounts policy grants anything, in order.
func accountsIn(policy string) ([]string, error) {
	doc, err := parsePolicy(policy)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, s := range doc.Statement {
		sid, err := sidOf(s)
		if err != nil {
			return nil, err
		}
		if uid := uidOfAllowSid(sid); uid != "" {
			seen[uid] = true
		} else if uid := uidOfAllowSid(strings.TrimSuffix(sid, denySuffix)); uid != "" {
			seen[uid] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

func parsePolicy(policy string) (policyDoc, error) {
	if policy == "" {
		return policyDoc{Version: "2012-10-17"}, nil
	}
	var doc policyDoc
	if err := json.Unmarshal([]byte(policy), &doc); err != nil || doc.Version == "" {
		return policyDoc{}, errPolicy
	}
	return doc, nil
}

func sidOf(raw json.RawMessage) (string, error) {
	var s struct {
		Sid string `json:"Sid"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errPolicy
	}
	return s.Sid, nil
}
