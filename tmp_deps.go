//go:build deps

package deps

import (
	_ "github.com/agnivade/levenshtein"
	_ "github.com/aymanbagabas/go-udiff"
	_ "github.com/dave/jennifer/jen"
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jmoiron/sqlx"
	_ "github.com/pressly/goose/v3"
	_ "github.com/robfig/cron/v3"
	_ "github.com/santhosh-tekuri/jsonschema/v5"
	_ "golang.org/x/tools/go/packages"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
	_ "github.com/k3a/html2text"
)
