// Package store is personagen's SQL store: threads, their messages with attachment metadata,
// responsibility runs, and the tool uses of every run, on MySQL/MariaDB or on an embedded SQLite.
package store
