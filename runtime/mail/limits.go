package mail

import (
	netmail "net/mail"
	"unicode/utf8"
)

// The limits Parse holds every message to, so that a parsed message can always be stored: they
// are the store's (runtime/store's MaxAddresses, MaxAddressBytes, MaxSubjectBytes, MaxBodyBytes,
// MaxFilenameBytes, MaxAttachments, MaxContentTypeChars, MaxNoteBytes). Each cut is recorded as a
// problem.
const (
	maxAddresses      = 200
	maxAddressBytes   = 998
	maxSubjectBytes   = 16384
	maxBodyBytes      = 2 << 20
	maxFilenameBytes  = 998
	maxAttachments    = 500
	maxContentTypeLen = 255
	maxDetailBytes    = 900 // a problem's or a not-to-answer reason's detail (the store's notes hold 998 bytes)
)

// The limits Parse holds the MIME structure to before enmime reads it. enmime's cost is not
// linear in the input there: each multipart level wraps its parent's reader, and a part's end
// is re-read through every level above it, so time doubles with each nested multipart (25
// unclosed levels, a 1 KiB message, took 9 s; 50 did not finish); and it appends each part to
// its parent by walking the siblings before it, so time grows with the square of the parts of
// one multipart (100,000 parts: 3 minutes).
const (
	// maxMultipartDepth is how many multiparts may be nested in one message (the top level
	// counts); a multipart deeper than that is read as text. Real mail nests four or five.
	maxMultipartDepth = 12
	// maxPartLines is how many lines starting with "--" (each may be a boundary delimiter, the
	// start of a part) the MIME parser reads in a message that declares a boundary; the message
	// is read up to the next one and the rest is left out.
	maxPartLines = 5000
)

// clipBytes returns s cut to at most n bytes, at a character boundary.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// formatLimited renders the first maxAddresses addresses with formatAddress for the stored
// history.Message (Addresses keeps them all, and Route reads those), keeping the bare address
// when the rendering is longer than maxAddressBytes and leaving out an address that is too long
// even bare; nil for none.
func (st *state) formatLimited(name string, list []netmail.Address) []string {
	if len(list) > maxAddresses {
		st.m.problem(ProblemAddress, "%s: %d addresses; the first %d are stored", name, len(list), maxAddresses)
		list = list[:maxAddresses]
	}
	var out []string
	for _, a := range list {
		s := formatAddress(a)
		if len(s) > maxAddressBytes {
			s = formatAddress(netmail.Address{Address: a.Address})
			if len(s) > maxAddressBytes {
				st.m.problem(ProblemAddress, "%s: an address of %d bytes is longer than %d; it is left out", name, len(s), maxAddressBytes)
				continue
			}
			st.m.problem(ProblemAddress, "%s: the name of %s is too long; the bare address is kept", name, s)
		}
		out = append(out, s)
	}
	return out
}

// limits cuts the subject, bodies and attachments to the limits above.
func (st *state) limits() {
	m := st.m
	if len(m.Subject) > maxSubjectBytes {
		st.m.problem(ProblemHeader, "Subject: %d bytes; cut to %d", len(m.Subject), maxSubjectBytes)
		m.Subject = clipBytes(m.Subject, maxSubjectBytes)
	}
	if len(m.Text) > maxBodyBytes {
		st.m.problem(ProblemMIME, "text body: %d bytes; cut to %d", len(m.Text), maxBodyBytes)
		m.Text = clipBytes(m.Text, maxBodyBytes)
	}
	if len(m.HTML) > maxBodyBytes {
		st.m.problem(ProblemMIME, "HTML body: %d bytes; cut to %d", len(m.HTML), maxBodyBytes)
		m.HTML = clipBytes(m.HTML, maxBodyBytes)
	}
	if len(m.Attachments) > maxAttachments {
		st.m.problem(ProblemMIME, "%d attachments; the first %d are kept", len(m.Attachments), maxAttachments)
		m.Attachments = m.Attachments[:maxAttachments]
	}
	for i := range m.Attachments {
		a := &m.Attachments[i]
		if len(a.Filename) > maxFilenameBytes {
			st.m.problem(ProblemHeader, "attachment %d: file name of %d bytes cut to %d", i+1, len(a.Filename), maxFilenameBytes)
			a.Filename = clipBytes(a.Filename, maxFilenameBytes)
		}
		if utf8.RuneCountInString(a.ContentType) > maxContentTypeLen {
			st.m.problem(ProblemHeader, "attachment %d: content type longer than %d characters; application/octet-stream used", i+1, maxContentTypeLen)
			a.ContentType = "application/octet-stream"
		}
	}
}
