"""Reads rendered messages back with Python's email package (policy.default), the independent
parser the outbox tests compare Render against.

stdin: a JSON array of base64 strings, each one raw message. stdout: a JSON array with one
object per message: the headers and bodies as Python reads them, or {"error": "..."} when
Python cannot read the message at all. Attachment data is base64.
"""

import base64
import email
import json
import sys
from email import _header_value_parser as hvp
from email import policy


def backport_gh_128110():
    """Applies CPython's fix for gh-128110 when this Python lacks it.

    RFC 2047 section 6.2: the white space between two adjacent encoded words is not part of the
    text. Python's parser drops it in unstructured fields and quoted strings but, before that
    fix, kept it as a space between the encoded words of a display name, so a name longer than
    one encoded word read back with spaces inside it. The fix (python/cpython#130749) makes
    that white space an EWWhiteSpaceTerminal; this does the same after get_phrase.
    """
    probe = "=?utf-8?q?a?= =?utf-8?q?b?= <x@example.com>"
    if email.message_from_string("To: " + probe + "\n\n", policy=policy.default)["To"].addresses[0].display_name == "ab":
        return False
    original = hvp.get_phrase

    def get_phrase(value):
        phrase, value = original(value)
        for a, b in zip(phrase, phrase[1:]):
            if (a.token_type == "atom" and b.token_type == "atom" and len(a) >= 2
                    and a[-1].token_type == "cfws" and str(a[-1]).strip() == ""
                    and a[-2].token_type == "encoded-word" and b[0].token_type == "encoded-word"):
                a[-1] = hvp.EWWhiteSpaceTerminal(str(a[-1]), "fws")
        return phrase, value

    hvp.get_phrase = get_phrase
    return True


def utf8(s):
    """Python's bytes parser keeps 8-bit header bytes as surrogate escapes; RFC 6532 reads them
    as UTF-8 (a non-ASCII address is written so)."""
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def addresses(msg, name):
    h = msg[name]
    if h is None:
        return []
    return [{"name": utf8(a.display_name), "address": utf8(a.addr_spec)} for a in h.addresses]


def ids(msg, name):
    v = msg[name]
    if v is None:
        return []
    return [t.strip("<>") for t in str(v).split()]


def content(msg, subtype):
    part = msg.get_body(preferencelist=(subtype,))
    if part is None or part.get_content_subtype() != subtype:
        return None
    return part.get_content()


def read(raw):
    msg = email.message_from_bytes(raw, policy=policy.default)
    subject = msg["Subject"]
    out = {
        "subject": None if subject is None else str(subject),
        "from": addresses(msg, "From"),
        "to": addresses(msg, "To"),
        "cc": addresses(msg, "Cc"),
        "message_id": "".join(ids(msg, "Message-ID")),
        "in_reply_to": "".join(ids(msg, "In-Reply-To")),
        "references": ids(msg, "References"),
        "text": content(msg, "plain"),
        "html": content(msg, "html"),
        "attachments": [],
        "defects": [type(d).__name__ for d in msg.defects],
    }
    for part in msg.walk():
        out["defects"] += [type(d).__name__ for d in part.defects if part is not msg]
    for part in msg.iter_attachments():
        data = part.get_payload(decode=True) or b""
        out["attachments"].append({
            "name": part.get_filename(),
            "content_type": part.get_content_type(),
            "data": base64.b64encode(data).decode("ascii"),
        })
    return out


def main():
    if backport_gh_128110():
        print("readback.py: Python %s lacks the fix for gh-128110; backported" % sys.version.split()[0], file=sys.stderr)
    results = []
    for b64 in json.load(sys.stdin):
        try:
            results.append(read(base64.b64decode(b64)))
        except Exception as e:  # the test reports it as this message's failure
            results.append({"error": "%s: %s" % (type(e).__name__, e)})
    json.dump(results, sys.stdout)


main()
