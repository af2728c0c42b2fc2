package apiserver

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// healthCheck is one named check of /healthz, /livez or /readyz.
type healthCheck struct {
	name  string
	check func(*http.Request) error
}

// etcdCheckTimeout bounds the etcd check, as Kubernetes'
// --etcd-healthcheck-timeout.
const etcdCheckTimeout = 2 * time.Second

func (s *Server) etcdCheck(r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), etcdCheckTimeout)
	defer cancel()
	_, err := s.store.Revision(ctx)
	return err
}

func pingCheck(*http.Request) error { return nil }

// installHealth serves the health endpoints as Kubernetes does. /readyz
// and /healthz check storage; /livez does not, since restarting the
// apiserver does not bring etcd back. Each answers "ok", or with
// ?verbose one line per check; a failing check makes it a 500 that lists
// every check, with the reason withheld (these paths answer anyone).
// /readyz/<check> runs one check and names the reason (authenticated).
func (s *Server) installHealth(mux *http.ServeMux) {
	ping := healthCheck{"ping", pingCheck}
	etcd := healthCheck{"etcd", s.etcdCheck}
	for name, checks := range map[string][]healthCheck{
		"healthz": {ping, etcd},
		"livez":   {ping},
		"readyz":  {ping, etcd},
	} {
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) { s.serveChecks(w, r, name, checks) })
		for _, c := range checks {
			mux.HandleFunc("/"+name+"/"+c.name, func(w http.ResponseWriter, r *http.Request) {
				if err := c.check(r); err != nil {
					http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
					return
				}
				writeText(w, "ok")
			})
		}
	}
}

func (s *Server) serveChecks(w http.ResponseWriter, r *http.Request, endpoint string, checks []healthCheck) {
	q := r.URL.Query()
	excluded := map[string]bool{}
	for _, name := range q["exclude"] {
		excluded[name] = true
	}
	var out strings.Builder
	failed := false
	for _, c := range checks {
		if excluded[c.name] {
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.name)
			delete(excluded, c.name)
			continue
		}
		if err := c.check(r); err != nil {
			s.log.Debug("health check failed", "endpoint", endpoint, "check", c.name, "err", err)
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.name)
			failed = true
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.name)
	}
	if len(excluded) > 0 {
		var names []string
		for _, n := range slices.Sorted(maps.Keys(excluded)) {
			names = append(names, strconv.Quote(n))
		}
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(names, ","))
	}
	if failed {
		http.Error(w, fmt.Sprintf("%s%s check failed", out.String(), endpoint), http.StatusInternalServerError)
		return
	}
	if _, verbose := q["verbose"]; !verbose {
		writeText(w, "ok")
		return
	}
	writeText(w, fmt.Sprintf("%s%s check passed\n", out.String(), endpoint))
}

func writeText(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte(text))
}
