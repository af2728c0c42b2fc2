package token

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Create generates a token and creates its Secret through the API, trying
// another id when one is taken.
func Create(ctx context.Context, client kubernetes.Interface, opts Options, now time.Time) (Token, error) {
	for attempt := 0; ; attempt++ {
		t, err := Generate()
		if err != nil {
			return Token{}, err
		}
		s, err := NewSecret(t, opts, now)
		if err != nil {
			return Token{}, err
		}
		_, err = client.CoreV1().Secrets(SecretNamespace).Create(ctx, s, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && attempt < 5 {
			continue
		}
		if err != nil {
			return Token{}, fmt.Errorf("create bootstrap token secret: %w", err)
		}
		return t, nil
	}
}

// CreateJoin creates a token (Create) and returns it as a join token
// carrying the hash of the cluster CA caPEM.
func CreateJoin(ctx context.Context, client kubernetes.Interface, caPEM []byte, opts Options, now time.Time) (JoinToken, error) {
	hash, err := CAHash(caPEM)
	if err != nil {
		return JoinToken{}, fmt.Errorf("cluster CA: %w", err)
	}
	t, err := Create(ctx, client, opts, now)
	if err != nil {
		return JoinToken{}, err
	}
	return JoinToken{CAHash: hash, Token: t}, nil
}
