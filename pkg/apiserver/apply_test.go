package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// managers lists an object's managedFields as "manager/operation/subresource".
func managers(t *testing.T, body string) []string {
	t.Helper()
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(body), &obj); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var out []string
	for _, e := range obj.Metadata.ManagedFields {
		if e.Time == nil || e.FieldsType != "FieldsV1" || e.FieldsV1 == nil {
			t.Errorf("entry without time or fields: %+v", e)
		}
		out = append(out, e.Manager+"/"+string(e.Operation)+"/"+e.Subresource)
	}
	return out
}

func applyRequest(t *testing.T, url, yaml string) (*http.Response, string) {
	t.Helper()
	return do(t, "PATCH", url, "application/apply-patch+yaml", yaml)
}

// Server-side apply creates, merges, conflicts and forces; plain writes
// record Update entries; /status keeps the main resource's entries.
func TestServerSideApply(t *testing.T) {
	store := newFakeStore()
	s, srv := serveFake(t, store, func(cfg *Config) { cfg.Admission = nil })
	store.put(t, s, "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	cm := srv.URL + "/api/v1/namespaces/default/configmaps/cm"

	// A field manager is required.
	resp, body := applyRequest(t, cm, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n")
	if resp.StatusCode != 422 || !strings.Contains(body, `PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch`) {
		t.Fatalf("apply without a manager: %d %s", resp.StatusCode, body)
	}
	// Only an apply may force.
	resp, body = do(t, "PATCH", cm+"?force=true", "application/merge-patch+json", `{}`)
	if resp.StatusCode != 422 || !strings.Contains(body, "force: Forbidden: may not be specified for non-apply patch") {
		t.Fatalf("forced merge patch: %d %s", resp.StatusCode, body)
	}

	// Apply on a missing object creates it.
	resp, body = applyRequest(t, cm+"?fieldManager=alice", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: '1'}\n")
	if resp.StatusCode != 201 {
		t.Fatalf("apply create: %d %s", resp.StatusCode, body)
	}
	if got := managers(t, body); len(got) != 1 || got[0] != "alice/Apply/" {
		t.Errorf("managers after create: %v", got)
	}
	var created corev1.ConfigMap
	_ = json.Unmarshal([]byte(body), &created)

	// The same apply again is no write.
	resp, body = applyRequest(t, cm+"?fieldManager=alice", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: '1'}\n")
	var again corev1.ConfigMap
	_ = json.Unmarshal([]byte(body), &again)
	if resp.StatusCode != 200 || again.ResourceVersion != created.ResourceVersion {
		t.Errorf("apply again: %d, resourceVersion %s then %s", resp.StatusCode, created.ResourceVersion, again.ResourceVersion)
	}

	// Another manager setting the same field conflicts, naming it.
	resp, body = applyRequest(t, cm+"?fieldManager=bob", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: '2', b: '2'}\n")
	if resp.StatusCode != 409 || !strings.Contains(body, `conflict with \"alice\"`) || !strings.Contains(body, ".data.a") ||
		!strings.Contains(body, `"reason":"Conflict"`) || !strings.Contains(body, `"reason":"FieldManagerConflict"`) {
		t.Fatalf("conflicting apply: %d %s", resp.StatusCode, body)
	}
	// Forced, it takes the field over.
	resp, body = applyRequest(t, cm+"?fieldManager=bob&force=true", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: '2', b: '2'}\n")
	if resp.StatusCode != 200 || !strings.Contains(body, `"data":{"a":"2","b":"2"}`) {
		t.Fatalf("forced apply: %d %s", resp.StatusCode, body)
	}
	if got := managers(t, body); len(got) != 1 || got[0] != "bob/Apply/" {
		// alice owned only data.a, which bob took.
		t.Errorf("managers after the forced apply: %v", got)
	}

	// A plain update records an Update entry, its manager from the User-Agent.
	req, _ := http.NewRequest("PATCH", cm, strings.NewReader(`{"data":{"c":"3"}}`))
	req.Header.Set("Content-Type", "application/merge-patch+json")
	req.Header.Set("User-Agent", "kubectl/v1.35.0 (linux/amd64) kubernetes/abc")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	_, body = do(t, "GET", cm, "", "")
	if got := managers(t, body); len(got) != 2 || got[0] != "bob/Apply/" || got[1] != "kubectl/Update/" {
		t.Errorf("managers after an update: %v", got)
	}

	// A create records an Update entry; /status adds its own and keeps
	// the main resource's.
	deployments := srv.URL + "/apis/apps/v1/namespaces/default/deployments"
	resp, body = do(t, "POST", deployments+"?fieldManager=creator", "application/json", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
		"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`)
	if resp.StatusCode != 201 {
		t.Fatalf("deployment: %d %s", resp.StatusCode, body)
	}
	if got := managers(t, body); len(got) != 1 || got[0] != "creator/Update/" {
		t.Errorf("managers after create: %v", got)
	}
	resp, body = do(t, "PATCH", deployments+"/d/status?fieldManager=controller", "application/merge-patch+json", `{"status":{"replicas":1}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
	if got := managers(t, body); len(got) != 2 || got[0] != "controller/Update/status" || got[1] != "creator/Update/" {
		t.Errorf("managers after a status update: %v", got)
	}

	// Containers merge by name: each manager keeps its own.
	resp, body = applyRequest(t, deployments+"/d?fieldManager=creator&force=true", `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers: [{name: a, image: busybox}]
`)
	if resp.StatusCode != 200 {
		t.Fatalf("apply a: %d %s", resp.StatusCode, body)
	}
	resp, body = applyRequest(t, deployments+"/d?fieldManager=other", `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      containers: [{name: b, image: nginx}]
`)
	if resp.StatusCode != 200 {
		t.Fatalf("apply b: %d %s", resp.StatusCode, body)
	}
	var d appsv1.Deployment
	_ = json.Unmarshal([]byte(body), &d)
	var names []string
	for _, c := range d.Spec.Template.Spec.Containers {
		names = append(names, c.Name)
	}
	// Container c stays: the creator's create (an Update) owns it, not
	// its apply.
	if strings.Join(names, ",") != "c,a,b" {
		t.Errorf("containers %v", names)
	}
	if d.Status.Replicas != 1 {
		t.Errorf("status lost: %+v", d.Status)
	}

	// Apply through /status owns status fields alone, and keeps the
	// others' entries. It takes status.replicas from the controller's
	// status update (another entry: operations differ), by force.
	resp, body = applyRequest(t, deployments+"/d/status?fieldManager=controller&force=true", `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec: {replicas: 7}
status: {replicas: 2}
`)
	if resp.StatusCode != 200 {
		t.Fatalf("apply status: %d %s", resp.StatusCode, body)
	}
	d = appsv1.Deployment{}
	_ = json.Unmarshal([]byte(body), &d)
	if d.Status.Replicas != 2 || *d.Spec.Replicas == 7 {
		t.Errorf("after a status apply: replicas %d, status %+v", *d.Spec.Replicas, d.Status)
	}
	got := managers(t, body)
	if all := strings.Join(got, " "); !strings.Contains(all, "controller/Apply/status") || !strings.Contains(all, "creator/Apply/") || !strings.Contains(all, "other/Apply/") {
		t.Errorf("managers after a status apply: %v", got)
	}
	for _, e := range d.ManagedFields {
		if e.Subresource == "status" && e.Operation == "Apply" && strings.Contains(string(e.FieldsV1.Raw), "spec") {
			t.Errorf("the status apply owns spec fields: %s", e.FieldsV1.Raw)
		}
	}
}

// Every built-in kind has a schema for managed fields, its JSON values
// (a workflow's definition) included: none falls back to dropping them.
func TestFieldTypesKnowEveryKind(t *testing.T) {
	s, _ := serveFake(t, newFakeStore(), nil)
	types, err := s.fieldTypes()
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range s.table.All {
		if _, err := types.ObjectToTyped(res.New()); err != nil {
			t.Errorf("%s: %v", res.GroupVersionKind(), err)
		}
	}
	wf := &minik8sv1.Workflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: "minik8s.io/v1", Kind: "Workflow"},
		ObjectMeta: metav1.ObjectMeta{Name: "w"},
		Spec:       minik8sv1.WorkflowSpec{Definition: minik8sv1.JSON{Raw: []byte(`{"StartAt":"A","States":{"A":{"Type":"Succeed","List":[1,{"a":2}]}}}`)}},
	}
	if _, err := types.ObjectToTyped(wf); err != nil {
		t.Errorf("workflow: %v", err)
	}
}

// The Kubernetes kinds merge with Kubernetes' own list keys, which struct
// tags do not give: a Service's ports are keyed by port and protocol.
func TestApplyKeysServicePortsByProtocol(t *testing.T) {
	store := newFakeStore()
	s, srv := serveFake(t, store, func(cfg *Config) { cfg.Admission = nil })
	store.put(t, s, "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	resp, body := applyRequest(t, srv.URL+"/api/v1/namespaces/default/services/dns?fieldManager=a", `apiVersion: v1
kind: Service
metadata: {name: dns}
spec:
  selector: {app: dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
`)
	if resp.StatusCode != 201 || !strings.Contains(body, `k:{\"port\":53,\"protocol\":\"TCP\"}`) {
		t.Errorf("apply of a service with one port over two protocols: %d %s", resp.StatusCode, body)
	}
}

// An applied configuration is decoded as ?fieldValidation says: a
// duplicated field refused when strict, a warning otherwise.
func TestApplyFieldValidation(t *testing.T) {
	store := newFakeStore()
	s, srv := serveFake(t, store, func(cfg *Config) { cfg.Admission = nil })
	store.put(t, s, "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	cm := srv.URL + "/api/v1/namespaces/default/configmaps/cm?fieldManager=a"
	duplicated := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: '1'}\ndata: {a: '2'}\n"
	resp, body := applyRequest(t, cm+"&fieldValidation=Strict", duplicated)
	if resp.StatusCode != 400 || !strings.Contains(body, "error strict decoding patch") {
		t.Errorf("strict: %d %s", resp.StatusCode, body)
	}
	resp, body = applyRequest(t, cm+"&fieldValidation=Warn", duplicated)
	if resp.StatusCode != 201 || len(resp.Header.Values("Warning")) != 1 {
		t.Errorf("warn: %d %q %s", resp.StatusCode, resp.Header.Values("Warning"), body)
	}
}
