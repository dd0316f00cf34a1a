// Package chatgolden keeps expected message lists as golden transcript files (the format of
// runtime/transcript, scout-ai's chat text, seed 002), so a reviewer reads a history replay
// golden as a conversation. It is test support built on package golden: Check compares the
// printed transcript byte for byte and also parses it back, so the file is an exact expectation.
package chatgolden
