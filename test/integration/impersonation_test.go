package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A request with Impersonate-* headers (kubectl --as) is served as the
// user it names, once the caller may impersonate: the admin acting as a
// service account gets that account's rights, and the account itself
// may not impersonate anyone.
func TestImpersonation(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	if _, err := c.client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := func(user string, groups ...string) kubernetes.Interface {
		cfg := rest.CopyConfig(c.config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	reader := as("system:serviceaccount:default:reader")
	if _, err := reader.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), `User "system:serviceaccount:default:reader" cannot list resource "configmaps"`) {
		t.Errorf("the admin as an account without rights: %v, want 403 for that account", err)
	}
	if _, err := c.client.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC is read from informers, and view is filled by aggregation: wait.
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := reader.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("the admin as the account, once it may view: %v", err)
	}
	// The account's own credential may not impersonate the admin group.
	tok, err := c.client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(c.config)
	cfg.BearerToken = tok.Status.Token
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "someone", Groups: []string{"system:masters"}}
	_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot impersonate") {
		t.Errorf("an account impersonating system:masters: %v, want 403 cannot impersonate", err)
	}
}
