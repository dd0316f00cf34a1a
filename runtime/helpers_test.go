package runtime

import "slices"

// equalMessages reports whether two lists hold Equal messages in order.
func equalMessages(a, b []Message) bool { return slices.EqualFunc(a, b, Message.Equal) }

// partsMessage is a message of role r whose content is parts.
func partsMessage(r Role, parts ...Part) Message { return Message{Role: r, Parts: parts} }
