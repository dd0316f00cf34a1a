// Package storetest holds what tests and benchmarks of the SQL store (runtime/store) and of the
// packages built on it share: a scratch MySQL/MariaDB database of their own ([MySQL]), created on
// the test server and dropped when the test ends; a connector that counts the round trips a
// store makes and records its statements ([CountTrips], [QueryLog]); and a clock the test sets
// by hand ([Clock]). Start from [MySQL] in a test, [CountTrips] around a store's connector
// (store.WithConnector) and [NewClock].
//
// The test server is the go-sql-driver DSN in PERSONAGEN_TEST_MYSQL_DSN, or
// root@tcp(127.0.0.1:3306)/test when that is unset. A test whose server does not answer is
// skipped, so that `go test ./...` passes on a machine without one; under CI=true it fails
// instead, so that a CI job cannot pass without having run the MySQL half.
//
// The package does not import runtime/store (it talks to the server through database/sql and
// wraps database/sql/driver connectors), so the store's own internal tests use it as well. The
// databases are empty: each caller opens and migrates its store itself, with the options it
// needs.
package storetest
