package runtime

import "time"

// dateLayout is the layout FormatDate uses: RFC 1123 with a numeric zone, as email Date headers
// are written ("Mon, 02 Jan 2006 15:04:05 +0000").
const dateLayout = time.RFC1123Z

// FormatDate renders t in UTC as an email Date header: RFC 1123 with a numeric zone
// ("Mon, 02 Jan 2006 15:04:05 +0000"). History headers and the `.Inbound.Date` template
// field use it, so the same instant always renders to the same text whatever the machine's zone.
func FormatDate(t time.Time) string { return t.UTC().Format(dateLayout) }
