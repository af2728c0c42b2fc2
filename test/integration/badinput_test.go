package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// rawResponse is one raw HTTP exchange with the apiserver.
type rawResponse struct {
	code   int
	header http.Header
	body   []byte
}

// rawClient speaks plain HTTP to the apiserver with the admin's credentials.
type rawClient struct {
	t    *testing.T
	base string
	http *http.Client
}

func newRawClient(t *testing.T, c *cluster) *rawClient {
	t.Helper()
	hc, err := rest.HTTPClientFor(c.config)
	if err != nil {
		t.Fatal(err)
	}
	return &rawClient{t: t, base: c.cp.URL, http: hc}
}

// do sends one request; header holds extra headers (Content-Type, Accept).
func (rc *rawClient) do(ctx context.Context, method, path string, body []byte, header map[string]string) rawResponse {
	rc.t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, rc.base+path, r)
	if err != nil {
		rc.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := rc.http.Do(req)
	if err != nil {
		rc.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return rawResponse{code: resp.StatusCode, header: resp.Header, body: data}
}

// status decodes a response body as a metav1.Status and checks its envelope.
func (r rawResponse) status(t *testing.T) *metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatalf("body is not a Status: %v\n%s", err, r.body)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" {
		t.Fatalf("body kind/apiVersion = %q/%q, want Status/v1: %s", st.Kind, st.APIVersion, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Status served as %q, want application/json", ct)
	}
	return &st
}

// snapshot is name -> resourceVersion for every object a bad request
// might have touched.
func snapshot(t *testing.T, ctx context.Context, c *cluster, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	cms, err := c.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cms.Items {
		out["configmaps/"+o.Name] = o.ResourceVersion
	}
	pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pods.Items {
		out["pods/"+o.Name] = o.ResourceVersion
	}
	deps, err := c.client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range deps.Items {
		out["deployments/"+o.Name] = o.ResourceVersion
	}
	return out
}

func diffSnapshots(before, after map[string]string) string {
	var diffs []string
	for k, v := range before {
		if after[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s: %q -> %q", k, v, after[k]))
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: new at %q", k, v))
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestBadInput(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	rc := newRawClient(t, c)
	const ns = "default"
	cms := c.client.CoreV1().ConfigMaps(ns)

	// Fixtures: an existing ConfigMap (with a stale resourceVersion on
	// record) and a Deployment to patch into invalidity.
	existing, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "existing", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": "v1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := existing.DeepCopy()
	existing.Data["k"] = "v2"
	if existing, err = cms.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, testDeployment("web", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cmPath := "/api/v1/namespaces/" + ns + "/configmaps"
	podPath := "/api/v1/namespaces/" + ns + "/pods"
	depPath := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	jsonCT := map[string]string{"Content-Type": "application/json"}
	cm := func(name string) []byte {
		return mustJSON(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	pod := func(mutate func(*corev1.Pod)) []byte {
		p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		mutate(p)
		return mustJSON(t, p)
	}
	noSelector := testDeployment("nosel", 1)
	noSelector.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	noSelector.Spec.Selector = nil
	big := append(append([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"`), bytes.Repeat([]byte("x"), 20<<20)...), `"}}`...)
	staleBody := mustJSON(t, stale)
	// Each pair of copies doubles the document: 1 KiB becomes 64 MiB.
	copyOps := []string{`{"op":"add","path":"/metadata/annotations","value":{"a":"` + strings.Repeat("x", 1024) + `"}}`}
	for i := 0; i < 16; i++ {
		copyOps = append(copyOps, `{"op":"copy","from":"/metadata/annotations","path":"/data"}`,
			`{"op":"copy","from":"/data","path":"/metadata/annotations/b`+strings.Repeat("c", i)+`"}`)
	}
	copyBomb := []byte("[" + strings.Join(copyOps, ",") + "]")
	// someContinue is a well-formed continue token.
	someContinue := base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":"x"}`))

	cases := []struct {
		name   string
		method string
		path   string
		header map[string]string
		body   []byte
		code   int
		reason metav1.StatusReason
		// causes are the field paths a 422 must name.
		causes []string
	}{
		{name: "malformed JSON", method: "POST", path: cmPath, header: jsonCT, body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"`),
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "JSON array body", method: "POST", path: cmPath, header: jsonCT, body: []byte(`[1,2,3]`),
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "empty body", method: "POST", path: cmPath, header: jsonCT, body: []byte{},
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed YAML", method: "POST", path: cmPath, header: map[string]string{"Content-Type": "application/yaml"},
			body: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n  : :\n"), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "YAML with duplicate keys", method: "POST", path: cmPath, header: map[string]string{"Content-Type": "application/yaml"},
			body: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\n  name: dup2\n"), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong apiVersion", method: "POST", path: cmPath, header: jsonCT, body: []byte(`{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}`),
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong kind", method: "POST", path: cmPath, header: jsonCT, body: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`),
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong type for a field", method: "POST", path: cmPath, header: jsonCT, body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"k":1}}`),
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "invalid name", method: "POST", path: cmPath, header: jsonCT, body: cm("Bad_Name"),
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"metadata.name"}},
		{name: "missing name", method: "POST", path: cmPath, header: jsonCT, body: cm(""),
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"metadata.name"}},
		{name: "pod without containers", method: "POST", path: podPath, header: jsonCT, body: pod(func(p *corev1.Pod) { p.Spec.Containers = nil }),
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"spec.containers"}},
		{name: "container without image", method: "POST", path: podPath, header: jsonCT, body: pod(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }),
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"spec.containers[0].image"}},
		{name: "deployment without selector", method: "POST", path: depPath, header: jsonCT, body: mustJSON(t, noSelector),
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"spec.selector"}},
		{name: "namespace mismatch", method: "POST", path: cmPath, header: jsonCT, body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"kube-system"}}`),
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "resourceVersion on create", method: "POST", path: cmPath, header: jsonCT, body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"5"}}`),
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "20MB body", method: "POST", path: cmPath, header: jsonCT, body: big,
			code: 413, reason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "20MB patch", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "application/merge-patch+json"}, body: big,
			code: 413, reason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "garbage protobuf body", method: "POST", path: cmPath, header: map[string]string{"Content-Type": "application/vnd.kubernetes.protobuf"},
			body: []byte("k8s\x00\xff\xff\xff\xff"), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "protobuf body without the magic", method: "POST", path: cmPath, header: map[string]string{"Content-Type": "application/vnd.kubernetes.protobuf"},
			body: cm("x"), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "stale resourceVersion on PUT", method: "PUT", path: cmPath + "/existing", header: jsonCT, body: staleBody,
			code: 409, reason: metav1.StatusReasonConflict},
		{name: "PUT name mismatch", method: "PUT", path: cmPath + "/other", header: jsonCT, body: staleBody,
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "create existing name", method: "POST", path: cmPath, header: jsonCT, body: cm("existing"),
			code: 409, reason: metav1.StatusReasonAlreadyExists},
		{name: "GET missing object", method: "GET", path: cmPath + "/missing",
			code: 404, reason: metav1.StatusReasonNotFound},
		{name: "PUT missing object", method: "PUT", path: cmPath + "/missing", header: jsonCT, body: cm("missing"),
			code: 404, reason: metav1.StatusReasonNotFound},
		{name: "DELETE missing object", method: "DELETE", path: cmPath + "/missing",
			code: 404, reason: metav1.StatusReasonNotFound},
		{name: "missing namespace", method: "POST", path: "/api/v1/namespaces/nope/configmaps", header: jsonCT, body: cm("x"),
			code: 404, reason: metav1.StatusReasonNotFound},
		{name: "unknown resource", method: "GET", path: "/api/v1/namespaces/default/frobnicators",
			code: 404, reason: metav1.StatusReasonNotFound},
		{name: "unknown group", method: "GET", path: "/apis/nope.example.com/v1/things",
			code: 404, reason: metav1.StatusReasonNotFound},
		{name: "unknown subresource", method: "GET", path: cmPath + "/existing/frob",
			code: 404, reason: metav1.StatusReasonNotFound},
		{name: "strict field validation", method: "POST", path: cmPath + "?fieldValidation=Strict", header: jsonCT,
			body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"bogus":1}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "strict duplicate field", method: "POST", path: cmPath + "?fieldValidation=Strict", header: jsonCT,
			body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict","name":"strict2"}}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad fieldValidation value", method: "POST", path: cmPath + "?fieldValidation=Loose", header: jsonCT, body: cm("x"),
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad dryRun value", method: "POST", path: cmPath + "?dryRun=Some", header: jsonCT, body: cm("x"),
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "unsupported body content type", method: "POST", path: cmPath, header: map[string]string{"Content-Type": "text/plain"}, body: cm("x"),
			code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "unsupported patch content type", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "text/plain"},
			body: []byte(`{"data":{"k":"patched"}}`), code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "patch with application/json", method: "PATCH", path: cmPath + "/existing", header: jsonCT,
			body: []byte(`{"data":{"k":"patched"}}`), code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "invalid JSON patch", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "application/json-patch+json"},
			body: []byte(`{"op":"replace","path":"/data/k","value":"patched"}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "JSON patch op fails", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "application/json-patch+json"},
			body: []byte(`[{"op":"replace","path":"/data/k","value":"patched"},{"op":"remove","path":"/nope/deeper"}]`), code: 422, reason: metav1.StatusReasonInvalid},
		{name: "JSON patch test fails", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "application/json-patch+json"},
			body: []byte(`[{"op":"test","path":"/data/k","value":"not-this"},{"op":"replace","path":"/data/k","value":"patched"}]`), code: 422, reason: metav1.StatusReasonInvalid},
		{name: "JSON patch copy bomb", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "application/json-patch+json"},
			body: copyBomb, code: 422, reason: metav1.StatusReasonInvalid},
		{name: "strategic merge patch with a list as merge key", method: "PATCH", path: depPath + "/web", header: map[string]string{"Content-Type": "application/strategic-merge-patch+json"},
			body: []byte(`{"spec":{"template":{"spec":{"containers":[{"name":[]}]}}}}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed merge patch", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "application/merge-patch+json"},
			body: []byte(`{"data":`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed strategic merge patch", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "application/strategic-merge-patch+json"},
			body: []byte(`[1]`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "merge patch to a wrong type", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "application/merge-patch+json"},
			body: []byte(`{"data":{"k":7}}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "patch into invalidity", method: "PATCH", path: depPath + "/web", header: map[string]string{"Content-Type": "application/json-patch+json"},
			body: []byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":""}]`),
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"spec.template.spec.containers[0].image"}},
		{name: "patch changing the name", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "application/merge-patch+json"},
			body: []byte(`{"metadata":{"name":"renamed"}}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "patch with stale resourceVersion", method: "PATCH", path: cmPath + "/existing", header: map[string]string{"Content-Type": "application/merge-patch+json"},
			body: []byte(`{"metadata":{"resourceVersion":"` + stale.ResourceVersion + `"},"data":{"k":"patched"}}`), code: 409, reason: metav1.StatusReasonConflict},
		{name: "patch of a missing object", method: "PATCH", path: cmPath + "/missing", header: map[string]string{"Content-Type": "application/merge-patch+json"},
			body: []byte(`{"data":{"k":"patched"}}`), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "deletecollection with a bad label selector", method: "DELETE", path: cmPath + "?labelSelector=a+in+(b", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "deletecollection with an unknown field selector", method: "DELETE", path: cmPath + "?fieldSelector=spec.bogus%3D1", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "list with a bad label selector", method: "GET", path: cmPath + "?labelSelector=%21%21%21", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "invalid continue token", method: "GET", path: cmPath + "?limit=1&continue=not-a-token", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "forged continue token", method: "GET", path: cmPath + "?limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTF9", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "negative limit", method: "GET", path: cmPath + "?limit=-1", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "non-numeric limit", method: "GET", path: cmPath + "?limit=ten", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad propagationPolicy", method: "DELETE", path: cmPath + "/existing?propagationPolicy=Sideways",
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"propagationPolicy"}},
		{name: "bad propagationPolicy in DeleteOptions", method: "DELETE", path: cmPath + "/existing", header: jsonCT,
			body: []byte(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Sideways"}`), code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"propagationPolicy"}},
		{name: "orphanDependents with a propagationPolicy", method: "DELETE", path: cmPath + "/existing", header: jsonCT,
			body: []byte(`{"kind":"DeleteOptions","apiVersion":"v1","orphanDependents":true,"propagationPolicy":"Background"}`), code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"propagationPolicy"}},
		{name: "deletecollection with a bad propagationPolicy", method: "DELETE", path: cmPath + "?propagationPolicy=Sideways",
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"propagationPolicy"}},
		{name: "malformed DeleteOptions", method: "DELETE", path: cmPath + "/existing", header: jsonCT, body: []byte(`{"propagationPolicy":`),
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad gracePeriodSeconds", method: "DELETE", path: cmPath + "/existing?gracePeriodSeconds=soon", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "delete with a failed uid precondition", method: "DELETE", path: cmPath + "/existing", header: jsonCT,
			body: []byte(`{"preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`), code: 409, reason: metav1.StatusReasonConflict},
		{name: "delete with a stale resourceVersion precondition", method: "DELETE", path: cmPath + "/existing", header: jsonCT,
			body: []byte(`{"preconditions":{"resourceVersion":"` + stale.ResourceVersion + `"}}`), code: 409, reason: metav1.StatusReasonConflict},
		{name: "watch from a non-numeric resourceVersion", method: "GET", path: cmPath + "?watch=true&resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "exact list at a non-numeric resourceVersion", method: "GET", path: cmPath + "?resourceVersion=abc&resourceVersionMatch=Exact", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "list at a non-numeric resourceVersion", method: "GET", path: cmPath + "?resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "list at a negative resourceVersion", method: "GET", path: cmPath + "?resourceVersion=-1", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "get at a non-numeric resourceVersion", method: "GET", path: cmPath + "/existing?resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "resourceVersionMatch without a resourceVersion", method: "GET", path: cmPath + "?resourceVersionMatch=Exact",
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"resourceVersionMatch"}},
		{name: "unknown resourceVersionMatch", method: "GET", path: cmPath + "?resourceVersion=1&resourceVersionMatch=Bogus",
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"resourceVersionMatch"}},
		{name: "unknown resourceVersionMatch without a resourceVersion", method: "GET", path: cmPath + "?resourceVersionMatch=Bogus",
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"resourceVersionMatch"}},
		{name: "exact list at resourceVersion 0", method: "GET", path: cmPath + "?resourceVersion=0&resourceVersionMatch=Exact",
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"resourceVersionMatch"}},
		{name: "resourceVersionMatch with continue", method: "GET", path: cmPath + "?limit=1&continue=" + someContinue + "&resourceVersion=1&resourceVersionMatch=NotOlderThan",
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"resourceVersionMatch"}},
		{name: "resourceVersion with continue", method: "GET", path: cmPath + "?limit=1&continue=" + someContinue + "&resourceVersion=5",
			code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "sendInitialEvents on a list", method: "GET", path: cmPath + "?sendInitialEvents=true",
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"sendInitialEvents"}},
		{name: "resourceVersionMatch on a watch without sendInitialEvents", method: "GET", path: cmPath + "?watch=true&resourceVersion=1&resourceVersionMatch=NotOlderThan",
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"resourceVersionMatch"}},
		{name: "list not older than a future resourceVersion", method: "GET", path: cmPath + "?resourceVersion=9000000000",
			code: 504, reason: metav1.StatusReasonTimeout},
		{name: "deletecollection with an unknown resourceVersionMatch", method: "DELETE", path: cmPath + "?resourceVersion=1&resourceVersionMatch=Bogus",
			code: 422, reason: metav1.StatusReasonInvalid, causes: []string{"resourceVersionMatch"}},
		{name: "list with an unknown field selector", method: "GET", path: cmPath + "?fieldSelector=spec.bogus%3D1", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed timeout", method: "GET", path: cmPath + "?timeout=soon", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "DELETE on discovery", method: "DELETE", path: "/api/v1", code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "POST on the group list", method: "POST", path: "/apis", header: jsonCT, body: cm("x"), code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "PUT on a group version", method: "PUT", path: "/apis/apps/v1", header: jsonCT, body: cm("x"), code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "PATCH on the core API versions", method: "PATCH", path: "/api", header: map[string]string{"Content-Type": "application/merge-patch+json"}, body: []byte(`{}`),
			code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "method not allowed on a collection", method: "PUT", path: cmPath, header: jsonCT, body: cm("x"),
			code: 405, reason: metav1.StatusReasonMethodNotAllowed},
	}

	before := snapshot(t, ctx, c, ns)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := rc.do(ctx, tc.method, tc.path, tc.body, tc.header)
			if resp.code != tc.code {
				t.Fatalf("%s %s: HTTP %d, want %d: %.500s", tc.method, tc.path, resp.code, tc.code, resp.body)
			}
			st := resp.status(t)
			if st.Status != metav1.StatusFailure || int(st.Code) != tc.code || st.Reason != tc.reason {
				t.Fatalf("status = %s/%d/%s, want Failure/%d/%s: %s", st.Status, st.Code, st.Reason, tc.code, tc.reason, resp.body)
			}
			if st.Message == "" {
				t.Errorf("Status without a message: %s", resp.body)
			}
			for _, want := range tc.causes {
				found := false
				if st.Details != nil {
					for _, cause := range st.Details.Causes {
						found = found || cause.Field == want
					}
				}
				if !found {
					t.Errorf("no cause for field %s: %s", want, resp.body)
				}
			}
			if after := snapshot(t, ctx, c, ns); len(diffSnapshots(before, after)) > 0 {
				t.Fatalf("a rejected request changed storage: %s", diffSnapshots(before, after))
			}
			if r := rc.do(ctx, "GET", "/readyz", nil, nil); r.code != 200 || string(r.body) != "ok" {
				t.Fatalf("/readyz after the request: %d %s", r.code, r.body)
			}
		})
	}
	if got, err := cms.Get(ctx, "existing", metav1.GetOptions{}); err != nil || got.Data["k"] != "v2" || got.ResourceVersion != existing.ResourceVersion {
		t.Fatalf("existing ConfigMap changed: %+v %v", got, err)
	}

	// As in Kubernetes, a watch whose timeoutSeconds is negative is not
	// refused: its time is up at once, and it ends with nothing sent.
	if r := rc.do(ctx, "GET", cmPath+"?watch=true&timeoutSeconds=-1", nil, nil); r.code != http.StatusOK || len(r.body) != 0 {
		t.Fatalf("watch with a negative timeoutSeconds: %d %q", r.code, r.body)
	}

	// Without fieldValidation the unknown field is dropped with a warning.
	resp := rc.do(ctx, "POST", cmPath, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned"},"bogus":1}`), jsonCT)
	if resp.code != http.StatusCreated {
		t.Fatalf("create with an unknown field: %d %s", resp.code, resp.body)
	}
	if w := resp.header.Values("Warning"); len(w) != 1 || !strings.HasPrefix(w[0], "299 ") || !strings.Contains(w[0], "bogus") {
		t.Fatalf("Warning header = %q, want one 299 warning naming the field", w)
	}
	var warned corev1.ConfigMap
	if err := json.Unmarshal(resp.body, &warned); err != nil || warned.Name != "warned" || warned.ResourceVersion == "" {
		t.Fatalf("created object: %v %s", err, resp.body)
	}
	// Ignore drops it silently.
	resp = rc.do(ctx, "POST", cmPath+"?fieldValidation=Ignore", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ignored"},"bogus":1}`), jsonCT)
	if resp.code != http.StatusCreated || len(resp.header.Values("Warning")) != 0 {
		t.Fatalf("fieldValidation=Ignore: %d %q %s", resp.code, resp.header.Values("Warning"), resp.body)
	}

	// The 413 did not wedge the connection pool: the same client still works.
	if _, err := c.client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if r := rc.do(ctx, "GET", depPath+"/web", nil, nil); r.code != 200 || json.Unmarshal(r.body, &dep) != nil || dep.Spec.Template.Spec.Containers[0].Image == "" {
		t.Fatalf("deployment after the rejected patch: %d %s", r.code, r.body)
	}
}

func TestUnauthenticated(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	anon := &rawClient{t: t, base: c.cp.URL, http: &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: c.cp.Bundle.CAPool, MinVersion: tls.VersionTLS12},
	}}}
	for _, path := range []string{"/api/v1/namespaces", "/api/v1/namespaces/default/configmaps", "/apis", "/metrics", "/openapi/v2"} {
		resp := anon.do(ctx, "GET", path, nil, nil)
		if resp.code != http.StatusUnauthorized {
			t.Fatalf("GET %s without credentials: %d %s", path, resp.code, resp.body)
		}
		if st := resp.status(t); st.Reason != metav1.StatusReasonUnauthorized || st.Code != 401 {
			t.Fatalf("GET %s: %+v", path, st)
		}
	}
	resp := anon.do(ctx, "POST", "/api/v1/namespaces/default/configmaps", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"anon"}}`), map[string]string{"Content-Type": "application/json"})
	if resp.code != http.StatusUnauthorized {
		t.Fatalf("anonymous create: %d %s", resp.code, resp.body)
	}
	if _, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "anon", metav1.GetOptions{}); err == nil {
		t.Fatal("an anonymous create was stored")
	}
	badToken := anon.do(ctx, "GET", "/api/v1/namespaces", nil, map[string]string{"Authorization": "Bearer not-a-token"})
	if badToken.code != http.StatusUnauthorized {
		t.Fatalf("bad bearer token: %d %s", badToken.code, badToken.body)
	}
	badToken.status(t)
	for _, path := range []string{"/healthz", "/readyz", "/livez", "/version"} {
		if resp := anon.do(ctx, "GET", path, nil, nil); resp.code != http.StatusOK {
			t.Fatalf("GET %s without credentials: %d %s", path, resp.code, resp.body)
		}
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
		GoVersion  string `json:"goVersion"`
	}
	if resp := anon.do(ctx, "GET", "/version", nil, nil); json.Unmarshal(resp.body, &v) != nil || v.GitVersion == "" || v.GoVersion == "" {
		t.Fatalf("/version: %s", resp.body)
	}
}
