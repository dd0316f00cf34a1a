package console_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/personagen/personagen/runtime/console"
	"github.com/personagen/personagen/runtime/store"
)

// A host mounts the console where it wants; every request needs the credentials, and every
// response carries the Content-Security-Policy.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "console-example-*")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "store.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	c, err := console.New(console.Config{Store: st, Auth: console.Auth{Token: "a-long-random-token"}})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	for _, token := range []string{"", "a-long-random-token"} {
		req, _ := http.NewRequest("GET", srv.URL+"/runs?status=failed", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		res.Body.Close()
		fmt.Println(res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
	// Output:
	// 401 default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'
	// 200 default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'
}
