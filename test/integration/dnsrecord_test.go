package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

var dnsRecordsGVR = minik8sv1.SchemeGroupVersion.WithResource("dnsrecords")

// dnsRecordYAML is the seeds' DNS record as a user writes it: one path
// without its leading "/", one port by name.
const dnsRecordYAML = `apiVersion: minik8s.io/v1
kind: DNSRecord
metadata:
  name: site
spec:
  host: minik8s.com
  paths:
  - path: /path1
    service: svc-a
    port: 80
  - path: path2
    service: svc-b
    port: http
`

// dnsRecordModifiedYAML drops /path1, moves /path2 to a port number and
// adds /path3.
const dnsRecordModifiedYAML = `apiVersion: minik8s.io/v1
kind: DNSRecord
metadata:
  name: site
spec:
  host: minik8s.com
  paths:
  - path: /path2
    service: svc-b
    port: 8080
  - path: /path3
    service: svc-c
    port: 9090
`

// getDNSRecord reads a record through the dynamic client and converts it
// to the Go type, as a controller of minik8s.io kinds would.
func getDNSRecord(t *testing.T, ctx context.Context, dyn dynamic.Interface, name string) (*minik8sv1.DNSRecord, error) {
	t.Helper()
	u, err := dyn.Resource(dnsRecordsGVR).Namespace("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return toDNSRecord(t, u), nil
}

func toDNSRecord(t *testing.T, u *unstructured.Unstructured) *minik8sv1.DNSRecord {
	t.Helper()
	r := &minik8sv1.DNSRecord{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
		t.Fatalf("convert %s: %v", u.GetName(), err)
	}
	return r
}

// TestDNSRecordKubectl is a user's session with minik8s' own kind: apply,
// get, describe, apply a change, be refused bad input, delete.
func TestDNSRecordKubectl(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	k := newKubectl(t, c)
	dir := t.TempDir()
	dyn := dynamic.NewForConfigOrDie(c.config)

	// Discovery: the kind is listed under minik8s.io/v1, after Kubernetes' groups.
	out := k.ok(t, "api-resources", "--api-group=minik8s.io")
	if !slices.ContainsFunc(outputLines(out), func(l string) bool {
		return slices.Equal(strings.Fields(l), []string{"dnsrecords", "dnsr", "minik8s.io/v1", "true", "DNSRecord"})
	}) {
		t.Fatalf("api-resources --api-group=minik8s.io:\n%s", out)
	}
	if versions := outputLines(k.ok(t, "api-versions")); !slices.Contains(versions, "minik8s.io/v1") {
		t.Fatalf("api-versions has no minik8s.io/v1: %v", versions)
	}
	var apis metav1.APIGroupList
	if err := json.Unmarshal([]byte(k.ok(t, "get", "--raw", "/apis")), &apis); err != nil {
		t.Fatal(err)
	}
	if last := apis.Groups[len(apis.Groups)-1]; last.Name != minik8sv1.GroupName || last.PreferredVersion.Version != "v1" {
		t.Fatalf("last group of /apis is %+v, want minik8s.io/v1 after Kubernetes' groups", last)
	}

	// apply creates; the path gets its leading "/".
	file := writeTestFile(t, dir, "dnsrecord.yaml", dnsRecordYAML)
	if out := k.ok(t, "apply", "-f", file); strings.TrimSpace(out) != "dnsrecord.minik8s.io/site created" {
		t.Fatalf("apply: %q", out)
	}
	r, err := getDNSRecord(t, ctx, dyn, "site")
	if err != nil {
		t.Fatal(err)
	}
	wantPaths := []minik8sv1.DNSRecordPath{
		{Path: "/path1", Service: "svc-a", Port: intstr.FromInt32(80)},
		{Path: "/path2", Service: "svc-b", Port: intstr.FromString("http")},
	}
	if r.Spec.Host != "minik8s.com" || !slices.Equal(r.Spec.Paths, wantPaths) || r.Generation != 1 {
		t.Fatalf("stored record: generation %d, spec %+v", r.Generation, r.Spec)
	}

	// get shows host and paths; the short name and a field selector find it.
	out = k.ok(t, "get", "dnsrecords")
	if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "HOST", "PATHS", "ADDRESS", "AGE"}) {
		t.Fatalf("get dnsrecords header %v:\n%s", h, out)
	}
	if row := strings.Fields(outputLines(out)[1]); row[0] != "site" || row[1] != "minik8s.com" || row[2] != "/path1->svc-a:80,/path2->svc-b:http" {
		t.Fatalf("get dnsrecords row %v:\n%s", row, out)
	}
	if out := k.ok(t, "get", "dnsr", "--field-selector", "spec.host=minik8s.com", "-o", "name"); strings.TrimSpace(out) != "dnsrecord.minik8s.io/site" {
		t.Fatalf("get dnsr --field-selector: %q", out)
	}

	// Applying the same file again writes nothing. (kubectl says
	// "configured": paths is an atomic list, and the file's "path2" differs
	// from the stored, defaulted "/path2", so its patch is not empty.)
	k.ok(t, "apply", "-f", file)
	if again, err := getDNSRecord(t, ctx, dyn, "site"); err != nil || again.ResourceVersion != r.ResourceVersion {
		t.Fatalf("re-apply wrote: %v, resourceVersion %s -> %s", err, r.ResourceVersion, again.ResourceVersion)
	}

	// get -o yaml round-trips: the YAML decodes, strictly, to the object the
	// API serves, and replacing the object with it leaves spec and
	// generation as they are (kubectl refreshes its last-applied annotation).
	yamlOut := k.ok(t, "get", "dnsrecord", "site", "-o", "yaml")
	var fromYAML minik8sv1.DNSRecord
	if err := yaml.UnmarshalStrict([]byte(yamlOut), &fromYAML); err != nil {
		t.Fatalf("get -o yaml is not a DNSRecord: %v\n%s", err, yamlOut)
	}
	// kubectl leaves managedFields out of its output unless
	// --show-managed-fields, as for every kind.
	served := r.DeepCopy()
	served.ManagedFields = nil
	if fromYAML.APIVersion != "minik8s.io/v1" || fromYAML.Kind != "DNSRecord" || !equality.Semantic.DeepEqual(&fromYAML, served) {
		t.Fatalf("get -o yaml differs from the served object:\n%s", yamlOut)
	}
	k.ok(t, "replace", "-f", writeTestFile(t, dir, "roundtrip.yaml", yamlOut))
	if again, err := getDNSRecord(t, ctx, dyn, "site"); err != nil || again.Generation != 1 || !equality.Semantic.DeepEqual(again.Spec, r.Spec) {
		t.Fatalf("replace with get -o yaml's output: %v, %+v", err, again)
	}

	// describe works without a describer of its own.
	out = k.ok(t, "describe", "dnsrecord", "site")
	for _, want := range []string{"Name:", "site", "Namespace:", "default", "API Version:", "minik8s.io/v1", "Kind:", "DNSRecord", "Host:", "minik8s.com", "/path1", "svc-a", "/path2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe has no %q:\n%s", want, out)
		}
	}
	// explain reads the served OpenAPI schema.
	if out := k.ok(t, "explain", "dnsrecords.spec.paths"); !strings.Contains(out, "service") || !strings.Contains(out, "<IntOrString>") {
		t.Fatalf("explain dnsrecords.spec.paths:\n%s", out)
	}

	// A modified file configures it, dropping what the file dropped, and
	// bumps generation (after the replace above, kubectl's patch also
	// removes the generation and uid that replace saved as last applied).
	if out := k.ok(t, "apply", "-f", writeTestFile(t, dir, "dnsrecord.yaml", dnsRecordModifiedYAML)); strings.TrimSpace(out) != "dnsrecord.minik8s.io/site configured" {
		t.Fatalf("apply modified: %q", out)
	}
	r, err = getDNSRecord(t, ctx, dyn, "site")
	if err != nil {
		t.Fatal(err)
	}
	wantPaths = []minik8sv1.DNSRecordPath{
		{Path: "/path2", Service: "svc-b", Port: intstr.FromInt32(8080)},
		{Path: "/path3", Service: "svc-c", Port: intstr.FromInt32(9090)},
	}
	if !slices.Equal(r.Spec.Paths, wantPaths) || r.Generation != 2 {
		t.Fatalf("after apply of the modified file: generation %d, paths %+v", r.Generation, r.Spec.Paths)
	}

	// The gateway writes status through /status; the spec does not move
	// and the generation stays, and get shows the address.
	st := r.DeepCopy()
	st.Status = minik8sv1.DNSRecordStatus{Address: "10.96.0.20", ObservedGeneration: r.Generation, Conditions: []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Configured", LastTransitionTime: metav1.Now()},
	}}
	st.Spec.Host = "ignored.minik8s.com"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		t.Fatal(err)
	}
	updated, err := dyn.Resource(dnsRecordsGVR).Namespace("default").UpdateStatus(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if got := toDNSRecord(t, updated); got.Status.Address != "10.96.0.20" || got.Spec.Host != "minik8s.com" || got.Generation != 2 {
		t.Fatalf("after /status: generation %d, host %q, status %+v", got.Generation, got.Spec.Host, got.Status)
	}
	if row := strings.Fields(outputLines(k.ok(t, "get", "dnsrecords"))[1]); row[3] != "10.96.0.20" {
		t.Fatalf("get dnsrecords after status: %v", row)
	}

	// Bad input is refused with 422, field paths named, nothing stored.
	before, err := dyn.Resource(dnsRecordsGVR).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc := newRawClient(t, c)
	for _, tc := range []struct {
		name, find, replace string
		field               string
	}{
		{name: "uppercase host", find: "host: minik8s.com", replace: "host: Minik8s.COM", field: "spec.host"},
		{name: "path with ;", find: "path: /path2", replace: `path: "/path2;return 200"`, field: "spec.paths[0].path"},
		{name: "port 0", find: "port: 8080", replace: "port: 0", field: "spec.paths[0].port"},
		{name: "no paths", find: "  paths:\n  - path: /path2\n    service: svc-b\n    port: 8080\n  - path: /path3\n    service: svc-c\n    port: 9090\n", replace: "  paths: []\n", field: "spec.paths"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(dnsRecordModifiedYAML, tc.find, tc.replace, 1)
			if bad == dnsRecordModifiedYAML {
				t.Fatalf("fixture: %q not found", tc.find)
			}
			// kubectl apply of the existing record (a patch) and of a new one (a create).
			stderr := k.fails(t, "apply", "-f", writeTestFile(t, dir, "bad.yaml", bad))
			if !strings.Contains(stderr, `The DNSRecord "site" is invalid`) || !strings.Contains(stderr, tc.field) {
				t.Fatalf("apply (patch) stderr: %s", stderr)
			}
			stderr = k.fails(t, "apply", "-f", writeTestFile(t, dir, "bad-new.yaml", strings.Replace(bad, "name: site", "name: bad", 1)))
			if !strings.Contains(stderr, `The DNSRecord "bad" is invalid`) || !strings.Contains(stderr, tc.field) {
				t.Fatalf("apply (create) stderr: %s", stderr)
			}
			// The same create, raw: a 422 Status, reason Invalid, the field as its cause.
			js, err := yaml.YAMLToJSON([]byte(strings.Replace(bad, "name: site", "name: bad", 1)))
			if err != nil {
				t.Fatal(err)
			}
			resp := rc.do(ctx, http.MethodPost, "/apis/minik8s.io/v1/namespaces/default/dnsrecords", js, map[string]string{"Content-Type": "application/json"})
			if resp.code != http.StatusUnprocessableEntity {
				t.Fatalf("POST: HTTP %d: %s", resp.code, resp.body)
			}
			s := resp.status(t)
			if s.Reason != metav1.StatusReasonInvalid || s.Details == nil || s.Details.Group != "minik8s.io" || s.Details.Kind != "DNSRecord" ||
				!slices.ContainsFunc(s.Details.Causes, func(c metav1.StatusCause) bool { return c.Field == tc.field }) {
				t.Fatalf("POST: status %+v", s)
			}
		})
	}
	after, err := dyn.Resource(dnsRecordsGVR).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Items) != 1 || after.Items[0].GetResourceVersion() != before.Items[0].GetResourceVersion() {
		t.Fatalf("bad input changed storage: %d records, resourceVersion %s -> %s", len(after.Items),
			before.Items[0].GetResourceVersion(), after.Items[len(after.Items)-1].GetResourceVersion())
	}

	// delete removes it.
	if out := k.ok(t, "delete", "dnsrecord", "site"); strings.TrimSpace(out) != `dnsrecord.minik8s.io "site" deleted from default namespace` &&
		strings.TrimSpace(out) != `dnsrecord.minik8s.io "site" deleted` {
		t.Fatalf("delete: %q", out)
	}
	if _, err := getDNSRecord(t, ctx, dyn, "site"); !apierrors.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
	if out := k.ok(t, "get", "dnsrecords"); !strings.Contains(out, "No resources found") && strings.TrimSpace(out) != "" {
		t.Fatalf("get after delete: %q", out)
	}
}

// TestDNSRecordWatch: a client-go dynamic watch sees a record added,
// modified and deleted.
func TestDNSRecordWatch(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	dyn := dynamic.NewForConfigOrDie(c.config)
	records := dyn.Resource(dnsRecordsGVR).Namespace("default")

	list, err := records.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := records.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	k := newKubectl(t, c)
	k.ok(t, "apply", "-f", writeTestFile(t, t.TempDir(), "dnsrecord.yaml", dnsRecordYAML))
	next := func(want watch.EventType) *minik8sv1.DNSRecord {
		t.Helper()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed before %s", want)
			}
			if ev.Type != want {
				t.Fatalf("event %s, want %s: %+v", ev.Type, want, ev.Object)
			}
			return toDNSRecord(t, ev.Object.(*unstructured.Unstructured))
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event in 10s", want)
		}
		return nil
	}
	if r := next(watch.Added); r.Name != "site" || r.Spec.Host != "minik8s.com" || len(r.Spec.Paths) != 2 || r.Spec.Paths[1].Path != "/path2" {
		t.Fatalf("ADDED %+v", r)
	}
	if _, err := records.Patch(ctx, "site", "application/merge-patch+json", []byte(`{"spec":{"host":"www.minik8s.com"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := next(watch.Modified); r.Spec.Host != "www.minik8s.com" || r.Generation != 2 {
		t.Fatalf("MODIFIED %+v", r)
	}
	if err := records.Delete(ctx, "site", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next(watch.Deleted)
}

// TestDNSRecordMediaTypes: DNSRecords have no protobuf encoding. As for
// Kubernetes' custom resources, a client that prefers protobuf but takes
// JSON gets JSON, one that takes only protobuf gets 406, and a protobuf
// body is refused with 415.
func TestDNSRecordMediaTypes(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	rc := newRawClient(t, c)
	k := newKubectl(t, c)
	k.ok(t, "apply", "-f", writeTestFile(t, t.TempDir(), "dnsrecord.yaml", dnsRecordYAML))
	const coll = "/apis/minik8s.io/v1/namespaces/default/dnsrecords"
	for _, path := range []string{coll, coll + "/site", coll + "/site/status"} {
		resp := rc.do(ctx, http.MethodGet, path, nil, map[string]string{"Accept": "application/vnd.kubernetes.protobuf, application/json"})
		if resp.code != http.StatusOK || resp.header.Get("Content-Type") != "application/json" || !json.Valid(resp.body) {
			t.Errorf("GET %s preferring protobuf: HTTP %d %s: %.200s", path, resp.code, resp.header.Get("Content-Type"), resp.body)
		}
		resp = rc.do(ctx, http.MethodGet, path, nil, map[string]string{"Accept": "application/vnd.kubernetes.protobuf"})
		if resp.code != http.StatusNotAcceptable {
			t.Errorf("GET %s accepting only protobuf: HTTP %d, want 406", path, resp.code)
		}
	}
	// Kubernetes' own kinds still speak protobuf.
	resp := rc.do(ctx, http.MethodGet, "/api/v1/namespaces/default/configmaps", nil, map[string]string{"Accept": "application/vnd.kubernetes.protobuf, application/json"})
	if resp.code != http.StatusOK || resp.header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
		t.Errorf("configmaps preferring protobuf: HTTP %d %s", resp.code, resp.header.Get("Content-Type"))
	}
	resp = rc.do(ctx, http.MethodPost, coll, []byte("k8s\x00\n\x18\n\rminik8s.io/v1\x12\tDNSRecord\x12\x00"),
		map[string]string{"Content-Type": "application/vnd.kubernetes.protobuf"})
	if resp.code != http.StatusUnsupportedMediaType || resp.status(t).Reason != metav1.StatusReasonUnsupportedMediaType {
		t.Errorf("POST protobuf: HTTP %d: %s", resp.code, resp.body)
	}
}
