package podenv

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

var metaGet = metav1.GetOptions{}

// Objects reads a pod's ConfigMaps and Secrets through the API, each
// once per use (one container start, one volume refresh).
type Objects struct {
	ctx     context.Context
	client  kubernetes.Interface
	ns      string
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

// NewObjects reads the objects of namespace through client.
func NewObjects(ctx context.Context, client kubernetes.Interface, namespace string) *Objects {
	return &Objects{ctx: ctx, client: client, ns: namespace, cms: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
}

// errNotFound is a missing ConfigMap or Secret, in the kubelet's words.
type errNotFound struct{ kind, name string }

func (e *errNotFound) Error() string { return fmt.Sprintf("%s %q not found", e.kind, e.name) }

// IsNotFound says whether err is, or wraps, a missing ConfigMap or Secret.
func IsNotFound(err error) bool {
	var nf *errNotFound
	return errors.As(err, &nf)
}

// ConfigMap is the named ConfigMap of the pod's namespace.
func (o *Objects) ConfigMap(name string) (*corev1.ConfigMap, error) {
	if cm, ok := o.cms[name]; ok {
		return cm, nil
	}
	if o.client == nil {
		return nil, fmt.Errorf("couldn't get configMap %s/%s: no API client", o.ns, name)
	}
	cm, err := o.client.CoreV1().ConfigMaps(o.ns).Get(o.ctx, name, metaGet)
	if apierrors.IsNotFound(err) {
		return nil, &errNotFound{"configmap", name}
	}
	if err != nil {
		return nil, fmt.Errorf("couldn't get configMap %s/%s: %w", o.ns, name, err)
	}
	o.cms[name] = cm
	return cm, nil
}

// Secret is the named Secret of the pod's namespace.
func (o *Objects) Secret(name string) (*corev1.Secret, error) {
	if s, ok := o.secrets[name]; ok {
		return s, nil
	}
	if o.client == nil {
		return nil, fmt.Errorf("couldn't get secret %s/%s: no API client", o.ns, name)
	}
	s, err := o.client.CoreV1().Secrets(o.ns).Get(o.ctx, name, metaGet)
	if apierrors.IsNotFound(err) {
		return nil, &errNotFound{"secret", name}
	}
	if err != nil {
		return nil, fmt.Errorf("couldn't get secret %s/%s: %w", o.ns, name, err)
	}
	o.secrets[name] = s
	return s, nil
}
