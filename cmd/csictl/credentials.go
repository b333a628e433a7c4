package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"
)

// writeCredentials writes a grant's answer, credentials included, to path as JSON with the proto
// field names. The file is written beside path and renamed over it, so it has mode 0600 from its
// first byte (os.CreateTemp creates 0600, and a umask can only remove bits) even when path
// existed with a looser mode, and a reader never sees half a file. Errors name the path only:
// nothing in them comes from the answer.
func writeCredentials(path string, resp proto.Message) (err error) {
	b, err := encode(resp, outputJSON)
	if err != nil {
		return fmt.Errorf("credentials file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("credentials file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	_, werr := tmp.Write(b)
	err = errors.Join(werr, tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("credentials file %s: %w", path, err)
	}
	return nil
}
