package cli

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// An agent finds the cluster DNS from kube-system/kube-dns; without one,
// its pods keep the host's resolvers.
func TestDiscoverClusterDNS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		want   []string
	}{{
		name: "kube-dns exists",
		answer: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"Service","apiVersion":"v1","metadata":{"name":"kube-dns","namespace":"kube-system"},"spec":{"clusterIP":"10.96.0.10"}}`)
		},
		want: []string{"10.96.0.10"},
	}, {
		name: "no DNS in the cluster",
		answer: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/namespaces/kube-system/services/kube-dns" {
					http.NotFound(w, r)
					return
				}
				tc.answer(w)
			}))
			defer srv.Close()
			got := discoverClusterDNS(context.Background(), kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL}), slog.New(slog.DiscardHandler))
			if !slices.Equal(got, tc.want) {
				t.Errorf("cluster DNS = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCheckProxyMode(t *testing.T) {
	for mode, ok := range map[string]bool{"": true, "auto": true, "nftables": true, "iptables": true, "ipvs": false, "NFTABLES": false} {
		if err := checkProxyMode(mode); (err == nil) != ok {
			t.Errorf("checkProxyMode(%q) = %v", mode, err)
		}
	}
}
