package runtime

import (
	"strings"

	"github.com/k3a/html2text"
)

// HTMLText extracts readable text from an HTML body: tags removed, entities decoded, scripts
// and styles dropped, paragraphs and line breaks kept as newlines ("\n", never "\r\n"), and the
// result trimmed. It uses github.com/k3a/html2text.
func HTMLText(html string) string {
	return strings.TrimSpace(html2text.HTML2TextWithOptions(html, html2text.WithUnixLineBreaks()))
}
