package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	certutil "k8s.io/client-go/util/cert"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/apiserver"
)

// extensionServer is an extension API server as k8s.io/apiserver builds
// one: it trusts the front proxy as the ConfigMap
// kube-system/extension-apiserver-authentication says (its CA, allowed
// names and headers, through k8s.io/apiserver's requestheader
// authenticator), and serves wardle.example.com/v1alpha1 flunders. Every
// flunder it lists carries the user the request came from.
type extensionServer struct {
	server   *httptest.Server
	caBundle []byte
	mu       sync.Mutex
	users    []string
}

const (
	wardleGroup   = "wardle.example.com"
	wardleVersion = "v1alpha1"
)

func startExtensionServer(t *testing.T, ctx context.Context, c *cluster, serviceName string) *extensionServer {
	t.Helper()
	cm, err := c.client.CoreV1().ConfigMaps("kube-system").Get(ctx, apiserver.AuthenticationConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := func(key string) headerrequest.StaticStringSlice {
		var l []string
		if err := json.Unmarshal([]byte(cm.Data[key]), &l); err != nil || len(l) == 0 {
			t.Fatalf("%s: %q is no JSON list of strings: %v", key, cm.Data[key], err)
		}
		return l
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(cm.Data["requestheader-client-ca-file"])) {
		t.Fatalf("requestheader-client-ca-file holds no certificate: %q", cm.Data["requestheader-client-ca-file"])
	}
	if !x509.NewCertPool().AppendCertsFromPEM([]byte(cm.Data["client-ca-file"])) {
		t.Errorf("client-ca-file holds no certificate")
	}
	var auth authenticator.Request = headerrequest.NewDynamicVerifyOptionsSecure(
		func() (x509.VerifyOptions, bool) {
			return x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
		},
		list("requestheader-allowed-names"), list("requestheader-username-headers"), list("requestheader-uid-headers"),
		list("requestheader-group-headers"), list("requestheader-extra-headers-prefix"))

	e := &extensionServer{}
	base := "/apis/" + wardleGroup + "/" + wardleVersion
	e.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := auth.AuthenticateRequest(r)
		if !ok {
			http.Error(w, fmt.Sprintf("unauthenticated: %v", err), http.StatusUnauthorized)
			return
		}
		u := resp.User
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "the caller's credentials reached the backend", http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		e.users = append(e.users, u.GetName())
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, base), "/")
		switch {
		case r.URL.Path == base:
			_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: wardleGroup + "/" + wardleVersion,
				APIResources: []metav1.APIResource{{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder",
					Verbs: metav1.Verbs{"get", "list"}}}})
		case len(parts) == 4 && parts[1] == "namespaces" && parts[3] == "flunders":
			item := map[string]any{"apiVersion": wardleGroup + "/" + wardleVersion, "kind": "Flunder",
				"metadata": map[string]any{"name": "hello", "namespace": parts[2], "creationTimestamp": "2024-01-01T00:00:00Z",
					"annotations": map[string]string{"user": u.GetName(), "groups": strings.Join(u.GetGroups(), ",")}}}
			_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": wardleGroup + "/" + wardleVersion, "kind": "FlunderList",
				"metadata": map[string]any{}, "items": []any{item}})
		default:
			http.NotFound(w, r)
		}
	}))
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(serviceName, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// The authenticator verifies the client certificate, as
	// k8s.io/apiserver's does.
	e.server.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert}
	e.server.StartTLS()
	t.Cleanup(e.server.Close)
	e.caBundle = certPEM // the certificate and the CA that signed it
	return e
}

func (e *extensionServer) port() int32 { return int32(e.server.Listener.Addr().(*net.TCPAddr).Port) }

// The aggregation layer, as kube-aggregator: an APIService naming a
// Service makes its group version a proxy to an extension API server,
// which learns the caller from the front proxy's headers and trusts them
// as extension-apiserver-authentication says. The group version is in
// discovery, kubectl lists its resources and gets them, and the
// APIService's Available condition follows the backend: MissingEndpoints,
// FailedDiscoveryCheck, ServiceNotFound; an unavailable one answers 503.
func TestAggregatedAPIServer(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	const ns = "wardle"
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ext := startExtensionServer(t, ctx, c, "wardle-api."+ns+".svc")
	if _, err := c.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "wardle-api"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "wardle-api", Labels: map[string]string{discoveryv1.LabelServiceName: "wardle-api"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(ext.port())}},
	}
	epSlices := c.client.DiscoveryV1().EndpointSlices(ns)
	if _, err := epSlices.Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	agg := aggregatorclient.NewForConfigOrDie(c.config).ApiregistrationV1().APIServices()
	name := wardleVersion + "." + wardleGroup
	if _, err := agg.Create(ctx, &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiregistrationv1.APIServiceSpec{Group: wardleGroup, Version: wardleVersion, CABundle: ext.caBundle,
			Service:              &apiregistrationv1.ServiceReference{Namespace: ns, Name: "wardle-api", Port: ptr.To[int32](443)},
			GroupPriorityMinimum: 2000, VersionPriority: 200}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable := func(t *testing.T, status apiregistrationv1.ConditionStatus, reason string) *apiregistrationv1.APIServiceCondition {
		t.Helper()
		var last *apiregistrationv1.APIServiceCondition
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
			s, err := agg.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for i, cond := range s.Status.Conditions {
				if cond.Type == apiregistrationv1.Available {
					last = &s.Status.Conditions[i]
				}
			}
			return last != nil && last.Status == status && last.Reason == reason, nil
		}); err != nil {
			t.Fatalf("Available is %+v, want %s (%s): %v", last, status, reason, err)
		}
		return last
	}
	kubectl := newKubectl(t, c)

	t.Run("available", func(t *testing.T) {
		cond := waitAvailable(t, apiregistrationv1.ConditionTrue, "Passed")
		if cond.Message != "all checks passed" {
			t.Errorf("message %q, want \"all checks passed\"", cond.Message)
		}
	})

	t.Run("discovery", func(t *testing.T) {
		// Aggregated discovery (which client-go asks for) lists the group
		// once the backend's discovery is fetched.
		var groups *metav1.APIGroupList
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			var err error
			groups, err = c.client.Discovery().ServerGroups()
			i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == wardleGroup })
			return err == nil && i >= 0 && groups.Groups[i].PreferredVersion.Version == wardleVersion, err
		}); err != nil {
			t.Fatalf("/apis lists no %s with preferred version %s: %+v", wardleGroup, wardleVersion, groups)
		}
		var legacy metav1.APIGroupList
		if err := c.client.Discovery().RESTClient().Get().AbsPath("/apis").Do(ctx).Into(&legacy); err != nil ||
			!slices.ContainsFunc(legacy.Groups, func(g metav1.APIGroup) bool { return g.Name == wardleGroup }) {
			t.Errorf("/apis (APIGroupList) lists no %s: %v", wardleGroup, err)
		}
		var group metav1.APIGroup
		if err := c.client.Discovery().RESTClient().Get().AbsPath("/apis/" + wardleGroup).Do(ctx).Into(&group); err != nil || group.Name != wardleGroup {
			t.Errorf("/apis/%s: %+v, %v", wardleGroup, group, err)
		}
		// /apis/<group>/<version> is the backend's.
		resources, err := c.client.Discovery().ServerResourcesForGroupVersion(wardleGroup + "/" + wardleVersion)
		if err != nil || len(resources.APIResources) != 1 || resources.APIResources[0].Name != "flunders" {
			t.Fatalf("/apis/%s/%s: %+v, %v", wardleGroup, wardleVersion, resources, err)
		}
		// kubectl learns it from aggregated discovery.
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			out, _, err := kubectl.run(t, "api-resources", "--api-group="+wardleGroup, "--no-headers")
			return err == nil && strings.Contains(out, "flunders") && strings.Contains(out, wardleGroup+"/"+wardleVersion), nil
		}); err != nil {
			out, stderr, _ := kubectl.run(t, "api-resources", "--api-group="+wardleGroup)
			t.Fatalf("kubectl api-resources lists no flunders: %s %s", out, stderr)
		}
	})

	t.Run("kubectl get through the aggregator", func(t *testing.T) {
		got := kubectl.ok(t, "get", "flunders", "-n", "default", "-o", "jsonpath={.items[0].metadata.name} {.items[0].metadata.annotations.user} {.items[0].metadata.annotations.groups}")
		if want := "hello minik8s-admin system:masters,system:authenticated"; got != want {
			t.Errorf("kubectl get flunders: %q, want %q", got, want)
		}
		// The user the apiserver serves, impersonated or not, is who
		// the backend sees.
		got = kubectl.ok(t, "get", "flunders", "-n", "default", "--as=alice", "--as-group=system:masters", "-o", "jsonpath={.items[0].metadata.annotations.user}")
		if got != "alice" {
			t.Errorf("kubectl --as=alice get flunders: the backend saw %q", got)
		}
		// The apiserver authorizes before it proxies.
		if out := kubectl.fails(t, "get", "flunders", "-n", "default", "--as=bob"); !strings.Contains(out, "forbidden") {
			t.Errorf("bob without a role: %s, want forbidden", out)
		}
	})

	t.Run("unavailable", func(t *testing.T) {
		slice.Endpoints[0].Conditions.Ready = ptr.To(false)
		if _, err := epSlices.Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAvailable(t, apiregistrationv1.ConditionFalse, "MissingEndpoints")
		err := c.client.Discovery().RESTClient().Get().AbsPath("/apis/" + wardleGroup + "/" + wardleVersion + "/namespaces/default/flunders").Do(ctx).Error()
		if !apierrors.IsServiceUnavailable(err) {
			t.Errorf("get flunders of an unavailable APIService: %v, want 503", err)
		}

		ext.server.Close() // the backend goes away
		slice.Endpoints[0].Conditions.Ready = ptr.To(true)
		if _, err := epSlices.Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		cond := waitAvailable(t, apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck")
		if !strings.Contains(cond.Message, "/apis/"+wardleGroup+"/"+wardleVersion) {
			t.Errorf("FailedDiscoveryCheck message %q names no discovery path", cond.Message)
		}

		if err := c.client.CoreV1().Services(ns).Delete(ctx, "wardle-api", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAvailable(t, apiregistrationv1.ConditionFalse, "ServiceNotFound")
	})

	t.Run("deleted", func(t *testing.T) {
		if err := agg.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		path := "/apis/" + wardleGroup + "/" + wardleVersion + "/namespaces/default/flunders"
		var err error
		if wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			err = c.client.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).Error()
			return apierrors.IsNotFound(err), nil
		}) != nil {
			t.Fatalf("get flunders without an APIService: %v, want 404", err)
		}
		var legacy metav1.APIGroupList
		if err := c.client.Discovery().RESTClient().Get().AbsPath("/apis").Do(ctx).Into(&legacy); err != nil ||
			slices.ContainsFunc(legacy.Groups, func(g metav1.APIGroup) bool { return g.Name == wardleGroup }) {
			t.Errorf("/apis lists %s after its APIService is deleted (%v)", wardleGroup, err)
		}
	})
}
