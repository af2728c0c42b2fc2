package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/bootstrap/token"
	"github.com/minik8s/minik8s/pkg/pki"
)

// NodeTokenName is the file under the data dir that holds the join token
// for nodes: `minik8s agent --server URL --token "$(cat node-token)"`.
const NodeTokenName = "node-token"

// ensureNodeToken keeps one join token for nodes in path: the token found
// there while its Secret still lets it authenticate, else a new one that
// never expires (like k3s' node token) in the group token.NodeGroup. The
// file carries the CA hash, so it is rewritten if the CA changed. It
// returns the join token.
func ensureNodeToken(ctx context.Context, client kubernetes.Interface, path string, caPEM []byte, now time.Time, log *slog.Logger) (string, error) {
	hash, err := token.CAHash(caPEM)
	if err != nil {
		return "", fmt.Errorf("node token: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("node token: %w", err)
	}
	if err == nil {
		t, ok, err := liveToken(ctx, client, data, now, log.With("path", path))
		if err != nil {
			return "", fmt.Errorf("node token: %w", err)
		}
		if ok {
			return writeNodeToken(path, token.JoinToken{CAHash: hash, Token: t}, data)
		}
	}
	t, err := token.Create(ctx, client, token.Options{
		Description: "minik8s node join token (" + NodeTokenName + ")",
		ExtraGroups: []string{token.NodeGroup},
	}, now)
	if err != nil {
		return "", fmt.Errorf("node token: %w", err)
	}
	log.Info("created the node join token", "path", path, "id", t.ID)
	return writeNodeToken(path, token.JoinToken{CAHash: hash, Token: t}, nil)
}

// liveToken is the token of a node-token file, if its Secret still lets it
// authenticate.
func liveToken(ctx context.Context, client kubernetes.Interface, data []byte, now time.Time, log *slog.Logger) (token.Token, bool, error) {
	j, err := token.ParseJoin(strings.TrimSpace(string(data)))
	if err != nil {
		log.Warn("unreadable node token: making a new one", "err", err)
		return token.Token{}, false, nil
	}
	s, err := client.CoreV1().Secrets(token.SecretNamespace).Get(ctx, j.Token.SecretName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		log.Warn("the node token's secret is gone: making a new one", "secret", j.Token.SecretName())
		return token.Token{}, false, nil
	}
	if err != nil {
		return token.Token{}, false, err
	}
	if _, err := token.Verify(s, j.Token, now); err != nil {
		log.Warn("the node token no longer authenticates: making a new one", "err", err)
		return token.Token{}, false, nil
	}
	return j.Token, true, nil
}

// writeNodeToken writes j to path unless old already says it.
func writeNodeToken(path string, j token.JoinToken, old []byte) (string, error) {
	s := j.String()
	if strings.TrimSpace(string(old)) == s {
		return s, nil
	}
	if err := pki.WriteFileAtomic(path, []byte(s+"\n")); err != nil {
		return "", fmt.Errorf("node token: %w", err)
	}
	return s, nil
}
