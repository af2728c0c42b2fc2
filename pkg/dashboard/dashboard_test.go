package dashboard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func get(t *testing.T, h http.Handler, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestServesTheBundle(t *testing.T) {
	h := newHandler(fstest.MapFS{
		"index.html": {Data: []byte(`<!doctype html><script src="app.js"></script>`)},
		"app.js":     {Data: []byte(`console.log("hi")`)},
		"app.css":    {Data: []byte(`body{}`)},
		".gitkeep":   {Data: nil},
	})
	for _, tc := range []struct {
		path              string
		code              int
		contentType, body string
	}{
		{"/dashboard/", 200, "text/html; charset=utf-8", `<script src="app.js">`},
		{"/dashboard/index.html", 200, "text/html; charset=utf-8", `<script src="app.js">`},
		{"/dashboard/app.js", 200, "text/javascript; charset=utf-8", `console.log`},
		{"/dashboard/app.css", 200, "text/css; charset=utf-8", `body{}`},
		{"/dashboard/.gitkeep", 404, "", ""},
		{"/dashboard/nope.js", 404, "", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			w := get(t, h, tc.path, nil)
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d", w.Code, tc.code)
			}
			if tc.code != http.StatusOK {
				return
			}
			if got := w.Header().Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-cache" {
				t.Errorf("Cache-Control %q, want no-cache", got)
			}
			if w.Header().Get("ETag") == "" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v lack an ETag or nosniff", w.Header())
			}
			if !strings.Contains(w.Body.String(), tc.body) {
				t.Errorf("body %q lacks %q", w.Body.String(), tc.body)
			}
			// The browser's revalidation is answered without the body.
			if w2 := get(t, h, tc.path, map[string]string{"If-None-Match": w.Header().Get("ETag")}); w2.Code != http.StatusNotModified {
				t.Errorf("revalidation: status %d, want 304", w2.Code)
			}
		})
	}
	if w := get(t, h, "/dashboard/", nil); !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("index.html's CSP %q does not keep the page to its origin", w.Header().Get("Content-Security-Policy"))
	}
	r := httptest.NewRequest(http.MethodPost, "/dashboard/", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", w.Code)
	}
}

func TestNotBuilt(t *testing.T) {
	h := newHandler(fstest.MapFS{".gitkeep": {Data: nil}})
	for _, p := range []string{"/dashboard/", "/dashboard/app.js"} {
		w := get(t, h, p, nil)
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "the dashboard is not built: run make deps") ||
			w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("%s without a bundle: %d %q %q", p, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
	}
}

// TestEmbedded checks the real embed: the bundle when build.sh ran, the
// not-built page otherwise; either way /dashboard/ answers.
func TestEmbedded(t *testing.T) {
	w := get(t, Handler(), "/dashboard/", nil)
	switch w.Code {
	case http.StatusOK:
		if !strings.Contains(w.Body.String(), "app.js") {
			t.Errorf("index.html does not load app.js:\n%s", w.Body.String())
		}
		if w := get(t, Handler(), "/dashboard/app.js", nil); w.Code != http.StatusOK || w.Body.Len() < 1000 {
			t.Errorf("app.js: %d, %d bytes", w.Code, w.Body.Len())
		}
	case http.StatusServiceUnavailable:
		t.Log("the bundle is not built (web/dashboard/build.sh); the not-built page answers")
	default:
		t.Errorf("/dashboard/: status %d", w.Code)
	}
}
