package console

import (
	"errors"
	"net/http"
)

var errPending = errors.New("console: not yet available")

func (c *Console) postRetry(w http.ResponseWriter, r *http.Request)   { c.fail(w, r, errPending) }
func (c *Console) postAbandon(w http.ResponseWriter, r *http.Request) { c.fail(w, r, errPending) }
func (c *Console) postFireRun(w http.ResponseWriter, r *http.Request) { c.fail(w, r, errPending) }
