package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/storage"
)

func getStatus(t *testing.T, method, url string) (*http.Response, *metav1.Status) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	client := &http.Client{Timeout: 30 * time.Second} // a hang fails the test
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("%s %s: %d %s: not a Status", method, url, resp.StatusCode, body)
	}
	return resp, &st
}

// A request still running at its deadline is answered 504 Timeout, even
// when what it waits on ignores its context; ?timeout= shortens the
// deadline and a malformed one is a 400. Watches have no deadline.
func TestRequestDeadline(t *testing.T) {
	store := newFakeStore()
	store.hang = make(chan struct{})
	t.Cleanup(func() { close(store.hang) })
	_, srv := serveFake(t, store, func(c *Config) { c.RequestTimeout = 500 * time.Millisecond })
	const path = "/api/v1/namespaces/default/configmaps/cm"

	for _, url := range []string{srv.URL + path, srv.URL + path + "?timeout=200ms", srv.URL + path + "?timeout=1h"} {
		start := time.Now()
		resp, st := getStatus(t, "GET", url)
		if resp.StatusCode != http.StatusGatewayTimeout || st.Reason != metav1.StatusReasonTimeout || !strings.Contains(st.Message, "request did not complete within requested timeout") {
			t.Fatalf("GET %s: %d %+v, want 504 Timeout", url, resp.StatusCode, st)
		}
		t.Logf("GET %s: 504 after %s", url, time.Since(start).Round(time.Millisecond))
	}
	resp, st := getStatus(t, "GET", srv.URL+path+"?timeout=soon")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(st.Message, "invalid timeout specified in the request URL") {
		t.Fatalf("malformed timeout: %d %+v", resp.StatusCode, st)
	}

	// A watch outlives the request timeout (it lists nothing: List does not hang).
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=2", nil)
	start := time.Now()
	wresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, wresp.Body)
	wresp.Body.Close()
	if wresp.StatusCode != http.StatusOK || time.Since(start) < 2*time.Second {
		t.Fatalf("watch: %d after %s, want 200 after its 2s", wresp.StatusCode, time.Since(start))
	}
}

// While storage does not answer, requests fail at once with 503 and a
// Retry-After, and /readyz names the failing check.
func TestStorageUnavailable(t *testing.T) {
	store := newFakeStore()
	s, srv := serveFake(t, store, nil)
	store.put(t, s, "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	down := fmt.Errorf("%w: etcd does not answer", storage.ErrUnavailable)
	store.mu.Lock()
	store.err = down
	store.mu.Unlock()

	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/namespaces/default/configmaps/cm"},
		{"GET", "/api/v1/namespaces/default/configmaps"},
		{"DELETE", "/api/v1/namespaces/default/configmaps/cm"},
	} {
		resp, st := getStatus(t, c.method, srv.URL+c.path)
		if resp.StatusCode != http.StatusServiceUnavailable || st.Reason != metav1.StatusReasonServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
			st.Details == nil || st.Details.RetryAfterSeconds != 1 || !strings.Contains(st.Message, "etcd does not answer") {
			t.Fatalf("%s %s: %d Retry-After %q %+v, want 503 ServiceUnavailable, Retry-After 1", c.method, c.path, resp.StatusCode, resp.Header.Get("Retry-After"), st)
		}
	}

	check := func(path string, code int, body string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != code || string(got) != body {
			t.Fatalf("GET %s: %d %q, want %d %q", path, resp.StatusCode, got, code, body)
		}
	}
	check("/readyz", 500, "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n")
	check("/readyz?verbose", 500, "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n")
	check("/healthz", 500, "[+]ping ok\n[-]etcd failed: reason withheld\nhealthz check failed\n")
	check("/readyz/etcd", 500, "internal server error: "+down.Error()+"\n")
	check("/readyz?exclude=etcd", 200, "ok")
	check("/readyz?exclude=etcd&exclude=nope&verbose", 200, "[+]ping ok\n[+]etcd excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check passed\n")
	check("/livez", 200, "ok")
	check("/readyz/ping", 200, "ok")

	store.mu.Lock()
	store.err = nil
	store.mu.Unlock()
	check("/readyz", 200, "ok")
	check("/readyz?verbose", 200, "[+]ping ok\n[+]etcd ok\nreadyz check passed\n")
	check("/livez?verbose", 200, "[+]ping ok\nlivez check passed\n")
	check("/readyz/etcd", 200, "ok")
}
