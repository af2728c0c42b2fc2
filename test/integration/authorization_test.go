package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/apiserver/audit"
	"github.com/minik8s/minik8s/pkg/cli"
	"github.com/minik8s/minik8s/test/testutil"
)

// clientAs is a client of c authenticated by a client certificate of
// user in groups, signed by the cluster CA.
func clientAs(t *testing.T, c *cluster, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	cert, key, err := c.cp.Bundle.IssueClientCert(user, groups, 0)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: c.cp.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.cp.Bundle.CAPEM, CertData: cert, KeyData: key}})
}

// wantForbidden fails unless err is a 403 whose message has each of want.
func wantForbidden(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: want 403 Forbidden, got %v", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: the 403 says %q, want it to say %q", what, err, w)
		}
	}
}

// The attack of issue 15, replayed: with only the join token every node
// gets, none of it works any more.
func TestAuthorizationJoinTokenAttack(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	j := readNodeToken(t, c)
	joiner := kubernetes.NewForConfigOrDie(&rest.Config{Host: c.cp.URL, BearerToken: j.Token.String(),
		TLSClientConfig: rest.TLSClientConfig{CAData: c.cp.Bundle.CAPEM}})
	user := "system:bootstrap:" + j.Token.ID

	_, err := joiner.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "the join token lists Secrets", err, `User "`+user+`" cannot list resource "secrets" in API group "" in the namespace "kube-system"`)
	_, err = joiner.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+j.Token.ID, metav1.GetOptions{})
	wantForbidden(t, "the join token reads its own Secret", err)
	err = joiner.CoreV1().Secrets("kube-system").Delete(ctx, "bootstrap-token-"+j.Token.ID, metav1.DeleteOptions{})
	wantForbidden(t, "the join token deletes its Secret", err)
	_, err = joiner.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "the join token lists pods", err)

	// A node certificate for any name, as Kubernetes allows a bootstrap
	// token; that node is a node, and reads no Secret of nobody's pods.
	evilCert, evilKey := requestCert(t, ctx, joiner, c.client, certificatesv1.KubeAPIServerClientKubeletSignerName,
		pkix.Name{CommonName: "system:node:evil", Organization: []string{"system:nodes"}}, false)
	evil := kubernetes.NewForConfigOrDie(&rest.Config{Host: c.cp.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.cp.Bundle.CAPEM, CertData: evilCert, KeyData: evilKey}})
	_, err = evil.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "node evil lists Secrets", err)
	_, err = evil.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+j.Token.ID, metav1.GetOptions{})
	wantForbidden(t, "node evil reads a bootstrap token", err, "no relationship found between node 'evil' and this object")

	// A client certificate of its own choosing: created, but the joiner
	// cannot approve it, and nobody else does.
	csr := csrWithKey(t, "evil-admin", certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "evil-admin"})
	created, err := joiner.CertificatesV1().CertificateSigningRequests().Create(ctx, csr.obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the join token creates a CSR: %v", err)
	}
	created.Status.Conditions = append(created.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "SelfApproved"})
	_, err = joiner.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{})
	wantForbidden(t, "the join token approves its own CSR", err)
	_, err = evil.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{})
	wantForbidden(t, "a node approves the CSR", err)
	time.Sleep(2 * time.Second)
	got, err := c.client.CertificatesV1().CertificateSigningRequests().Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Certificate) > 0 || len(got.Status.Conditions) > 0 {
		t.Errorf("the evil-admin CSR was approved or issued: %+v", got.Status)
	}

	// Every refusal is in the audit log, with who and what.
	for _, want := range []struct{ user, verb, resource, sub string }{
		{user, "list", "secrets", ""},
		{user, "get", "secrets", ""},
		{user, "delete", "secrets", ""},
		{user, "update", "certificatesigningrequests", "approval"},
		{"system:node:evil", "list", "secrets", ""},
		{"system:node:evil", "update", "certificatesigningrequests", "approval"},
	} {
		found := false
		for _, ev := range auditEvents(t, c) {
			found = found || (ev.User.Username == want.user && ev.Verb == want.verb && ev.ObjectRef != nil &&
				ev.ObjectRef.Resource == want.resource && ev.ObjectRef.Subresource == want.sub &&
				ev.ResponseStatus != nil && ev.ResponseStatus.Code == 403)
		}
		if !found {
			t.Errorf("no audit event of %s's %s %s/%s answered 403", want.user, want.verb, want.resource, want.sub)
		}
	}
	for _, ev := range auditEvents(t, c) {
		if ev.User.Username == user && ev.Verb == "list" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "secrets" {
			if ev.Annotations["authorization.k8s.io/decision"] != "forbid" || ev.Level != "Metadata" || ev.AuditID == "" ||
				ev.APIVersion != "audit.k8s.io/v1" || ev.Kind != "Event" {
				t.Errorf("audit event of the Secret list: %+v", ev)
			}
			break
		}
	}
}

// auditEvents reads the control plane's audit log.
func auditEvents(t *testing.T, c *cluster) []audit.Event {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.dataDir, "audit.log"))
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	var out []audit.Event
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev audit.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit log line %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// TestAuthorizationRBAC: a new user can do nothing until bound to a role;
// then exactly what the role allows; and cannot grant more than they hold.
func TestAuthorizationRBAC(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := clientAs(t, c, "alice", "devs")
	_, err := alice.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "alice, unbound, lists pods", err, `User "alice" cannot list resource "pods" in API group "" in the namespace "team"`)

	// Discovery is everyone's.
	if _, err := alice.Discovery().ServerGroups(); err != nil {
		t.Errorf("alice reads discovery: %v", err)
	}

	// view in team: read pods, not Secrets, not elsewhere.
	bind := func(name, ns, kind, role string, subject rbacv1.Subject) {
		t.Helper()
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}, Subjects: []rbacv1.Subject{subject}}
		if _, err := c.client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind("alice-view", "team", "ClusterRole", "view", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"})
	waitAllowed(t, "alice lists pods in team with view", func() error {
		_, err := alice.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		return err
	})
	_, err = alice.CoreV1().Secrets("team").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "alice with view lists Secrets", err)
	_, err = alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "alice with view in team lists pods in default", err)
	_, err = alice.CoreV1().ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	wantForbidden(t, "alice with view creates a ConfigMap", err, `cannot create resource "configmaps"`)

	// A Role that lets her write RoleBindings: she binds what she holds,
	// not cluster-admin.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "binder", Namespace: "team"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"create", "get", "list"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}}}}
	if _, err := c.client.RbacV1().Roles("team").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind("alice-binder", "team", "Role", "binder", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"})
	grant := func(name, role string) error {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}
		_, err := alice.RbacV1().RoleBindings("team").Create(ctx, rb, metav1.CreateOptions{})
		return err
	}
	waitAllowed(t, "alice binds view, which she holds, to bob", func() error { return grant("bob-view", "view") })
	wantForbidden(t, "alice binds cluster-admin to bob", grant("bob-admin", "cluster-admin"), "attempting to grant RBAC permissions not currently held")
	// Nor a Role with more than she holds.
	_, err = alice.RbacV1().Roles("team").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "more"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}}, metav1.CreateOptions{})
	wantForbidden(t, "alice creates a Role over Secrets", err)

	// A Role limited by resourceNames: get, and list or watch with a
	// metadata.name field selector, of that one object, not of the rest.
	named := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "one-configmap", Namespace: "team"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""},
			Resources: []string{"configmaps"}, ResourceNames: []string{"settings"}}}}
	if _, err := c.client.RbacV1().Roles("team").Create(ctx, named, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	carol := clientAs(t, c, "carol")
	bind("carol-one", "team", "Role", "one-configmap", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "carol"})
	byName := metav1.ListOptions{FieldSelector: "metadata.name=settings"}
	waitAllowed(t, "carol lists the ConfigMap her Role names", func() error {
		_, err := carol.CoreV1().ConfigMaps("team").List(ctx, byName)
		return err
	})
	w, err := carol.CoreV1().ConfigMaps("team").Watch(ctx, byName)
	if err != nil {
		t.Errorf("carol watches the ConfigMap her Role names: %v", err)
	} else {
		w.Stop()
	}
	_, err = carol.CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "carol lists every ConfigMap", err, `cannot list resource "configmaps"`)
	_, err = carol.CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=other"})
	wantForbidden(t, "carol lists another ConfigMap by name", err)

	// Non-resource paths and anonymous requests.
	anon := &http.Client{Transport: anonTransport(t, c), Timeout: 10 * time.Second}
	for path, want := range map[string]int{"/healthz": 200, "/version": 200, "/api/v1/namespaces/team/pods": 401, "/apis": 401} {
		resp, err := anon.Get(c.cp.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	res := alice.CoreV1().RESTClient().Get().AbsPath("/metrics").Do(ctx)
	wantForbidden(t, "alice reads /metrics", res.Error(), `cannot get path "/metrics"`)

	// The default roles are there, and admin/edit/view are aggregated.
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery", "system:public-info-viewer"} {
		if _, err := c.client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("default ClusterRole %s: %v", name, err)
		}
	}
	waitAllowed(t, "admin aggregates the rules of edit and view", func() error {
		r, err := c.client.RbacV1().ClusterRoles().Get(ctx, "admin", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, want := range []string{"secrets", "pods", "rolebindings"} {
			found := false
			for _, rule := range r.Rules {
				for _, res := range rule.Resources {
					found = found || res == want
				}
			}
			if !found {
				return apierrors.NewNotFound(rbacv1.Resource("rule"), want)
			}
		}
		return nil
	})
}

// TestAuthorizationNode: a kubelet reads the Secrets of its own pods only,
// and writes only its own Node and its own pods' status.
func TestAuthorizationNode(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	for _, s := range []string{"s1", "s2"} {
		if _, err := c.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, node := range []string{"n1", "n2"} {
		if _, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + node, Namespace: "default"}, Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: []string{"s1", "s2"}[i]}}}},
		}}
		if _, err := c.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n1 := clientAs(t, c, "system:node:n1", "system:nodes")
	waitAllowed(t, "n1 reads the Secret of its pod", func() error {
		_, err := n1.CoreV1().Secrets("default").Get(ctx, "s1", metav1.GetOptions{})
		return err
	})
	_, err := n1.CoreV1().Secrets("default").Get(ctx, "s2", metav1.GetOptions{})
	wantForbidden(t, "n1 reads n2's pod's Secret", err, "no relationship found between node 'n1' and this object")
	_, err = n1.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "n1 lists Secrets", err)
	// Trust bundles are public: projected volumes carry them.
	if _, err := n1.CertificatesV1().ClusterTrustBundles().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("n1 lists ClusterTrustBundles: %v", err)
	}

	p2, err := c.client.CoreV1().Pods("default").Get(ctx, "p-n2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p2.Status.Phase = corev1.PodFailed
	_, err = n1.CoreV1().Pods("default").UpdateStatus(ctx, p2, metav1.UpdateOptions{})
	wantForbidden(t, "n1 updates n2's pod's status", err)
	p1, err := n1.CoreV1().Pods("default").Get(ctx, "p-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("n1 reads its pod: %v", err)
	}
	p1.Status.Phase = corev1.PodRunning
	if _, err := n1.CoreV1().Pods("default").UpdateStatus(ctx, p1, metav1.UpdateOptions{}); err != nil {
		t.Errorf("n1 updates its own pod's status: %v", err)
	}
	n2node, err := n1.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("n1 reads node n2: %v", err)
	}
	n2node.Labels = map[string]string{"owned": "by-n1"}
	_, err = n1.CoreV1().Nodes().Update(ctx, n2node, metav1.UpdateOptions{})
	wantForbidden(t, "n1 updates node n2", err, "can only modify its own Node object")
	err = n1.CoreV1().Pods("default").Delete(ctx, "p-n2", metav1.DeleteOptions{})
	wantForbidden(t, "n1 deletes n2's pod", err)
	_, err = n1.CoreV1().ConfigMaps("kube-system").Get(ctx, "minik8s-cluster-config", metav1.GetOptions{})
	if err != nil {
		t.Errorf("n1 reads the cluster settings: %v", err)
	}
}

// waitAllowed retries f while it is refused: the authorizer reads roles
// and pods from informers, which follow writes within moments.
func waitAllowed(t *testing.T, what string, f func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, last)
	}
}

type csrKey struct {
	obj    *certificatesv1.CertificateSigningRequest
	keyPEM []byte
}

func csrWithKey(t *testing.T, name, signer string, subject pkix.Name) csrKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return csrKey{keyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), obj: &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}}
}

// requestCert creates a CSR for subject as requester and waits for the
// control plane to issue it; it returns the certificate and key.
func requestCert(t *testing.T, ctx context.Context, requester, admin kubernetes.Interface, signer string, subject pkix.Name, _ bool) ([]byte, []byte) {
	t.Helper()
	csr := csrWithKey(t, "", signer, subject)
	csr.obj.GenerateName = "req-"
	created, err := requester.CertificatesV1().CertificateSigningRequests().Create(ctx, csr.obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create CSR: %v", err)
	}
	var cert []byte
	waitAllowed(t, "the CSR issued", func() error {
		got, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Certificate) == 0 {
			return apierrors.NewNotFound(certificatesv1.Resource("certificate"), created.Name)
		}
		cert = got.Status.Certificate
		return nil
	})
	return cert, csr.keyPEM
}

// anonTransport trusts the cluster CA and presents no credential.
func anonTransport(t *testing.T, c *cluster) http.RoundTripper {
	t.Helper()
	tr, err := rest.TransportFor(&rest.Config{Host: c.cp.URL, TLSClientConfig: rest.TLSClientConfig{CAData: c.cp.Bundle.CAPEM}})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestKubectlAuth: minik8s kubeconfig makes a user who can do nothing;
// kubectl auth whoami and can-i (and --list) tell them so, then what a
// binding gives them.
func TestKubectlAuth(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	admin := newKubectl(t, c)
	admin.ok(t, "create", "namespace", "team")
	file := filepath.Join(t.TempDir(), "carol.kubeconfig")
	if err := cli.Run(ctx, []string{"kubeconfig", "--kubeconfig", c.cp.KubeconfigPath, "--user", "carol", "--group", "devs", "-o", file}); err != nil {
		t.Fatalf("minik8s kubeconfig: %v", err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig file: %v %v", fi, err)
	}
	carol := testutil.NewKubectl(t, file)
	who := carol.OK(t, "auth", "whoami")
	for _, want := range []string{"carol", "devs", "system:authenticated"} {
		if !strings.Contains(who, want) {
			t.Errorf("kubectl auth whoami: want %s in\n%s", want, who)
		}
	}
	// kubectl auth can-i exits the process on "no" (os.Exit), so the
	// refusals are asked through the API it uses.
	carolClient := kubernetes.NewForConfigOrDie(restConfigOf(t, file))
	canI := func(verb, group, resource, ns string) bool {
		t.Helper()
		r, err := carolClient.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: group, Resource: resource, Namespace: ns}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("self subject access review: %v", err)
		}
		return r.Status.Allowed
	}
	if canI("list", "", "pods", "team") {
		t.Error("carol may list pods before any binding")
	}
	_, stderr, err := carol.Run(t, "get", "pods", "-n", "team")
	if err == nil || !strings.Contains(stderr, `User "carol" cannot list resource "pods"`) {
		t.Errorf("kubectl get pods as carol: %v\n%s", err, stderr)
	}
	admin.ok(t, "create", "rolebinding", "devs-edit", "--clusterrole=edit", "--group=devs", "-n", "team")
	waitAllowed(t, "carol may list pods once bound", func() error {
		if !canI("list", "", "pods", "team") {
			return apierrors.NewForbidden(corev1.Resource("pods"), "", nil)
		}
		return nil
	})
	if out := carol.OK(t, "auth", "can-i", "list", "pods", "-n", "team"); strings.TrimSpace(out) != "yes" {
		t.Errorf("kubectl auth can-i list pods with edit: %q", out)
	}
	if out := carol.OK(t, "auth", "can-i", "create", "deployments.apps", "-n", "team"); strings.TrimSpace(out) != "yes" {
		t.Errorf("can-i create deployments with edit: %q", out)
	}
	if canI("create", rbacv1.GroupName, "rolebindings", "team") {
		t.Error("edit lets carol create rolebindings")
	}
	if canI("list", "", "pods", "default") {
		t.Error("a binding in team lets carol list pods in default")
	}
	list := carol.OK(t, "auth", "can-i", "--list", "-n", "team")
	for _, want := range []string{"pods", "deployments.apps", "secrets", "selfsubjectaccessreviews.authorization.k8s.io"} {
		if !strings.Contains(list, want) {
			t.Errorf("can-i --list lacks %s:\n%s", want, list)
		}
	}
	carol.OK(t, "create", "configmap", "settings", "--from-literal=a=b", "-n", "team")
	// The admin asks about someone else (SubjectAccessReview).
	sar, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "dave", Groups: []string{"devs"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Resource: "configmaps", Namespace: "team"}}}, metav1.CreateOptions{})
	if err != nil || !sar.Status.Allowed {
		t.Errorf("subject access review of dave in devs: %v %+v", err, sar)
	}
	if _, err := carolClient.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "dave", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("carol asks about dave: %v, want 403", err)
	}
}

// restConfigOf reads a kubeconfig file.
func restConfigOf(t *testing.T, file string) *rest.Config {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}
