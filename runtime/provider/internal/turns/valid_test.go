package turns

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// reference is what validObject must equal: encoding/json's Valid, for an object.
func reference(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(b)
}

var validCases = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a":-0.5e+10,"b":[1,2,{"c":null}],"d":true,"e":false}`, `{"s":"\u00e9\n\"\\\/"}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`, `{"a":nul}`, `{"a":"\x01"}`, `{"a":"\q"}`,
	`{"a":"\u12G4"}`, `{"a":"\u12"}`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a" 1}`, `{"a":1}x`, `{"a":1}{}`, `[1]`, `"s"`, ``, ` `,
	`{"a":[1,]}`, `{"a":[,1]}`, `{"a":"` + "\xff\xfe" + `"}`, `{"a":"unterminated}`, `{1:2}`, `{"a":1 "b":2}`,
	`{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, `{"a":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}`,
	"{\"a\":1}\n", "\t{\"a\":\r\n1}", `{"a":1E5,"b":-12.25E-3}`, `{"a":-01}`, `{"a":Infinity}`,
}

func TestValidObjectMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := validObject([]byte(c)), reference([]byte(c)); got != want {
			t.Errorf("validObject(%.60q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

func FuzzValidObject(f *testing.F) {
	for _, c := range validCases {
		if len(c) < 200 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validObject(b), reference(b); got != want {
			t.Fatalf("validObject(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

func BenchmarkValidObject(b *testing.B) {
	in := []byte(`{"query":"export timeout board Q1","board_id":"brd_17","limit":10}`)
	b.Run("validObject", func(b *testing.B) {
		for b.Loop() {
			validObject(in)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(in)
		}
	})
}
