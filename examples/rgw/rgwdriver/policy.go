package rgwdriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/csikit/csikit/driver/bucket"
)

// A grant is a statement in the bucket's policy naming the account's RGW user as principal.
// RGW evaluates bucket policies for users who do not own the bucket: an Allow lets them in, and
// without one the bucket's private ACL keeps them out. Statements this driver writes carry a Sid
// derived from the user ID, so it finds and removes exactly its own and keeps any other an
// administrator added.

// readActions and writeActions are what each half of an access mode allows, as memorys3's
// authorisation table: reading lists and gets objects; writing puts and deletes them and runs
// multipart uploads (whose listings show keys, not data). Neither may change the bucket itself,
// its policy or ACLs: only the owner can, and the owner is this driver.
var (
	readActions  = []string{"s3:GetBucketLocation", "s3:ListBucket", "s3:GetObject"}
	writeActions = []string{"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
		"s3:ListMultipartUploadParts", "s3:ListBucketMultipartUploads"}
)

func modeActions(m bucket.AccessMode) ([]string, error) {
	switch m {
	case bucket.ReadWrite:
		return append(append([]string{}, readActions...), writeActions...), nil
	case bucket.ReadOnly:
		return readActions, nil
	case bucket.WriteOnly:
		return writeActions, nil
	}
	return nil, fmt.Errorf("access mode %v", m)
}

// sidPrefix starts the Sid of every statement this driver writes (Sids are letters and digits).
const sidPrefix = "csikitcosi"

// statementSid is the Sid of uid's statement: the prefix and the hex digits of the user ID.
func statementSid(uid string) string { return sidPrefix + strings.TrimPrefix(uid, hashedPrefix) }

type policyDoc struct {
	Version   string            `json:"Version"`
	ID        string            `json:"Id,omitempty"`
	Statement []json.RawMessage `json:"Statement"`
}

type statement struct {
	Sid       string              `json:"Sid"`
	Effect    string              `json:"Effect"`
	Principal map[string][]string `json:"Principal"`
	Action    []string            `json:"Action"`
	Resource  []string            `json:"Resource"`
}

// errPolicy is a bucket policy this driver cannot read: it never overwrites what it cannot parse.
var errPolicy = errors.New("the bucket policy is not a JSON policy document this driver can edit")

// withGrant returns policy (a JSON policy document, or "" for none) with uid's statement set to
// mode on bucketName, every other statement kept as it was. changed is false when policy had
// exactly that statement already, so a repeated grant writes nothing.
func withGrant(policy, bucketName, uid string, mode bucket.AccessMode) (out string, changed bool, err error) {
	actions, err := modeActions(mode)
	if err != nil {
		return "", false, err
	}
	st := statement{Sid: statementSid(uid), Effect: "Allow",
		Principal: map[string][]string{"AWS": {"arn:aws:iam:::user/" + uid}},
		Action:    actions,
		Resource:  []string{"arn:aws:s3:::" + bucketName, "arn:aws:s3:::" + bucketName + "/*"}}
	raw, err := json.Marshal(st)
	if err != nil {
		return "", false, err
	}
	doc, err := parsePolicy(policy)
	if err != nil {
		return "", false, err
	}
	kept := doc.Statement[:0]
	found := false
	for _, s := range doc.Statement {
		sid, err := sidOf(s)
		if err != nil {
			return "", false, err
		}
		if sid != st.Sid {
			kept = append(kept, s)
			continue
		}
		if !found && string(s) == string(raw) {
			found = true
			kept = append(kept, s)
		}
	}
	if found && len(kept) == len(doc.Statement) {
		return policy, false, nil
	}
	if !found {
		kept = append(kept, raw)
	}
	doc.Statement = kept
	b, err := json.Marshal(doc)
	return string(b), true, err
}

// withoutGrant returns policy without uid's statements; empty is true when none is left, for the
// caller to delete the policy rather than write one with no statement (which RGW refuses).
func withoutGrant(policy, uid string) (out string, changed, empty bool, err error) {
	if policy == "" {
		return "", false, true, nil
	}
	doc, err := parsePolicy(policy)
	if err != nil {
		return "", false, false, err
	}
	sid := statementSid(uid)
	kept := make([]json.RawMessage, 0, len(doc.Statement))
	for _, s := range doc.Statement {
		got, err := sidOf(s)
		if err != nil {
			return "", false, false, err
		}
		if got != sid {
			kept = append(kept, s)
		}
	}
	if len(kept) == len(doc.Statement) {
		return policy, false, len(kept) == 0, nil
	}
	doc.Statement = kept
	b, err := json.Marshal(doc)
	return string(b), true, len(kept) == 0, err
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
