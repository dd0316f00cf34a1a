package runtime

// Internals the external tests (package runtime_test) reach, as net/http's export_test.go does.
var SortToolUses = sortToolUses
