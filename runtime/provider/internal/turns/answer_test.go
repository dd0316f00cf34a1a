package turns

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/provider"
)

type brokenBody struct{ io.Reader }

func (brokenBody) Close() error { return nil }

var errCut = errors.New("connection reset")

func TestCaptureKeepsTheBodyAndPassesAReadFailureOn(t *testing.T) {
	answer := func(body io.Reader) func(*http.Request) (*http.Response, error) {
		return func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: brokenBody{body}}, nil
		}
	}
	var a Answer
	resp, err := a.Capture(nil, answer(strings.NewReader("<html>")))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(resp.Body); string(got) != "<html>" || !a.Got || string(a.Body) != "<html>" {
		t.Errorf("SDK reads %q; kept %v %q", got, a.Got, a.Body)
	}
	merr := a.Failed("openai chat", "a chat completion", errors.New("sdk"))
	if !errors.Is(merr, provider.ErrMalformedResponse) ||
		merr.Error() != `openai chat: malformed model answer: the body is not a chat completion (content type "text/html" is not JSON); body "<html>"` {
		t.Errorf("Failed = %v", merr)
	}

	var b Answer
	resp, err = b.Capture(nil, answer(io.MultiReader(strings.NewReader(`{"id":`), failedRead{errCut})))
	if err != nil {
		t.Fatalf("a read failure became a failed attempt: %v", err)
	}
	if _, rerr := io.ReadAll(resp.Body); !errors.Is(rerr, errCut) || b.Got {
		t.Errorf("SDK read err = %v, kept an answer: %v", rerr, b.Got)
	}
	if b.Failed("openai chat", "a chat completion", errCut) != nil {
		t.Error("a body that could not be read is not a malformed answer")
	}
}

func TestMalformedShowsTheStartOfALongBody(t *testing.T) {
	body := `{"x":"a` + strings.Repeat("é", 200) + `"}` // 409 bytes; byte 200 splits an é
	err := Malformed("anthropic", "a Messages API message", body, "it is not a JSON object")
	want := `anthropic: malformed model answer: the body is not a Messages API message (it is not a JSON object); body "{\"x\":\"a` +
		strings.Repeat("é", 96) + `\xc3" … (409 bytes)`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	if err := Malformed("anthropic", "a Messages API message", " \n", "x"); !strings.HasSuffix(err.Error(), "; empty body") {
		t.Errorf("blank body: %v", err)
	}
}
