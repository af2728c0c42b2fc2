package registry

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// NewScheme returns a new scheme holding every kind of All: client-go's
// Kubernetes kinds and minik8s' own. Clients that decode minik8s.io
// objects can use it, or add minik8sv1.AddToScheme to a scheme of theirs.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	// The unversioned meta kinds (Status, WatchEvent, options) as "v1",
	// as client-go's own scheme has them.
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme, minik8sv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return scheme, nil
}
