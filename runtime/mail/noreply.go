package mail

import (
	"mime"
	"strings"
)

// noReply decides whether a message must not be answered whoever it is for, checking in the
// order of the Reason constants: a delivery report (Content-Type multipart/report, or a
// top-level message/delivery-status), a null sender (Return-Path or X-Envelope-From <>, white
// space inside the brackets allowed, or no From address), MAILER-DAEMON or postmaster as the
// From local part, Auto-Submitted other than "no" (RFC 3834; also the legacy X-Autoreply and
// X-Autorespond headers, and Exchange's X-MS-Exchange-Generated-Message-Source), Precedence
// bulk, list, junk or auto_reply, a List-Id or List-Unsubscribe header, and an X-Loop or
// X-MS-Exchange-Inbox-Rules-Loop header. The first rule that applies is returned, its Detail
// naming the header and value (or the address); the zero NoReply when none does.
func noReply(m *Message) NoReply {
	h := m.Header
	value := func(name string) string {
		v, _ := validText([]byte(h.Get(name)))
		return oneLine(stripComments(v))
	}
	if ct := value("Content-Type"); ct != "" {
		mt, params, _ := mime.ParseMediaType(ct)
		if mt == "" {
			mt, _, _ = strings.Cut(strings.ToLower(ct), ";")
			mt = strings.TrimSpace(mt)
		}
		switch mt {
		case "multipart/report":
			detail := mt
			if rt := params["report-type"]; rt != "" {
				detail += "; report-type=" + rt
			}
			return NoReply{ReasonDeliveryReport, detail}
		case "message/delivery-status":
			return NoReply{ReasonDeliveryReport, mt}
		}
	}
	for _, name := range []string{"Return-Path", "X-Envelope-From"} {
		if rp, ok := h[name]; ok && len(rp) > 0 {
			if v := strings.Join(strings.Fields(stripComments(rp[0])), ""); v == "<>" || v == "" {
				return NoReply{ReasonNullSender, name + ": <>"}
			}
		}
	}
	sender := m.Sender().Address
	if sender == "" {
		return NoReply{ReasonNullSender, "no From address"}
	}
	if local, _, _ := strings.Cut(sender, "@"); strings.EqualFold(local, "mailer-daemon") || strings.EqualFold(local, "postmaster") {
		return NoReply{ReasonMailerDaemon, sender}
	}
	if v := value("Auto-Submitted"); v != "" {
		token, _, _ := strings.Cut(strings.ToLower(v), ";")
		if token = strings.TrimSpace(token); token != "no" {
			return NoReply{ReasonAutoSubmitted, "Auto-Submitted: " + token}
		}
	}
	for _, name := range []string{"X-Autoreply", "X-Autorespond"} {
		if v := value(name); v != "" && !strings.EqualFold(v, "no") {
			return NoReply{ReasonAutoSubmitted, name + ": " + v}
		}
	}
	if v := value("X-MS-Exchange-Generated-Message-Source"); v != "" {
		return NoReply{ReasonAutoSubmitted, "X-MS-Exchange-Generated-Message-Source: " + v}
	}
	switch v := strings.ToLower(value("Precedence")); v {
	case "bulk", "list", "junk", "auto_reply":
		return NoReply{ReasonPrecedence, "Precedence: " + v}
	}
	for _, name := range []string{"List-Id", "List-Unsubscribe"} {
		if v := value(name); v != "" {
			return NoReply{ReasonMailingList, name + ": " + v}
		}
	}
	for _, name := range []string{"X-Loop", "X-MS-Exchange-Inbox-Rules-Loop"} {
		if v := value(name); v != "" {
			return NoReply{ReasonLoop, name + ": " + v}
		}
	}
	return NoReply{}
}
