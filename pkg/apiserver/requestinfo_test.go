package apiserver

import (
	"net/http/httptest"
	"testing"
)

// ?watch= reads as Kubernetes' parameter codec reads a boolean: only
// "0" and "false" (any case) are false.
func TestWatchParameter(t *testing.T) {
	for query, want := range map[string]string{
		"":             "list",
		"?watch=0":     "list",
		"?watch=false": "list",
		"?watch=FALSE": "list",
		"?watch=1":     "watch",
		"?watch=true":  "watch",
		"?watch=yes":   "watch",
		"?watch=":      "watch",
	} {
		r := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps"+query, nil)
		if got := parseRequestInfo(r).Verb; got != want {
			t.Errorf("GET %q: verb %s, want %s", query, got, want)
		}
	}
}
