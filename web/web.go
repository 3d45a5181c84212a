// Package web serves kairos's admin page: one HTML file, a stylesheet and a
// few ES modules, embedded in the binary. The page talks only to the public
// /v1 API with the bearer token the user pastes in; this package holds no
// handler that reads or changes jobs.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// ContentSecurityPolicy is sent with every response of the page: everything
// from this origin only, no inline script or style, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type file struct {
	name  string
	ctype string
	etag  string
	body  []byte
}

// Handler returns the admin page handler. It serves index.html at "/" (and
// "/index.html") and the files of static/assets under "/assets/"; any other
// path is a 404. Responses carry a strict Content-Security-Policy and are
// revalidated on every load (Cache-Control: no-cache with a content ETag), so
// an upgraded binary's page is picked up at once. Mount it at "/" and
// "/assets/*".
func Handler() http.Handler {
	files := map[string]*file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) { // not every system's MIME table knows these
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".html":
			ctype = "text/html; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		}
		name := strings.TrimPrefix(p, "static")
		files[name] = &file{name: name, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, body: b}
		return nil
	})
	if err != nil || files["/index.html"] == nil {
		panic("web: embedded files missing: " + errString(err))
	}
	files["/"] = files["/index.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		f := files[r.URL.Path]
		if f == nil || (f.name != "/index.html" && !strings.HasPrefix(f.name, "/assets/")) {
			h.Set("Cache-Control", "no-store")
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", f.ctype)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.body))
	})
}

func errString(err error) string {
	if err == nil {
		return "static/index.html"
	}
	return err.Error()
}
