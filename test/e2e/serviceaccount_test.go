package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A pod gets its service account's token, the cluster CA and its
// namespace at /var/run/secrets/kubernetes.io/serviceaccount, read-only,
// as in Kubernetes: the kubelet (a node, under the Node authorizer) asks
// the TokenRequest API for a token bound to the pod, which authenticates
// as the account until the pod is gone.
func TestServiceAccountTokenInPod(t *testing.T) {
	c := newCluster(t, 1)
	k := c.kubectl
	c.apply(clientPod("sa-client", ""))
	c.waitPod("default", "sa-client", time.Minute, "Running and Ready", running)

	const dir = "/var/run/secrets/kubernetes.io/serviceaccount/"
	token := k.OK(t, "exec", "sa-client", "--", "cat", dir+"token")
	if ns := k.OK(t, "exec", "sa-client", "--", "cat", dir+"namespace"); ns != "default" {
		t.Errorf("namespace file = %q, want default", ns)
	}
	if ca := k.OK(t, "exec", "sa-client", "--", "cat", dir+"ca.crt"); ca != string(c.cp.Bundle.CAPEM) {
		t.Errorf("ca.crt = %q, want the cluster CA", ca)
	}
	if _, _, err := k.Run(t, "exec", "sa-client", "--", "touch", dir+"x"); err == nil {
		t.Error("the service account volume is writable")
	}

	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: c.cp.URL, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.cp.Bundle.CAPEM}})
	whoami := func(ctx context.Context) (*authenticationv1.SelfSubjectReview, error) {
		return client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	}
	r, err := whoami(context.Background())
	if err != nil {
		t.Fatalf("whoami with the pod's token: %v", err)
	}
	if u := r.Status.UserInfo; u.Username != "system:serviceaccount:default:default" ||
		!strings.Contains(strings.Join(u.Groups, ","), "system:serviceaccounts:default") {
		t.Errorf("the pod's token is %+v", u)
	}

	k.OK(t, "delete", "pod", "sa-client", "--wait=false")
	c.waitFor(time.Minute, "the pod's token to stop working", func(ctx context.Context) (bool, error) {
		_, err := whoami(ctx)
		return apierrors.IsUnauthorized(err), nil
	})
}
