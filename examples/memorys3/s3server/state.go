package s3server

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketRecord marks a bucket as created by this server.
type bucketRecord struct {
	Created time.Time `json:"created"`
	// CreatedFor is the name the bucket was created for (CreateBucketFor's createdFor, the
	// COSI bucket name): a create for another name that maps to this bucket is refused. Empty
	// in records written before it existed; the first create after the upgrade fills it in.
	CreatedFor string `json:"created_for,omitempty"`
	// Deleting says DeleteBucket has begun: no grant names the bucket any more, and its
	// uploads, objects and store bucket may be partly gone. A retried DeleteBucket, a
	// CreateBucket of the name or the next start-up finishes the deletion.
	Deleting bool `json:"deleting,omitempty"`

	// gen tells this record from an earlier one of the same name, within the process: each
	// record loaded or created gets the next number (see keyring.gen). Not persisted: no
	// request outlives the process.
	gen uint64
}

// accountRecord is an account as persisted: its name, keys and grants. The secret is stored
// in clear in the state file (mode 0600): the same keys must be answered after a restart, and
// a one-way hash could not give them back.
type accountRecord struct {
	Name        string      `json:"name"`
	Credentials Credentials `json:"credentials"`
	// Buckets are the grants in force: what the keys may reach now. A deleted bucket leaves
	// it; an account with none does not authenticate at all.
	Buckets map[string]Mode `json:"buckets"`
	// Granted is what the grants asked for, less what was revoked; a deleted bucket stays in
	// it, so that repeating the grant is recognised as the same grant. Records written before
	// it existed are loaded with Granted = Buckets.
	Granted map[string]Mode `json:"granted"`
}

func (a accountRecord) clone() accountRecord {
	a.Buckets = maps.Clone(a.Buckets)
	a.Granted = maps.Clone(a.Granted)
	return a
}

func (a accountRecord) account(id string) *Account {
	return &Account{ID: id, Name: a.Name, Credentials: a.Credentials, Buckets: maps.Clone(a.Buckets), Granted: maps.Clone(a.Granted)}
}

// change is one atomic update of the recorded state.
type change struct {
	putBuckets  map[string]bucketRecord
	delBuckets  []string
	putAccounts map[string]accountRecord
	delAccounts []string
}

// state persists bucket ownership and accounts. memoryState forgets them at exit;
// boltState keeps them in a bbolt file, each change in one durable transaction.
type state interface {
	load() (map[string]bucketRecord, map[string]accountRecord, error)
	commit(change) error
	close() error
}

type memoryState struct{}

func (memoryState) load() (map[string]bucketRecord, map[string]accountRecord, error) {
	return map[string]bucketRecord{}, map[string]accountRecord{}, nil
}
func (memoryState) commit(change) error { return nil }
func (memoryState) close() error        { return nil }

var (
	bucketsKey  = []byte("buckets")
	accountsKey = []byte("accounts")
)

type boltState struct{ db *bolt.DB }

func openBoltState(db *bolt.DB) (*boltState, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, k := range [][]byte{bucketsKey, accountsKey} {
			if _, err := tx.CreateBucketIfNotExists(k); err != nil {
				return fmt.Errorf("bucket %s: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("prepare access state: %w", err)
	}
	return &boltState{db: db}, nil
}

func (s *boltState) load() (map[string]bucketRecord, map[string]accountRecord, error) {
	buckets := map[string]bucketRecord{}
	accounts := map[string]accountRecord{}
	err := s.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketsKey).ForEach(func(k, v []byte) error {
			var r bucketRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode bucket %s: %w", k, err)
			}
			buckets[string(k)] = r
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(accountsKey).ForEach(func(k, v []byte) error {
			var r accountRecord
			if err := json.Unmarshal(v, &r); err != nil {
				// The record holds a secret; the error names the account only.
				return fmt.Errorf("decode account %s: %w", k, errors.New("malformed record"))
			}
			if r.Granted == nil {
				r.Granted = maps.Clone(r.Buckets)
			}
			accounts[string(k)] = r
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("load access state: %w", err)
	}
	return buckets, accounts, nil
}

func (s *boltState) commit(c change) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b, a := tx.Bucket(bucketsKey), tx.Bucket(accountsKey)
		for k, v := range c.putBuckets {
			if err := putJSON(b, k, v); err != nil {
				return err
			}
		}
		for _, k := range c.delBuckets {
			if err := b.Delete([]byte(k)); err != nil {
				return fmt.Errorf("delete bucket %s: %w", k, err)
			}
		}
		for k, v := range c.putAccounts {
			if err := putJSON(a, k, v); err != nil {
				return err
			}
		}
		for _, k := range c.delAccounts {
			if err := a.Delete([]byte(k)); err != nil {
				return fmt.Errorf("delete account %s: %w", k, err)
			}
		}
		return nil
	})
}

func (s *boltState) close() error { return s.db.Close() }

func putJSON(b *bolt.Bucket, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	if err := b.Put([]byte(key), raw); err != nil {
		return fmt.Errorf("store %s: %w", key, err)
	}
	return nil
}
