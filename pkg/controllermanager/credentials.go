package controllermanager

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

// accountTokenLifetime is how long each controller's token lives; it is
// renewed at 80 % of that, and at once after a 401.
const accountTokenLifetime = time.Hour

// asServiceAccount is kc with clients that act as the service account
// kube-system/<account> (Kubernetes' --use-service-account-credentials):
// each controller is authorized by its own role
// (system:controller:<account>), while the shared informers and Events
// stay with the controller manager's credential. root creates the
// account when it is missing and requests its tokens.
func asServiceAccount(kc *kit.Context, root kubernetes.Interface, account string) (*kit.Context, error) {
	rc := rest.AnonymousClientConfig(kc.REST)
	rc.UserAgent = kc.REST.UserAgent + "/" + account
	ts := transport.NewCachedTokenSource(&accountTokens{client: root, account: account})
	rc.WrapTransport = transport.TokenSourceWrapTransport(ts)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	out := *kc
	out.Client, out.Dynamic, out.Metadata, out.REST = client, dyn, md, rc
	return &out, nil
}

// accountTokens issues tokens of kube-system/<account> through the
// TokenRequest API.
type accountTokens struct {
	client  kubernetes.Interface
	account string
}

func (t *accountTokens) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	accounts := t.client.CoreV1().ServiceAccounts(metav1.NamespaceSystem)
	_, err := accounts.Get(ctx, t.account, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: t.account}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("service account kube-system/%s: %w", t.account, err)
	}
	seconds := int64(accountTokenLifetime / time.Second)
	now := time.Now()
	tr, err := accounts.CreateToken(ctx, t.account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token of service account kube-system/%s: %w", t.account, err)
	}
	life := tr.Status.ExpirationTimestamp.Sub(now)
	return &oauth2.Token{AccessToken: tr.Status.Token, TokenType: "Bearer", Expiry: now.Add(life * 4 / 5)}, nil
}
