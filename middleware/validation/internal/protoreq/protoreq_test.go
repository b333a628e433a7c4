package protoreq

import (
	"strings"
	"testing"
)

const corner = `syntax = "proto3";
package x.y;
option go_package = "a/b";
// This field is REQUIRED. (detached: blank line follows)

message M {
  // This is a REQUIRED field.
  string a = 1;

  // This field is REQUIRED if the moon is full.
  string b = 2;
  string c = 3; // This field is REQUIRED.
  /* This field is REQUIRED. */
  map<string, string> d = 4 [(x) = true, json_name = "dd"];
  oneof o {
    // This field is REQUIRED
    N e = 5;
  }
  message N {
    // This field
    // is REQUIRED for idempotency.
    repeated string f = 1;
    reserved 2, 3 to 5;
    reserved "old";
  }
  enum E { option allow_alias = true; Z = 0; // This is a REQUIRED field.
  }
  // Plugin is REQUIRED to do things. This field is OPTIONAL.
  string g = 6;
  // Nothing here.
  .x.y.M.N h = 7;
}
extend google.protobuf.FieldOptions { bool flag = 1000; }
service S { rpc R (M) returns (stream M) { option (z) = true; } }
`

func TestCornerCases(t *testing.T) {
	res, err := Parse([]byte(corner))
	if err != nil {
		t.Fatal(err)
	}
	if res.Package != "x.y" {
		t.Errorf("package %q", res.Package)
	}
	req := res.Required()
	if got := strings.Join(req["x.y.M"], ","); got != "a,c,d,e" {
		t.Errorf("x.y.M required = %s, want a,c,d,e", got)
	}
	if got := strings.Join(req["x.y.M.N"], ","); got != "f" {
		t.Errorf("x.y.M.N required = %s, want f", got)
	}
	var where []string
	for _, h := range res.Unclear {
		where = append(where, h.Where+"/"+h.Kind)
	}
	want := "x.y.M.b/field,x.y.M.E.Z/enum value,x.y.M.g/field"
	if got := strings.Join(where, ","); got != want {
		t.Errorf("unclear = %s, want %s", got, want)
	}
	var types []string
	for _, m := range res.Messages {
		if m.FullName == "x.y.M" {
			for _, f := range m.Fields {
				types = append(types, f.Type)
			}
		}
	}
	if got := strings.Join(types, ";"); got != "string;string;string;map<string,string>;N;string;.x.y.M.N" {
		t.Errorf("field types %s", got)
	}
	if _, err := Render(res, "p", "m@v1", "v1"); err != nil {
		t.Fatal(err)
	}
}

// Comment carries what a person reads above and beside a field, so that rules stated only in
// prose (size-limit overrides, absolute paths) can be cross-checked.
func TestFieldComments(t *testing.T) {
	res, err := Parse([]byte(corner))
	if err != nil {
		t.Fatal(err)
	}
	comments := map[string]string{}
	for _, m := range res.Messages {
		for _, f := range m.Fields {
			comments[m.FullName+"."+f.Name] = f.Comment
		}
	}
	for _, tc := range []struct{ name, field, want string }{
		{"a leading comment is attached", "x.y.M.a", "This is a REQUIRED field."},
		{"a trailing comment on the field's line is attached", "x.y.M.c", "This field is REQUIRED."},
		{"a block comment is attached", "x.y.M.d", "This field is REQUIRED."},
		{"comment lines are joined by single spaces", "x.y.M.N.f", "This field is REQUIRED for idempotency."},
		{"a oneof member keeps its own comment", "x.y.M.e", "This field is REQUIRED"},
		{"a field of a fully qualified type keeps its comment", "x.y.M.h", "Nothing here."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := comments[tc.field]; got != tc.want {
				t.Errorf("%s comment %q, want %q", tc.field, got, tc.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	for _, src := range []string{
		"message M {",
		"message M { string a = 1 }",
		"message M { string = 1; }",
		`option x = "unterminated`,
		"/* unterminated",
		"message M { @ }",
		"bogus;",
		"message M { string a = 1; } }",
	} {
		if _, err := Parse([]byte(src)); err == nil {
			t.Errorf("Parse(%q) succeeded", src)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(corner)
	f.Add("message M { oneof o { string a = 1; } }")
	f.Add("enum E { A = 0; }")
	f.Add("// This field is REQUIRED.\nmessage M { string a = 1; }")
	f.Fuzz(func(t *testing.T, src string) {
		res, err := Parse([]byte(src))
		if err != nil {
			return
		}
		for _, m := range res.Messages {
			for _, fl := range m.Fields {
				if fl.Name == "" {
					t.Fatalf("field without a name in %s", m.FullName)
				}
			}
		}
		_ = res.Required()
	})
}
