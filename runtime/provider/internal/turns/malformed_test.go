package turns

import (
	"strings"
	"testing"
)

func TestMalformedShowsTheStartOfALongBody(t *testing.T) {
	body := `{"x":"a` + strings.Repeat("é", 200) + `"}` // 409 bytes; byte 200 splits an é
	err := Malformed("a Messages API message", body, "it is not a JSON object")
	want := `malformed model answer: the body is not a Messages API message (it is not a JSON object); body "{\"x\":\"a` +
		strings.Repeat("é", 96) + `\xc3" … (409 bytes)`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	if err := Malformed("a Messages API message", " \n", "x"); !strings.HasSuffix(err.Error(), "; empty body") {
		t.Errorf("blank body: %v", err)
	}
}
