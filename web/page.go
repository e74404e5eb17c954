package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// pageFS holds the server browser: index.html, its script and its style
// sheet, embedded so that the binary serves the page offline, without a
// build step or a CDN.
//
//go:embed static
var pageFS embed.FS

// PageCacheSeconds is the max-age of the page's files. The files change
// only with the binary; the ETag (a hash of the file) makes a revalidation
// after that a 304.
const PageCacheSeconds = 300

// pageFile is one embedded file with its validator.
type pageFile struct {
	body  []byte
	etag  string
	ctype string
}

// Page returns the handler of the server browser: GET / is index.html,
// GET /upstreams and /blocked the pages of the other masters and of the
// block list, GET /static/NAME the other files; any other path is a 404 and any other
// method a 405. Mount it at "/" with no method, so that it neither
// conflicts with nor shadows more specific patterns such as "/api/" (a
// "GET /" pattern conflicts with "/api/" in net/http's mux). The page
// reads only the JSON API (/api/v1/...).
func Page() http.Handler {
	files := map[string]pageFile{}
	fs.WalkDir(pageFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := pageFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		files["/"+p] = pageFile{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: pageContentType(p)}
		return nil
	})
	files["/"] = files["/static/index.html"]
	files["/upstreams"] = files["/static/upstreams.html"]
	files["/blocked"] = files["/static/blocked.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("ETag", f.etag)
		h.Set("Cache-Control", "public, max-age="+strconv.Itoa(PageCacheSeconds))
		h.Set("X-Content-Type-Options", "nosniff")
		// Everything the page needs is on this origin; names shown in it are
		// hostile input, so no inline script runs even if one slipped in.
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; frame-ancestors 'none'")
		if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, f.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if r.Method == http.MethodHead {
			return
		}
		w.Write(f.body)
	})
}

func pageContentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}
