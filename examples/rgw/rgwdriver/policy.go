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
// wrote) and set its ACL (public-read, for anyone on the network), which policies alone, with
// only Allows, never see. So the driver writes, for each bucket:
//
//   - per account, an Allow of its mode's actions and a Deny of every other object action
//     (Pacific's RGW ignores NotAction, so the Deny lists them);
//   - once, a Deny of everything to every principal but the owner and the granted accounts
//     (NotPrincipal), which anonymous requests and other RGW users meet whatever an object's
//     ACL says.
//
// Statements this driver writes carry Sids derived from the user IDs, so it finds and replaces
// exactly its own, in a fixed order (anyone else's first, as they were), and a repeated grant
// writes nothing.

// readActions and writeActions are what each half of an access mode allows, as memorys3's
// authorisation table: reading lists and gets objects; writing puts and deletes them and runs
// multipart uploads (whose listings show keys, not data).
var (
	readActions  = []string{"s3:GetBucketLocation", "s3:ListBucket", "s3:GetObject"}
	writeActions = []string{"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
		"s3:ListMultipartUploadParts", "s3:ListBucketMultipartUploads"}
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
		return append(slices.Clone(readActions), writeActions...), nil
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
// denySuffix for its Deny; strangersSid for the bucket's Deny of everyone else.
const (
	sidPrefix    = "csikitcosi"
	denySuffix   = "deny"
	strangersSid = sidPrefix + "strangers"
)

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
	return sid == strangersSid || uidOfAllowSid(sid) != "" || uidOfAllowSid(strings.TrimSuffix(sid, denySuffix)) != ""
}

type policyDoc struct {
	Version   string            `json:"Version"`
	ID        string            `json:"Id,omitempty"`
	Statement []json.RawMessage `json:"Statement"`
}

type statement struct {
	Sid          string              `json:"Sid"`
	Effect       string              `json:"Effect"`
	Principal    map[string][]string `json:"Principal,omitempty"`
	NotPrincipal map[string][]string `json:"NotPrincipal,omitempty"`
	Action       []string            `json:"Action"`
	Resource     []string            `json:"Resource"`
}

func userARN(uid string) string { return "arn:aws:iam:::user/" + uid }

func resources(bucketName string) []string {
	return []string{"arn:aws:s3:::" + bucketName, "arn:aws:s3:::" + bucketName + "/*"}
}

// errPolicy is a bucket policy this driver cannot read: it never overwrites what it cannot parse.
var errPolicy = errors.New("the bucket policy is not a JSON policy document this driver can edit")

// withGrant returns policy (a JSON policy document, or "" for none) with uid's statements set
// to mode on bucketName, the strangers' Deny naming owner and every granted account, and every
// statement of anyone else kept as it was. changed is false when that is policy as it stands,
// so a repeated grant writes nothing.
func withGrant(policy, bucketName, owner, uid string, mode bucket.AccessMode) (out string, changed bool, err error) {
	allowed, err := modeActions(mode)
	if err != nil {
		return "", false, err
	}
	out, changed, _, err = rewrite(policy, bucketName, owner, uid, allowed)
	return out, changed, err
}

// withoutGrant returns policy without uid's statements; empty is true when no statement is left,
// for the caller to delete the policy rather than write one with none (which RGW refuses).
func withoutGrant(policy, bucketName, owner, uid string) (out string, changed, empty bool, err error) {
	if policy == "" {
		return "", false, true, nil
	}
	return rewrite(policy, bucketName, owner, uid, nil)
}

// rewrite drops uid's statements and the strangers' Deny from policy, adds uid's for allowed
// (none when allowed is nil), and the strangers' Deny again when any account is left.
func rewrite(policy, bucketName, owner, uid string, allowed []string) (out string, changed, empty bool, err error) {
	doc, err := parsePolicy(policy)
	if err != nil {
		return "", false, false, err
	}
	var others []json.RawMessage
	accounts := map[string]json.RawMessage{} // allow Sid -> its statement
	denies := map[string]json.RawMessage{}   // allow Sid -> the account's Deny
	for _, s := range doc.Statement {
		sid, err := sidOf(s)
		if err != nil {
			return "", false, false, err
		}
		switch {
		case !ours(sid):
			others = append(others, s)
		case sid == strangersSid, sid == allowSid(uid), sid == denySid(uid):
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
	if len(accounts) > 0 {
		s, _ := json.Marshal(statement{Sid: strangersSid, Effect: "Deny", NotPrincipal: map[string][]string{"AWS": admitted},
			Action: []string{"s3:*"}, Resource: res})
		doc.Statement = append(doc.Statement, s)
	}
	if len(doc.Statement) == 0 {
		return "", policy != "", true, nil
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", false, false, err
	}
	return string(b), string(b) != policy, false, nil
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
