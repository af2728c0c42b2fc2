package apiserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A write without a resourceVersion precondition is applied again to what
// the writer that beat it stored, however many times it loses, as
// Kubernetes' GuaranteedUpdate does; one with a stale resourceVersion is a
// 409 at once.
func TestUnconditionalWritesOutlastConflicts(t *testing.T) {
	store := newFakeStore()
	s, srv := serveFake(t, store, nil)
	store.put(t, s, "configmaps", &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default", UID: "u1"},
	})
	const path = "/api/v1/namespaces/default/configmaps/cm"
	const losses = 250 // more than any fixed number of retries we once had
	for _, tc := range []struct {
		name, method, contentType, body, key string
		code                                 int
	}{
		{"merge patch", "PATCH", "application/merge-patch+json", `{"metadata":{"annotations":{"merge":"1"}}}`, "merge", 200},
		{"strategic merge patch", "PATCH", "application/strategic-merge-patch+json", `{"metadata":{"annotations":{"strategic":"1"}}}`, "strategic", 200},
		{"JSON patch", "PATCH", "application/json-patch+json", `[{"op":"add","path":"/data","value":{"json":"1"}}]`, "json", 200},
		{"update without resourceVersion", "PUT", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","annotations":{"put":"1"}},"data":{"json":"1"}}`, "put", 200},
		{"merge patch with a stale resourceVersion", "PATCH", "application/merge-patch+json",
			`{"metadata":{"resourceVersion":"1","annotations":{"stale":"1"}}}`, "", 409},
		{"update with a stale resourceVersion", "PUT", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","resourceVersion":"1","annotations":{"stale":"1"}}}`, "", 409},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store.mu.Lock()
			store.lose = losses
			store.mu.Unlock()
			req, _ := http.NewRequest(tc.method, srv.URL+path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("%s after %d lost races: %d %s, want %d", tc.method, losses, resp.StatusCode, body, tc.code)
			}
			if tc.code != 200 {
				return
			}
			var cm corev1.ConfigMap
			if err := json.Unmarshal(body, &cm); err != nil {
				t.Fatal(err)
			}
			if cm.Annotations[tc.key] != "1" && cm.Data[tc.key] != "1" {
				t.Fatalf("the write is not in the answer: %s", body)
			}
			store.mu.Lock()
			left := store.lose
			store.mu.Unlock()
			if left != 0 {
				t.Fatalf("the write won before losing every race (%d left)", left)
			}
		})
	}
}
