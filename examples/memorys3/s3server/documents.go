package s3server

import (
	"encoding/xml"
	"errors"
	"io"
)

// maxDeleteKeys is the most keys S3 takes in one DeleteObjects. gofakes3 takes any number: an
// 8 MiB document of short keys decoded into some 280,000 of them (about 20 MB, charged to
// nothing) and deleted them under the store's lock.
const maxDeleteKeys = 1000

// errTooManyObjects ends deleteCount's walk once the document names more keys than it may.
var errTooManyObjects = errors.New("more objects than a DeleteObjects may name")

// deleteCount counts the Object elements of a DeleteObjects document as gofakes3 decodes
// them (the children named Object of its first element, in any namespace), up to
// maxDeleteKeys and one more: a document past the bound is refused without being decoded
// whole. An error is a document gofakes3 could not decode either, or errTooManyObjects.
func deleteCount(doc io.Reader) (int, error) {
	d := xml.NewDecoder(doc)
	depth, n := 0, 0
	for {
		tok, err := d.RawToken()
		if err != nil {
			return n, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 && t.Name.Local == "Object" {
				if n++; n > maxDeleteKeys {
					return n, errTooManyObjects
				}
			}
		case xml.EndElement:
			if depth--; depth == 0 {
				return n, nil
			}
		}
	}
}
