package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

// conversionWebhook is a CRD conversion webhook over TLS, as a
// cluster's would be: at /convert it converts Backends between
// conv.example.com/v1, whose spec.hostPort is v2's spec.host, and v2,
// recording each review's desired version and object count. At /mutate
// it is a mutating admission webhook that adds spec.mutated, which the
// schema knows, and spec.unknown, which it does not.
type conversionWebhook struct {
	server   *httptest.Server
	caBundle []byte

	// service is the same webhook behind a certificate for the name
	// of the Service conv-webhook in default, which the apiserver
	// verifies when it reaches the webhook through that Service.
	service       *httptest.Server
	serviceBundle []byte

	mu      sync.Mutex
	reviews []string // "<desired apiVersion> x<objects>"
	// serverNames are the TLS server names the reviews were sent to.
	serverNames []string
}

func startConversionWebhook(t *testing.T) *conversionWebhook {
	t.Helper()
	h := &conversionWebhook{}
	mux := http.NewServeMux()
	mux.HandleFunc("/convert", func(w http.ResponseWriter, r *http.Request) {
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("bad review: %v", err), http.StatusBadRequest)
			return
		}
		req := review.Request
		h.mu.Lock()
		h.reviews = append(h.reviews, fmt.Sprintf("%s x%d", req.DesiredAPIVersion, len(req.Objects)))
		h.serverNames = append(h.serverNames, r.TLS.ServerName)
		h.mu.Unlock()
		resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range req.Objects {
			var obj map[string]any
			if err := json.Unmarshal(raw.Raw, &obj); err != nil {
				resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
				break
			}
			from, to := "hostPort", "host"
			if req.DesiredAPIVersion == "conv.example.com/v1" {
				from, to = "host", "hostPort"
			}
			if spec, ok := obj["spec"].(map[string]any); ok {
				if v, ok := spec[from]; ok {
					spec[to] = v
					delete(spec, from)
				}
			}
			obj["apiVersion"] = req.DesiredAPIVersion
			js, _ := json.Marshal(obj)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: js})
		}
		review.Request, review.Response = nil, resp
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	})
	mux.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("bad review: %v", err), http.StatusBadRequest)
			return
		}
		pt := admissionv1.PatchTypeJSONPatch
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, PatchType: &pt,
			Patch: []byte(`[{"op":"add","path":"/spec/mutated","value":"yes"},{"op":"add","path":"/spec/unknown","value":"dropped"}]`)}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	})
	h.server = httptest.NewTLSServer(mux)
	t.Cleanup(h.server.Close)
	h.caBundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.server.Certificate().Raw})

	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("conv-webhook.default.svc", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	h.service = httptest.NewUnstartedServer(mux)
	h.service.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	h.service.StartTLS()
	t.Cleanup(h.service.Close)
	h.serviceBundle = certPEM // the certificate and the CA that signed it
	return h
}

// servedAs says whether a review was sent to the TLS server name name
// since the last call.
func (h *conversionWebhook) servedAs(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	found := slices.Contains(h.serverNames, name)
	h.serverNames = nil
	return found
}

// took returns the reviews received since the last call.
func (h *conversionWebhook) took() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.reviews
	h.reviews = nil
	return out
}

// A CustomResourceDefinition whose spec.conversion is Webhook has its
// objects converted by its webhook, as kube-apiserver does: stored in
// the storage version whatever version they are written through, read,
// listed and watched in the version asked for, a list of objects stored
// in different versions converted item by item; the webhook is reached
// by its url or through its Service, trusting its caBundle; a webhook
// that cannot be reached fails the request with a 500 naming it, and
// nothing is stored. A mutating admission webhook's additions the
// schema does not know are pruned.
func TestCustomResourceConversionWebhook(t *testing.T) {
	// No controllers: their informers would read the objects too, and
	// the reviews the webhook receives are counted.
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	hook := startConversionWebhook(t)
	crds := apiextensionsclient.NewForConfigOrDie(c.config).ApiextensionsV1().CustomResourceDefinitions()
	specSchema := func(fields ...string) *apiextensionsv1.CustomResourceValidation {
		props := map[string]apiextensionsv1.JSONSchemaProps{}
		for _, f := range fields {
			props[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}}}}
	}
	conversion := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1", "v1beta1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr.To(hook.server.URL + "/convert"), CABundle: hook.caBundle}}}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "backends.conv.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "conv.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "backends", Singular: "backend", Kind: "Backend", ListKind: "BackendList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: specSchema("hostPort", "mutated")},
				{Name: "v2", Served: true, Schema: specSchema("host", "mutated")},
			},
			Conversion: conversion}}

	t.Run("validation", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			webhook *apiextensionsv1.WebhookConversion
			want    string
		}{
			{"no webhook", nil, "spec.conversion.webhook"},
			{"no clientConfig", &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}, "spec.conversion.webhookClientConfig: Required value"},
			{"unknown review version", &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v3"},
				ClientConfig: conversion.Webhook.ClientConfig}, "must include at least one of v1, v1beta1"},
		} {
			// The field paths are those of apiextensions' internal
			// version, as kube-apiserver reports them.
			bad := crd.DeepCopy()
			bad.Spec.Conversion.Webhook = tc.webhook
			_, err := crds.Create(ctx, bad, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want Invalid at %s", tc.name, err, tc.want)
			}
		}
	})

	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(c.config)
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "conv.example.com", Version: v, Resource: "backends"}
	}
	v1, v2 := dyn.Resource(gvr("v1")).Namespace("default"), dyn.Resource(gvr("v2")).Namespace("default")
	backend := func(version, name, field, value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "conv.example.com/" + version, "kind": "Backend",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{field: value}}}
	}
	// The resource is served once the definition is established.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := v2.List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("backends/v2 not served: %v", err)
	}
	spec := func(t *testing.T, u *unstructured.Unstructured, wantVersion string, want map[string]any) {
		t.Helper()
		if u.GetAPIVersion() != "conv.example.com/"+wantVersion || fmt.Sprint(u.Object["spec"]) != fmt.Sprint(want) {
			t.Errorf("%s: %s spec %v, want %s spec %v", u.GetName(), u.GetAPIVersion(), u.Object["spec"], wantVersion, want)
		}
	}
	stored := func(t *testing.T, name string) map[string]any {
		t.Helper()
		var obj map[string]any
		if err := json.Unmarshal(rawEtcdValue(t, c, "/registry/conv.example.com/backends/default/"+name), &obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	wantStored := func(t *testing.T, name, apiVersion, field, value string) {
		t.Helper()
		obj := stored(t, name)
		if got := fmt.Sprint(obj["apiVersion"], " ", obj["spec"]); got != fmt.Sprint(apiVersion, " ", map[string]any{field: value}) {
			t.Errorf("%s stored as %s, want %s with %s=%s", name, got, apiVersion, field, value)
		}
	}

	t.Run("create in v1, read in v2", func(t *testing.T) {
		hook.took()
		if _, err := v1.Create(ctx, backend("v1", "a", "hostPort", "a:80"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := hook.took(); len(got) != 0 {
			t.Errorf("a create in the storage version was converted: %v", got)
		}
		a, err := v2.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec(t, a, "v2", map[string]any{"host": "a:80"})
		if got := hook.took(); !slices.Equal(got, []string{"conv.example.com/v2 x1"}) {
			t.Errorf("reviews of the v2 read: %v", got)
		}
	})

	t.Run("create in v2, stored in v1", func(t *testing.T) {
		created, err := v2.Create(ctx, backend("v2", "b", "host", "b:81"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec(t, created, "v2", map[string]any{"host": "b:81"})
		wantStored(t, "b", "conv.example.com/v1", "hostPort", "b:81")
		hook.took()
		b, err := v1.Get(ctx, "b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec(t, b, "v1", map[string]any{"hostPort": "b:81"})
		if got := hook.took(); len(got) != 0 {
			t.Errorf("a read in the storage version was converted: %v", got)
		}
		// An update through v2 is stored in v1 as well.
		if _, err := v2.Patch(ctx, "b", types.MergePatchType, []byte(`{"spec":{"host":"b:82"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		wantStored(t, "b", "conv.example.com/v1", "hostPort", "b:82")
	})

	t.Run("list and watch", func(t *testing.T) {
		for _, tc := range []struct {
			version, field string
		}{{"v1", "hostPort"}, {"v2", "host"}} {
			list, err := dyn.Resource(gvr(tc.version)).Namespace("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, item := range list.Items {
				v, _, _ := unstructured.NestedString(item.Object, "spec", tc.field)
				got = append(got, item.GetAPIVersion()+" "+item.GetName()+" "+v)
			}
			want := []string{"conv.example.com/" + tc.version + " a a:80", "conv.example.com/" + tc.version + " b b:82"}
			if !slices.Equal(got, want) || list.GetAPIVersion() != "conv.example.com/"+tc.version {
				t.Errorf("list in %s (%s): %q, want %q", tc.version, list.GetAPIVersion(), got, want)
			}
		}
		list, err := v2.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := v2.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := v1.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"hostPort":"a:8080"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			u, ok := ev.Object.(*unstructured.Unstructured)
			if ev.Type != watch.Modified || !ok {
				t.Fatalf("watch event %s %T", ev.Type, ev.Object)
			}
			spec(t, u, "v2", map[string]any{"host": "a:8080"})
		case <-ctx.Done():
			t.Fatal("no watch event in v2")
		}
	})

	t.Run("storage version changed: objects stored in two versions", func(t *testing.T) {
		cur, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.Versions[0].Storage, cur.Spec.Versions[1].Storage = false, true
		if cur, err = crds.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cur.Status.StoredVersions, []string{"v1", "v2"}) {
			t.Errorf("storedVersions %v, want [v1 v2]", cur.Status.StoredVersions)
		}
		// The new storage version is used once the apiserver serves the
		// changed definition.
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			_ = v1.Delete(ctx, "c", metav1.DeleteOptions{})
			if _, err := v1.Create(ctx, backend("v1", "c", "hostPort", "c:83"), metav1.CreateOptions{}); err != nil {
				return false, err
			}
			return stored(t, "c")["apiVersion"] == "conv.example.com/v2", nil
		}); err != nil {
			t.Fatalf("c not stored in v2: %v", err)
		}
		wantStored(t, "c", "conv.example.com/v2", "host", "c:83")
		wantStored(t, "a", "conv.example.com/v1", "hostPort", "a:8080")
		hook.took()
		for _, tc := range []struct {
			version, field string
		}{{"v1", "hostPort"}, {"v2", "host"}} {
			list, err := dyn.Resource(gvr(tc.version)).Namespace("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, item := range list.Items {
				v, _, _ := unstructured.NestedString(item.Object, "spec", tc.field)
				got = append(got, item.GetAPIVersion()+" "+item.GetName()+" "+v)
			}
			p := "conv.example.com/" + tc.version + " "
			if want := []string{p + "a a:8080", p + "b b:82", p + "c c:83"}; !slices.Equal(got, want) {
				t.Errorf("list in %s: %q, want %q", tc.version, got, want)
			}
		}
		// Only the items stored in the other version were converted,
		// in one review for each list.
		if got, want := hook.took(), []string{"conv.example.com/v1 x1", "conv.example.com/v2 x2"}; !slices.Equal(got, want) {
			t.Errorf("reviews of the two lists: %v, want %v", got, want)
		}
	})

	t.Run("mutating webhook, then pruning", func(t *testing.T) {
		mutating := c.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
		if _, err := mutating.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mutate-backends"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate-backends.example.com",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hook.server.URL + "/mutate"), CABundle: hook.caBundle},
				Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"conv.example.com"}, APIVersions: []string{"v2"}, Resources: []string{"backends"}}}},
				SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = mutating.Delete(context.Background(), "mutate-backends", metav1.DeleteOptions{}) }()
		// Written in the storage version (v2 now): no conversion prunes it.
		created, err := v2.Create(ctx, backend("v2", "mutated", "host", "m:84"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec(t, created, "v2", map[string]any{"host": "m:84", "mutated": "yes"})
		got, err := v2.Get(ctx, "mutated", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec(t, got, "v2", map[string]any{"host": "m:84", "mutated": "yes"})
	})

	t.Run("webhook reached through a Service", func(t *testing.T) {
		port := hook.service.Listener.Addr().(*net.TCPAddr).Port
		if _, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "conv-webhook"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.client.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "conv-webhook", Labels: map[string]string{discoveryv1.LabelServiceName: "conv-webhook"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port))}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cur, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{CABundle: hook.serviceBundle,
			Service: &apiextensionsv1.ServiceReference{Namespace: "default", Name: "conv-webhook", Path: ptr.To("/convert"), Port: ptr.To(int32(443))}}
		if _, err := crds.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		hook.servedAs("")
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			a, err := v2.Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			spec(t, a, "v2", map[string]any{"host": "a:8080"})
			return hook.servedAs("conv-webhook.default.svc"), nil
		}); err != nil {
			t.Fatalf("no review reached the webhook through its Service: %v", err)
		}
	})

	t.Run("webhook down", func(t *testing.T) {
		hook.server.Close()
		hook.service.Close()
		_, err := v2.Get(ctx, "a", metav1.GetOptions{})
		const want = "conversion webhook for conv.example.com/v1, Kind=Backend failed"
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("read in v2 of an object stored in v1: %v, want a 500 with %q", err, want)
		}
		if _, err := v1.Get(ctx, "a", metav1.GetOptions{}); err != nil {
			t.Errorf("a read in the version stored needs no webhook, yet: %v", err)
		}
		_, err = v1.Create(ctx, backend("v1", "d", "hostPort", "d:85"), metav1.CreateOptions{})
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("create in v1: %v, want a 500 with %q", err, want)
		}
		if _, err := v2.Get(ctx, "d", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the failed create stored something: %v", err)
		}
	})
}
