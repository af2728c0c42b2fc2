package serviceaccount

import (
	"fmt"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
)

// Names shared by the apiserver, the controllers and the kubelet.
const (
	// DefaultIssuer is the iss claim of every token, kube-apiserver's
	// default --service-account-issuer.
	DefaultIssuer = "https://kubernetes.default.svc.cluster.local"
	// DefaultServiceAccountName is the account every namespace has (the
	// serviceaccount controller) and pods run as unless they name one.
	DefaultServiceAccountName = "default"
	// RootCAConfigMapName is the ConfigMap of every namespace that holds
	// the cluster CA (the root-ca-cert-publisher controller) under
	// RootCAConfigMapKey.
	RootCAConfigMapName = "kube-root-ca.crt"
	RootCAConfigMapKey  = "ca.crt"
	// MountPath is where the ServiceAccount admission mounts the token,
	// the CA and the namespace in every container.
	MountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// VolumeNamePrefix starts the name of that volume
	// ("kube-api-access-" and 5 random characters).
	VolumeNamePrefix = "kube-api-access-"
)

// User names and groups of service accounts.
const (
	UserPrefix      = "system:serviceaccount:"
	AllGroup        = "system:serviceaccounts"
	GroupPrefix     = "system:serviceaccounts:"
	PodNameKey      = "authentication.kubernetes.io/pod-name"
	PodUIDKey       = "authentication.kubernetes.io/pod-uid"
	NodeNameKey     = "authentication.kubernetes.io/node-name"
	NodeUIDKey      = "authentication.kubernetes.io/node-uid"
	CredentialIDKey = "authentication.kubernetes.io/credential-id"
)

// Token lifetimes, in seconds.
const (
	// DefaultExpirationSeconds is a TokenRequest's default, as the v1 API's.
	DefaultExpirationSeconds = 3600
	// MinExpirationSeconds is the shortest lifetime one may ask for.
	MinExpirationSeconds = 600
	// MaxExpirationSeconds caps what is asked for (with a warning), as
	// kube-apiserver's --service-account-max-token-expiration does.
	MaxExpirationSeconds = 48 * 3600
	// VolumeExpirationSeconds is the lifetime the admission asks for in
	// the projected volume (Kubernetes' 3607: an hour and 7 seconds).
	VolumeExpirationSeconds = 3607
)

// UserName is the user a service account authenticates as.
func UserName(namespace, name string) string { return UserPrefix + namespace + ":" + name }

// SplitUserName is the namespace and name of a service account user
// name, or an error when it names none.
func SplitUserName(user string) (namespace, name string, err error) {
	rest, ok := strings.CutPrefix(user, UserPrefix)
	if !ok {
		return "", "", fmt.Errorf("username %q must start with %q", user, UserPrefix)
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || strings.Contains(name, ":") {
		return "", "", fmt.Errorf("username %q must be %snamespace:name", user, UserPrefix)
	}
	if len(apivalidation.ValidateNamespaceName(namespace, false)) > 0 || len(apivalidation.ValidateServiceAccountName(name, false)) > 0 {
		return "", "", fmt.Errorf("username %q names an invalid namespace or service account", user)
	}
	return namespace, name, nil
}

// Groups are the groups of every service account of namespace.
func Groups(namespace string) []string { return []string{AllGroup, GroupPrefix + namespace} }
