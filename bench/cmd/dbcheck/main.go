// Command dbcheck exits 0 when the MySQL/MariaDB server of a DSN (go-sql-driver/mysql form,
// e.g. root@tcp(127.0.0.1:3306)/test) answers a ping within 5 seconds, and 1 with a message
// naming the server otherwise. bench/run calls it before the store benchmarks.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dbcheck DSN")
		os.Exit(2)
	}
	cfg, err := mysql.ParseDSN(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "dbcheck: bad DSN: %v\n", err)
		os.Exit(1)
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dbcheck: %v\n", err)
		os.Exit(1)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "dbcheck: MariaDB/MySQL at %s (user %q) does not answer: %v\n", cfg.Addr, cfg.User, err)
		os.Exit(1)
	}
}
