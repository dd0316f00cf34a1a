// Package zone is personagen's one timezone loader, shared by spec
// validation and the scheduler, so a zone that validates is the zone that
// runs. It reads only the IANA tz database embedded in personagen (a copy
// of the zoneinfo.zip that Go ships, the data behind time/tzdata), never
// the ZONEINFO variable or the machine's zoneinfo directories, so a
// timezone means the same on every machine; names that only some machines
// know (Local, localtime, right/..., posix/...) are refused.
//
// To move to a newer tz release, copy $(go env GOROOT)/lib/time/zoneinfo.zip
// over zoneinfo.zip and set DataVersion to the release named in
// $(go env GOROOT)/lib/time/update.bash.
package zone
