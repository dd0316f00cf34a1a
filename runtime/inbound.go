package runtime

import (
	"fmt"
	"strings"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

// inboundMessage returns the trailing user message of a reply run, as BuildRequest documents
// it. A body that is blank (empty or white space only) counts as absent; a message whose whole
// content is its subject line is common in email, hence "Subject: <subject>".
func inboundMessage(in *history.Message) chat.Message {
	body := in.Text
	if strings.TrimSpace(body) == "" {
		body = ""
		if in.HTML != "" {
			body = HTMLText(in.HTML)
		}
	}
	if len(in.Attachments) == 0 {
		if body == "" {
			body = emptyInboundText
			if subject := strings.TrimSpace(in.Subject); subject != "" {
				body = "Subject: " + subject
			}
		}
		return chat.UserMessage(body)
	}
	parts := make([]chat.Part, 0, len(in.Attachments)+1)
	if body != "" {
		parts = append(parts, chat.TextPart(body))
	}
	for _, a := range in.Attachments {
		switch {
		case a.Data == nil:
			parts = append(parts, chat.TextPart(attachmentNote(a)))
		case strings.HasPrefix(a.ContentType, "image/"):
			parts = append(parts, chat.ImagePart(a.ContentType, a.Data))
		default:
			parts = append(parts, chat.DocumentPart(a.Filename, a.ContentType, a.Data))
		}
	}
	return chat.Message{Role: chat.RoleUser, Parts: parts}
}

// emptyInboundText is the text of the trailing user message for an inbound message that has no
// body, no attachments and no subject.
const emptyInboundText = "[The message has no text.]"

// attachmentNote renders one attachment's metadata as one line:
// `[attachment: report.pdf (application/pdf, 1234 bytes, id att-1)]`.
func attachmentNote(a history.Attachment) string {
	return fmt.Sprintf("[attachment: %s (%s, %d bytes, id %s)]", a.Filename, a.ContentType, a.Size, a.ID)
}
