package integration

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// testWebhook is an admission webhook over TLS, as a cluster's would
// be: each path answers AdmissionReviews its own way.
//
//	/deny    refuses with "denied by test: OPERATION resource/name"
//	/mutate  allows, with a JSONPatch adding data.added ("by-webhook") or,
//	         for a pod, an init container
//	/warn    allows, with the warning "test warning"
//	/slow    answers after 5s, or when the caller gives up
type testWebhook struct {
	server   *httptest.Server
	caBundle []byte
}

func startTestWebhook(t *testing.T) *testWebhook {
	t.Helper()
	mux := http.NewServeMux()
	answer := func(decide func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var review admissionv1.AdmissionReview
			if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
				http.Error(w, fmt.Sprintf("bad review: %v", err), http.StatusBadRequest)
				return
			}
			resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
			decide(review.Request, resp)
			review.Response, review.Request = resp, nil
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&review)
		}
	}
	mux.Handle("/deny", answer(func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusForbidden,
			Message: fmt.Sprintf("denied by test: %s %s/%s", req.Operation, req.Resource.Resource, req.Name)}
	}))
	mux.Handle("/mutate", answer(func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
		patch := `[{"op":"add","path":"/data","value":{}},{"op":"add","path":"/data/added","value":"by-webhook"}]`
		if req.Resource.Resource == "pods" {
			patch = `[{"op":"add","path":"/spec/initContainers","value":[{"name":"added-by-webhook","image":"busybox"}]}]`
		}
		if req.Resource.Resource == "configmaps" && strings.Contains(string(req.Object.Raw), `"data":{`) {
			patch = `[{"op":"add","path":"/data/added","value":"by-webhook"}]`
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = []byte(patch), &pt
	}))
	mux.Handle("/warn", answer(func(_ *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
		resp.Warnings = []string{"test warning"}
	}))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
			return
		}
		answer(func(*admissionv1.AdmissionRequest, *admissionv1.AdmissionResponse) {})(w, r)
	})
	s := httptest.NewTLSServer(mux)
	t.Cleanup(s.Close)
	return &testWebhook{server: s, caBundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})}
}

// clientConfig points at path of the test webhook.
func (w *testWebhook) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(w.server.URL + path), CABundle: w.caBundle}
}

// rule is one rule for ops on resources of group/v1.
func whRule(group string, resources []string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{Operations: ops,
		Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: resources}}}
}

// Admission webhooks are called as kube-apiserver calls them: a
// validating webhook refuses creates and deletes with its message,
// including those of custom resources, and warns; selectors decide
// which writes it sees; a mutating webhook's patch is stored, with
// defaults applied to what it added; failurePolicy decides on a webhook
// that cannot be reached, and timeoutSeconds bounds a slow one.
func TestAdmissionWebhooks(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	warned := &warnings{}
	cfg := rest.CopyConfig(c.config)
	cfg.WarningHandler = warned
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hook := startTestWebhook(t)
	for ns, labels := range map[string]map[string]string{"wh-guarded": {"webhooks": "on"}, "wh-free": nil} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	validating := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	mutating := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	guarded := &metav1.LabelSelector{MatchLabels: map[string]string{"webhooks": "on"}}
	validate := func(t *testing.T, hooks ...admissionregistrationv1.ValidatingWebhook) {
		t.Helper()
		for i := range hooks {
			hooks[i].SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNone)
			hooks[i].AdmissionReviewVersions = []string{"v1"}
		}
		if _, err := validating.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "test"}, Webhooks: hooks}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = validating.Delete(context.Background(), "test", metav1.DeleteOptions{}) })
	}
	configMap := func(name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	configMaps := client.CoreV1().ConfigMaps("wh-guarded")

	t.Run("deny create, with selectors", func(t *testing.T) {
		validate(t, admissionregistrationv1.ValidatingWebhook{Name: "deny.example.com", ClientConfig: hook.clientConfig("/deny"),
			Rules:             whRule("", []string{"configmaps"}, admissionregistrationv1.Create),
			NamespaceSelector: guarded,
			ObjectSelector:    &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}},
			MatchConditions:   []admissionregistrationv1.MatchCondition{{Name: "not-excused", Expression: `object.metadata.name != "skipped-by-condition"`}}})
		_, err := configMaps.Create(ctx, configMap("refused", nil), metav1.CreateOptions{})
		want := `admission webhook "deny.example.com" denied the request: denied by test: CREATE configmaps/refused`
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("create: %v, want Forbidden %q", err, want)
		}
		if _, err := configMaps.Create(ctx, configMap("skipped-by-object", map[string]string{"skip": "yes"}), metav1.CreateOptions{}); err != nil {
			t.Errorf("objectSelector does not select it, yet: %v", err)
		}
		if _, err := configMaps.Create(ctx, configMap("skipped-by-condition", nil), metav1.CreateOptions{}); err != nil {
			t.Errorf("matchConditions do not select it, yet: %v", err)
		}
		if _, err := client.CoreV1().ConfigMaps("wh-free").Create(ctx, configMap("skipped-by-namespace", nil), metav1.CreateOptions{}); err != nil {
			t.Errorf("namespaceSelector does not select it, yet: %v", err)
		}
		if _, err := client.CoreV1().Secrets("wh-guarded").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other-resource"}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("rules do not select secrets, yet: %v", err)
		}
	})

	t.Run("matchConditions that do not compile", func(t *testing.T) {
		_, err := validating.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "bad.example.com", ClientConfig: hook.clientConfig("/deny"),
				SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "bad", Expression: "... [] bad expression"}}}}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "compilation failed") {
			t.Errorf("create: %v, want Invalid with compilation failed", err)
		}
	})

	t.Run("deny delete", func(t *testing.T) {
		if _, err := configMaps.Create(ctx, configMap("kept", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		validate(t, admissionregistrationv1.ValidatingWebhook{Name: "deny-delete.example.com", ClientConfig: hook.clientConfig("/deny"),
			Rules: whRule("", []string{"configmaps"}, admissionregistrationv1.Delete)})
		err := configMaps.Delete(ctx, "kept", metav1.DeleteOptions{})
		if want := "denied by test: DELETE configmaps/kept"; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("delete: %v, want Forbidden %q", err, want)
		}
		if _, err := configMaps.Get(ctx, "kept", metav1.GetOptions{}); err != nil {
			t.Errorf("the refused delete deleted it: %v", err)
		}
		// The webhook's configuration itself is never sent to webhooks.
		if err := validating.Delete(ctx, "test", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete the configuration: %v", err)
		}
	})

	t.Run("warn", func(t *testing.T) {
		validate(t, admissionregistrationv1.ValidatingWebhook{Name: "warn.example.com", ClientConfig: hook.clientConfig("/warn"),
			Rules: whRule("", []string{"configmaps"}, admissionregistrationv1.Create)})
		warned.take()
		if _, err := configMaps.Create(ctx, configMap("warned", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := warned.take(); !slices.Contains(got, "test warning") {
			t.Errorf("warnings %q, want the webhook's", got)
		}
	})

	t.Run("failurePolicy", func(t *testing.T) {
		unreachable := admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/deny"), CABundle: hook.caBundle}
		validate(t, admissionregistrationv1.ValidatingWebhook{Name: "unreachable.example.com", ClientConfig: unreachable,
			Rules: whRule("", []string{"configmaps"}, admissionregistrationv1.Create), ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy": "fail"}},
			FailurePolicy: ptr.To(admissionregistrationv1.Fail)},
			admissionregistrationv1.ValidatingWebhook{Name: "unreachable-ignored.example.com", ClientConfig: unreachable,
				Rules: whRule("", []string{"configmaps"}, admissionregistrationv1.Create), ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy": "ignore"}},
				FailurePolicy: ptr.To(admissionregistrationv1.Ignore)})
		_, err := configMaps.Create(ctx, configMap("fail-closed", map[string]string{"policy": "fail"}), metav1.CreateOptions{})
		if want := `failed calling webhook "unreachable.example.com"`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Fail: %v, want %q", err, want)
		}
		if _, err := configMaps.Create(ctx, configMap("fail-open", map[string]string{"policy": "ignore"}), metav1.CreateOptions{}); err != nil {
			t.Errorf("Ignore: %v", err)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		validate(t, admissionregistrationv1.ValidatingWebhook{Name: "slow.example.com", ClientConfig: hook.clientConfig("/slow"),
			Rules: whRule("", []string{"configmaps"}, admissionregistrationv1.Create), TimeoutSeconds: ptr.To[int32](1)})
		start := time.Now()
		_, err := configMaps.Create(ctx, configMap("too-slow", nil), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "deadline") {
			t.Errorf("create: %v, want the webhook's deadline exceeded", err)
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("refused after %v, want about the webhook's 1s timeout", took)
		}
	})

	t.Run("mutate", func(t *testing.T) {
		if _, err := mutating.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "test"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.example.com", ClientConfig: hook.clientConfig("/mutate"),
				Rules:       whRule("", []string{"configmaps", "pods"}, admissionregistrationv1.Create),
				SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mutating.Delete(context.Background(), "test", metav1.DeleteOptions{}) })
		cm := configMap("mutated", nil)
		cm.Data = map[string]string{"mine": "1"}
		got, err := configMaps.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored, err := configMaps.Get(ctx, "mutated", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []*corev1.ConfigMap{got, stored} {
			if o.Data["added"] != "by-webhook" || o.Data["mine"] != "1" {
				t.Errorf("data %v, want the webhook's added=by-webhook and mine=1", o.Data)
			}
		}
		pod, err := client.CoreV1().Pods("wh-guarded").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mutated"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].TerminationMessagePolicy != corev1.TerminationMessageReadFile ||
			pod.Spec.InitContainers[0].ImagePullPolicy == "" {
			t.Errorf("init containers %+v, want the webhook's, defaulted", pod.Spec.InitContainers)
		}
	})

	t.Run("deny attach", func(t *testing.T) {
		validate(t, admissionregistrationv1.ValidatingWebhook{Name: "deny-attach.example.com", ClientConfig: hook.clientConfig("/deny"),
			Rules: whRule("", []string{"pods/attach"}, admissionregistrationv1.Connect)})
		err := client.CoreV1().RESTClient().Post().Namespace("wh-guarded").Resource("pods").Name("mutated").SubResource("attach").
			Param("stdout", "true").Do(ctx).Error()
		if want := "denied by test: CONNECT pods/mutated"; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("attach: %v, want Forbidden %q", err, want)
		}
	})

	t.Run("custom resource", func(t *testing.T) {
		crds := apiextensionsclient.NewForConfigOrDie(c.config).ApiextensionsV1().CustomResourceDefinitions()
		if _, err := crds.Create(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.wh.example.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "wh.example.com", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
						XPreserveUnknownFields: ptr.To(true)}}}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		validate(t, admissionregistrationv1.ValidatingWebhook{Name: "deny-gadgets.example.com", ClientConfig: hook.clientConfig("/deny"),
			Rules: whRule("wh.example.com", []string{"gadgets"}, admissionregistrationv1.Create)})
		gadgets := dynamic.NewForConfigOrDie(c.config).Resource(schema.GroupVersionResource{Group: "wh.example.com", Version: "v1", Resource: "gadgets"}).Namespace("wh-guarded")
		gadget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "wh.example.com/v1", "kind": "Gadget",
			"metadata": map[string]any{"name": "g"}, "data": "x"}}
		want := `admission webhook "deny-gadgets.example.com" denied the request: denied by test: CREATE gadgets/g`
		// The definition's resource is served once it is established.
		var last error
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			_, last = gadgets.Create(ctx, gadget, metav1.CreateOptions{})
			return last == nil || apierrors.IsForbidden(last), nil
		})
		if err != nil || !strings.Contains(fmt.Sprint(last), want) {
			t.Fatalf("create: %v, want Forbidden %q", last, want)
		}
	})
}
