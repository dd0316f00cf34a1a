package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// readyz is the handler's /readyz answer: its status code and decoded body.
func readyz(t *testing.T, svc *Service) (int, map[string]any) {
	t.Helper()
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("/readyz body %q: %v", b, err)
	}
	return resp.StatusCode, body
}

// memoryConfig is the test config on a migrated in-memory store.
func memoryConfig(t *testing.T) *Config {
	t.Helper()
	st := openStore(t, "sqlite::memory:")
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg := config(st, newDesk(), nil, "w1", nil)
	return &cfg
}

func TestDirTransportsCreateMissingDirectories(t *testing.T) {
	root := t.TempDir()
	in, out := filepath.Join(root, "mail", "in"), filepath.Join(root, "mail", "out")
	cfg := memoryConfig(t)
	cfg.Receivers = []Receiver{Dir{Path: in, Interval: 20 * time.Millisecond}}
	cfg.Sender = DirSender{Path: out}
	svc, _ := start(t, *cfg)
	dirs := []string{in, filepath.Join(in, ".done"), filepath.Join(in, ".failed"), out}
	waitFor(t, "the directories", func() bool {
		for _, d := range dirs {
			if _, err := os.Stat(d); err != nil {
				return false
			}
		}
		return true
	})
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() || st.Mode().Perm() != 0o750 {
			t.Errorf("%s: %v, %v; want a directory of mode 0750", d, st.Mode(), err)
		}
	}
	if code, body := readyz(t, svc); code != 200 || len(body) != 1 || body["ready"] != true {
		t.Errorf("/readyz = %d %v, want 200 ready", code, body)
	}
	if err := os.WriteFile(filepath.Join(root, "a.tmp"), email("q1@cust.example", "", "Hello", "Hi."), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "a.tmp"), filepath.Join(in, "a.eml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply in the created -sent directory", func() bool {
		entries, _ := os.ReadDir(out)
		return len(entries) == 1
	})
}

func TestDirTransportsOnAFileFailReadinessNamingThePath(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := func(field string) string {
		return `service: directory "` + file + `" cannot be created or used: mkdir ` + file +
			`: not a directory (make it a directory this process can write, or set ` + field + ` to one)`
	}
	for _, c := range []struct {
		name  string
		set   func(*Config)
		field string
	}{
		{"DirSender", func(cfg *Config) { cfg.Sender = DirSender{Path: file} }, "DirSender.Path"},
		{"Dir", func(cfg *Config) { cfg.Receivers = []Receiver{Dir{Path: file}} }, "Dir.Path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := memoryConfig(t)
			c.set(cfg)
			svc, _ := start(t, *cfg)
			code, body := readyz(t, svc)
			if code != 503 || len(body) != 2 || body["ready"] != false || body["reason"] != want(c.field) {
				t.Errorf("/readyz = %d %v\nwant 503 with the reason %s", code, body, want(c.field))
			}
		})
	}
	err := DirSender{Path: file}.Send(context.Background(), Outgoing{MessageID: "r1@acme.example"})
	if w := want("DirSender.Path") + " (writing reply r1@acme.example)"; err == nil || err.Error() != w {
		t.Errorf("DirSender.Send = %v\nwant %s", err, w)
	}
}

// A Dir whose path is unusable when the service starts is drained once the path is fixed, with
// no restart: the receiver keeps trying on every pass.
func TestDirFixedByHandIsDrainedWithoutARestart(t *testing.T) {
	root := t.TempDir()
	in, out := filepath.Join(root, "in"), filepath.Join(root, "out")
	if err := os.WriteFile(in, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := memoryConfig(t)
	cfg.Receivers = []Receiver{Dir{Path: in, Interval: 20 * time.Millisecond}}
	cfg.Sender = DirSender{Path: out}
	svc, _ := start(t, *cfg)
	if code, _ := readyz(t, svc); code != 503 {
		t.Fatalf("/readyz = %d with a file at the Dir's path, want 503", code)
	}
	if err := os.Remove(in); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the directory made again", func() bool { _, err := os.Stat(filepath.Join(in, ".done")); return err == nil })
	if err := os.WriteFile(filepath.Join(root, "a.tmp"), email("q1@cust.example", "", "Hello", "Hi."), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "a.tmp"), filepath.Join(in, "a.eml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply", func() bool { entries, _ := os.ReadDir(out); return len(entries) == 1 })
	if code, body := readyz(t, svc); code != 200 {
		t.Errorf("/readyz = %d %v after the fix, want 200", code, body)
	}
}
