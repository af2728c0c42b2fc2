package integration

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TokenReview says who a token belongs to, as the apiserver's own
// authentication does: a TokenRequest's token is its service account,
// a made-up one is not authenticated.
func TestTokenReview(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	sas := c.client.CoreV1().ServiceAccounts("default")
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reviewed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := sas.CreateToken(ctx, "reviewed", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reviews := c.client.AuthenticationV1().TokenReviews()
	got, err := reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tok.Status.Token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Status.Authenticated || got.Status.User.Username != "system:serviceaccount:default:reviewed" || got.Status.Error != "" {
		t.Errorf("review of a service account token: %+v", got.Status)
	}
	got, err = reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "made.up.token"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Authenticated || got.Status.Error == "" {
		t.Errorf("review of a made-up token: %+v", got.Status)
	}
	// A review cannot be had as a Table: 406.
	err = c.client.AuthorizationV1().RESTClient().Post().AbsPath("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		Body([]byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/","verb":"get"}}}`)).
		Do(ctx).Error()
	if !apierrors.IsNotAcceptable(err) {
		t.Errorf("a review asked for as a Table: %v, want 406", err)
	}
}
