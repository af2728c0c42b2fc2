package dashboard

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

// Prefix is where the apiserver mounts Handler.
const Prefix = "/dashboard/"

//go:embed all:dist
var dist embed.FS

// notBuilt is what /dashboard/ answers when the binary was built without
// the bundle (dist/ holds only .gitkeep).
const notBuilt = `<!doctype html>
<html><head><meta charset="utf-8"><title>minik8s dashboard</title></head>
<body><h1>minik8s dashboard</h1>
<p>the dashboard is not built: run make deps (it runs web/dashboard/build.sh), then rebuild minik8s.</p>
</body></html>
`

// Handler serves the embedded dashboard under Prefix: index.html for
// Prefix itself, the bundle's files by name, and a short page saying the
// dashboard is not built when the binary has no bundle.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil { // cannot happen: dist is a directory of the embed
		panic(err)
	}
	return newHandler(sub)
}

// file is one file of the bundle, read once.
type file struct {
	body        []byte
	contentType string
	etag        string
}

type handler struct {
	files map[string]file
}

func newHandler(fsys fs.FS) *handler {
	h := &handler{files: map[string]file{}}
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(path.Base(p), ".") {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil
		}
		sum := sha256.Sum256(b)
		h.files[p] = file{body: b, contentType: contentType(p), etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	return h
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(Prefix, "/"))
	name = strings.TrimPrefix(name, "/")
	if name == "" {
		name = "index.html"
	}
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	if _, ok := h.files["index.html"]; !ok {
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		hdr.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(notBuilt))
		return
	}
	f, ok := h.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hdr.Set("Content-Type", f.contentType)
	// The names are not content-hashed, so the browser keeps its copy but
	// asks each time; the ETag makes that a 304 until the binary changes.
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", f.etag)
	if f.contentType == "text/html; charset=utf-8" {
		// Everything the page loads comes from this origin: the bundle and
		// the Kubernetes API. Chart.js and cytoscape set inline styles.
		hdr.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
		hdr.Set("X-Frame-Options", "DENY")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
}
