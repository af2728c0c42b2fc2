package apiserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/minik8s/minik8s/pkg/admission"
)

// recordingPlugin records what it is asked, warns twice of the same
// thing, and refuses objects named "refused".
type recordingPlugin struct {
	mu   sync.Mutex
	seen []admission.Attributes
}

func (p *recordingPlugin) Name() string { return "Recording" }

func (p *recordingPlugin) Validate(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	p.mu.Lock()
	p.seen = append(p.seen, *a)
	p.mu.Unlock()
	if a.Resource.Resource != "configmaps" {
		return admission.Result{}
	}
	// Plugins read other objects.
	if _, err := objects.Get(ctx, corev1.SchemeGroupVersion.WithResource("namespaces"), "", a.Namespace); err != nil {
		return admission.Result{Err: err}
	}
	r := admission.Result{Warnings: []string{`checked "` + a.Name + `"`, `checked "` + a.Name + `"`}}
	if a.Name == "refused" {
		r.Err = apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, io.EOF)
	}
	return r
}

func (p *recordingPlugin) last() admission.Attributes {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[len(p.seen)-1]
}

func do(t *testing.T, method, url, contentType, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(data)
}

// Validating admission sees creates and updates after validation, with
// their subresource, reads stored objects, refuses, and warns the client
// once per message.
func TestValidatingAdmission(t *testing.T) {
	store := newFakeStore()
	plugin := &recordingPlugin{}
	s, srv := serveFake(t, store, func(cfg *Config) { cfg.Admission = []admission.Plugin{plugin} })
	store.put(t, s, "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	base := srv.URL + "/api/v1/namespaces/default/configmaps"

	resp, body := do(t, "POST", base, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	if got := resp.Header.Values("Warning"); len(got) != 1 || got[0] != `299 - "checked \"cm\""` {
		t.Errorf("warnings %q", got)
	}
	a := plugin.last()
	if a.Operation != admission.Create || a.Name != "cm" || a.Namespace != "default" || a.OldObject != nil || a.Subresource != "" ||
		a.Kind.Kind != "ConfigMap" || a.DryRun {
		t.Errorf("create attributes %+v", a)
	}

	resp, body = do(t, "PUT", base+"/cm", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"a":"b"}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("update: %d %s", resp.StatusCode, body)
	}
	if a := plugin.last(); a.Operation != admission.Update || a.OldObject == nil || a.Object.(*corev1.ConfigMap).Data["a"] != "b" {
		t.Errorf("update attributes %+v", a)
	}

	resp, body = do(t, "POST", base+"?dryRun=All", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"refused"}}`)
	if resp.StatusCode != 403 || !strings.Contains(body, `configmaps \"refused\" is forbidden`) {
		t.Fatalf("refused create: %d %s", resp.StatusCode, body)
	}
	if !plugin.last().DryRun {
		t.Error("dry run not said")
	}
	if got := resp.Header.Values("Warning"); len(got) != 1 {
		t.Errorf("a refusal's warnings %q", got)
	}

	// Subresources are named.
	store.put(t, s, "serviceaccounts", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}})
	resp, body = do(t, "POST", srv.URL+"/api/v1/namespaces/default/pods", "application/json",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"automountServiceAccountToken":false,"containers":[{"name":"c","image":"busybox"}]}}`)
	if resp.StatusCode != 201 {
		t.Fatalf("pod: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "PATCH", srv.URL+"/api/v1/namespaces/default/pods/p/status", "application/merge-patch+json", `{"status":{"phase":"Running"}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
	if a := plugin.last(); a.Subresource != "status" || a.Resource.Resource != "pods" || a.Operation != admission.Update {
		t.Errorf("status attributes %+v", a)
	}

	deployments := srv.URL + "/apis/apps/v1/namespaces/default/deployments"
	resp, body = do(t, "POST", deployments, "application/json", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
		"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`)
	if resp.StatusCode != 201 {
		t.Fatalf("deployment: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "PATCH", deployments+"/d/scale", "application/merge-patch+json", `{"spec":{"replicas":3}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("scale: %d %s", resp.StatusCode, body)
	}
	if a := plugin.last(); a.Subresource != "scale" || a.Resource.Resource != "deployments" || a.Operation != admission.Update {
		t.Errorf("scale attributes %+v", a)
	}
}

// The default admission is Pod Security Admission.
func TestDefaultAdmissionIsPodSecurity(t *testing.T) {
	store := newFakeStore()
	s, srv := serveFake(t, store, nil)
	store.put(t, s, "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "strict",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted"}}})
	store.put(t, s, "serviceaccounts", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "strict"}})
	base := srv.URL + "/api/v1/namespaces/strict/pods"
	resp, body := do(t, "POST", base, "application/json",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"automountServiceAccountToken":false,"hostNetwork":true,"containers":[{"name":"c","image":"busybox"}]}}`)
	if resp.StatusCode != 403 || !strings.Contains(body, `pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)`) {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "POST", base, "application/json",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"automountServiceAccountToken":false,"containers":[{"name":"c","image":"busybox"}]}}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	// client-go reads the warning back as sent.
	warnings, errs := utilnet.ParseWarningHeaders(resp.Header.Values("Warning"))
	if len(errs) > 0 {
		t.Fatalf("warnings %q: %v", resp.Header.Values("Warning"), errs)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.Text)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], `would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set`) {
		t.Errorf("warnings %q", got)
	}
}

// labellingPlugin is a Mutator: it labels configmaps in Admit, and its
// Validate sees the label; a label value "bad!" fails validation.
type labellingPlugin struct{ value string }

func (p *labellingPlugin) Name() string { return "Labelling" }

func (p *labellingPlugin) Admit(_ context.Context, a *admission.Attributes, _ admission.Objects) admission.Result {
	if cm, ok := a.Object.(*corev1.ConfigMap); ok {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels["admitted"] = p.value
	}
	return admission.Result{}
}

func (p *labellingPlugin) Validate(_ context.Context, a *admission.Attributes, _ admission.Objects) admission.Result {
	if cm, ok := a.Object.(*corev1.ConfigMap); ok && cm.Labels["admitted"] != p.value {
		return admission.Result{Err: apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, io.EOF)}
	}
	return admission.Result{}
}

// A Mutator changes creates and updates before validation, which
// checks what it made, and before the validating phase.
func TestMutatingAdmission(t *testing.T) {
	store := newFakeStore()
	plugin := &labellingPlugin{value: "yes"}
	s, srv := serveFake(t, store, func(cfg *Config) { cfg.Admission = []admission.Plugin{plugin} })
	store.put(t, s, "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	base := srv.URL + "/api/v1/namespaces/default/configmaps"
	resp, body := do(t, "POST", base, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`)
	if resp.StatusCode != 201 || !strings.Contains(body, `"admitted":"yes"`) {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "PUT", base+"/cm", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"a":"b"}}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"admitted":"yes"`) {
		t.Fatalf("update: %d %s", resp.StatusCode, body)
	}
	plugin.value = "bad!"
	resp, body = do(t, "PUT", base+"/cm", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"a":"c"}}`)
	if resp.StatusCode != 422 {
		t.Errorf("an update the mutator made invalid: %d %s, want 422", resp.StatusCode, body)
	}
}
