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

// errTooManyObjects ends scanDeleteDoc's walk once the document names more keys than it may.
var errTooManyObjects = errors.New("more objects than a DeleteObjects may name")

// The answer to a DeleteObjects names every key it deleted, escaped, and is held whole until
// the client has read it (storeAnswer): a key of 8,000 quotes answered as 40,000 bytes, so an
// 8 MiB document made a 40 MB answer that a client could leave unread, charged to nothing.
// scanDeleteDoc bounds that answer from the document, for the tenant to be charged with it:
// deleteAnswerHead for the declaration and the root element, and for each key deletedEntry
// (its elements and indentation) and its text as the answer escapes it.
const (
	deleteAnswerHead = 512
	deletedEntry     = 64
)

// scanDeleteDoc counts the Object elements of a DeleteObjects document as gofakes3 decodes
// them (the children named Object of its first element, in any namespace), up to
// maxDeleteKeys and one more: a document past the bound is refused without being decoded
// whole. It also bounds the answer: all the text inside those elements, escaped, with the
// overheads above. An error is a document gofakes3 could not decode either, or
// errTooManyObjects.
func scanDeleteDoc(doc io.Reader) (keys int, answer int64, err error) {
	d := xml.NewDecoder(doc)
	depth := 0
	inObject := false
	answer = deleteAnswerHead
	for {
		tok, err := d.RawToken()
		if err != nil {
			return keys, answer, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 {
				inObject = t.Name.Local == "Object"
				if inObject {
					if keys++; keys > maxDeleteKeys {
						return keys, answer, errTooManyObjects
					}
					answer += deletedEntry
				}
			}
		case xml.EndElement:
			if depth--; depth == 0 {
				return keys, answer, nil
			}
		case xml.CharData:
			if inObject && depth >= 3 {
				answer += escapedLen(t)
			}
		}
	}
}

// escapedLen is the length of text as an XML encoder writes it.
func escapedLen(text []byte) int64 {
	var c byteCounter
	_ = xml.EscapeText(&c, text) // a byteCounter never fails
	return int64(c)
}

// byteCounter counts what is written to it.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}
