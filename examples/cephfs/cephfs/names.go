package cephfs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/csikit/csikit/driver"
)

// reservedPrefix starts every name the driver derives rather than takes from the CO: hashed
// names and the temporary snapshots of volume clones. A CO name that starts with it is always
// hashed, so it can never map onto a derived name.
const reservedPrefix = "csikit-"

// hashedPrefix starts the subvolume or snapshot name of a CSI name that is not itself a safe
// Ceph name.
const hashedPrefix = reservedPrefix + "h-"

// cloneSnapshotPrefix starts the snapshot a volume clone is taken from; it is removed once the
// clone is complete, and listings never show it.
const cloneSnapshotPrefix = reservedPrefix + "clone-"

// maxPlainName is the longest CSI name used as it is: Kubernetes' "pvc-<uuid>" (40 bytes) and
// "snapshot-<uuid>" (45) fit.
const maxPlainName = 64

// CephName maps a CSI volume or snapshot name to the name of its subvolume or subvolume snapshot,
// injectively and with no table: the name itself when it is a safe Ceph name (ASCII letters,
// digits, '-' and '_', starting with a letter or digit, at most 64 bytes) that does not start
// with "csikit-"; otherwise "csikit-h-" and 32 hex digits of its SHA-256. Two different names
// give different results unless SHA-256 collides in 128 bits, and even then the CSI name stored
// with each subvolume tells them apart (ALREADY_EXISTS, never the other one's volume).
func CephName(csiName string) string {
	if !strings.HasPrefix(csiName, reservedPrefix) && safeName(csiName) {
		return csiName
	}
	sum := sha256.Sum256([]byte(csiName))
	return hashedPrefix + hex.EncodeToString(sum[:16])
}

func safeName(s string) bool {
	if s == "" || len(s) > maxPlainName {
		return false
	}
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || r != '-' && r != '_') {
			return false
		}
	}
	return true
}

// snapshotIDSeparator joins a snapshot's subvolume and name in its ID; CephName never yields it.
const snapshotIDSeparator = "@"

func snapshotID(subvolume, snapshot string) string {
	return subvolume + snapshotIDSeparator + snapshot
}

// parseVolumeID checks that id is a name CephName could have given. Any other ID names no volume
// of this driver (NOT_FOUND), and never reaches Ceph as a name it could misread.
func parseVolumeID(id string) (string, error) {
	if !issued(id) {
		return "", fmt.Errorf("volume ID %q: no volume of this driver has such an ID: %w", id, driver.ErrNotFound)
	}
	return id, nil
}

// parseSnapshotID splits a snapshot ID into its subvolume and snapshot names.
func parseSnapshotID(id string) (subvolume, snapshot string, err error) {
	sv, snap, ok := strings.Cut(id, snapshotIDSeparator)
	if !ok || !issued(sv) || !issued(snap) {
		return "", "", fmt.Errorf("snapshot ID %q: no snapshot of this driver has such an ID: %w", id, driver.ErrNotFound)
	}
	return sv, snap, nil
}

// issued reports whether CephName can return s.
func issued(s string) bool {
	return safeName(s) && !strings.HasPrefix(s, reservedPrefix) || isHashed(s)
}

func isHashed(s string) bool {
	rest, ok := strings.CutPrefix(s, hashedPrefix)
	if !ok || len(rest) != 32 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil && strings.ToLower(rest) == rest
}
