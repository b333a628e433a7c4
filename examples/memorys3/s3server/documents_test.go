package s3server

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
)

// deleteDoc is a DeleteObjects document naming n keys.
func deleteDoc(n int) []byte {
	var b strings.Builder
	b.WriteString("<Delete>")
	for i := range n {
		fmt.Fprintf(&b, "<Object><Key>k%04d</Key></Object>", i)
	}
	b.WriteString("</Delete>")
	return []byte(b.String())
}

// FuzzDeleteCount holds deleteCount to gofakes3's decoding of a DeleteObjects document: for
// any document gofakes3 decodes, deleteCount finds as many keys, or says there are more than
// S3 takes when there are.
func FuzzDeleteCount(f *testing.F) {
	for _, seed := range [][]byte{
		deleteDoc(0), deleteDoc(2), deleteDoc(maxDeleteKeys), deleteDoc(maxDeleteKeys + 1),
		[]byte(`<?xml version="1.0"?><!-- c --><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet><Object><Key>a</Key></Object></Delete>`),
		[]byte(`<s3:Delete xmlns:s3="x"><s3:Object><s3:Key>a</s3:Key></s3:Object><Object/></s3:Delete>`),
		[]byte(`<Delete><Wrap><Object><Key>deeper</Key></Object></Wrap><Object><Key>a</Key></Object></Delete><Object/>`),
		[]byte(`<Delete><Object><Key>a</Key></Object>`),
		[]byte(`<Delete><Object></Key></Object></Delete>`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var in gofakes3.DeleteRequest
		if err := xml.NewDecoder(bytes.NewReader(doc)).Decode(&in); err != nil {
			return // gofakes3 answers MalformedXML itself
		}
		n, err := deleteCount(bytes.NewReader(doc))
		switch {
		case len(in.Objects) > maxDeleteKeys:
			if !errors.Is(err, errTooManyObjects) {
				t.Fatalf("gofakes3 decodes %d keys; deleteCount found %d, %v", len(in.Objects), n, err)
			}
		case err != nil || n != len(in.Objects):
			t.Fatalf("gofakes3 decodes %d keys; deleteCount found %d, %v", len(in.Objects), n, err)
		}
	})
}
