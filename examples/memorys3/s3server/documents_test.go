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

// FuzzScanDeleteDoc holds scanDeleteDoc to gofakes3's decoding of a DeleteObjects document: for
// any document gofakes3 decodes, scanDeleteDoc finds as many keys, or says there are more than
// S3 takes when there are, and its bound holds the answer gofakes3 writes for those keys.
func FuzzScanDeleteDoc(f *testing.F) {
	for _, seed := range [][]byte{
		deleteDoc(0), deleteDoc(2), deleteDoc(maxDeleteKeys), deleteDoc(maxDeleteKeys + 1),
		[]byte(`<?xml version="1.0"?><!-- c --><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet><Object><Key>a</Key></Object></Delete>`),
		[]byte(`<s3:Delete xmlns:s3="x"><s3:Object><s3:Key>a</s3:Key></s3:Object><Object/></s3:Delete>`),
		[]byte(`<Delete><Wrap><Object><Key>deeper</Key></Object></Wrap><Object><Key>a</Key></Object></Delete><Object/>`),
		[]byte(`<Delete><Object><Key>a</Key></Object>`),
		[]byte(`<Delete><Object></Key></Object></Delete>`),
		[]byte("<Delete><Object><Key>\"&amp;'&lt;\n\r\t\xff<![CDATA[<>&]]>&#x10FFFF;</Key><Key>b</Key><Key>a<x>y</x>z</Key></Object></Delete>"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var in gofakes3.DeleteRequest
		if err := xml.NewDecoder(bytes.NewReader(doc)).Decode(&in); err != nil {
			return // gofakes3 answers MalformedXML itself
		}
		n, answer, err := scanDeleteDoc(bytes.NewReader(doc))
		var out gofakes3.MultiDeleteResult
		for _, o := range in.Objects {
			out.Deleted = append(out.Deleted, gofakes3.ObjectID{Key: o.Key})
		}
		var enc bytes.Buffer
		enc.WriteString(xml.Header)
		e := xml.NewEncoder(&enc)
		e.Indent("", "  ") // as gofakes3 writes it
		if err := e.Encode(out); err != nil {
			t.Fatal(err)
		}
		if err == nil && int64(enc.Len()) > answer {
			t.Fatalf("the answer naming %d keys is %d bytes; scanDeleteDoc bounded it at %d", len(in.Objects), enc.Len(), answer)
		}
		switch {
		case len(in.Objects) > maxDeleteKeys:
			if !errors.Is(err, errTooManyObjects) {
				t.Fatalf("gofakes3 decodes %d keys; scanDeleteDoc found %d, %v", len(in.Objects), n, err)
			}
		case err != nil || n != len(in.Objects):
			t.Fatalf("gofakes3 decodes %d keys; scanDeleteDoc found %d, %v", len(in.Objects), n, err)
		}
	})
}
