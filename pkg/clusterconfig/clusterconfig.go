// Package clusterconfig owns the cluster-wide settings every node must
// share with the control plane, published in one ConfigMap,
// kube-system/minik8s-cluster-config (as kubeadm publishes its
// ClusterConfiguration in kube-system/kubeadm-config and k3s serves its
// agents their config): the pod range, the Service range and the DNS
// domain. The control plane writes it at every start; a joining node
// reads it, so nothing needs repeating on each join, and a node flag that
// disagrees with it is refused instead of breaking the node silently.
//
// It owns that ConfigMap and nothing else.
package clusterconfig

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Name is the ConfigMap's name, in kube-system.
const Name = "minik8s-cluster-config"

// The ConfigMap's keys, named after the flags that set them.
const (
	KeyClusterCIDR   = "cluster-cidr"
	KeyServiceCIDR   = "service-cluster-ip-range"
	KeyClusterDomain = "cluster-domain"
	// KeyRegistry is the cluster's image registry (host:port, plain
	// HTTP), where nodes pull functions' images from; optional.
	KeyRegistry = "registry"
)

// Settings are what a node takes from the cluster.
type Settings struct {
	// ClusterCIDR holds every node's pod CIDR (e.g. 10.244.0.0/16).
	ClusterCIDR string
	// ServiceCIDR is where Service cluster IPs come from (e.g. 10.96.0.0/12).
	ServiceCIDR string
	// ClusterDomain is the cluster's DNS domain (cluster.local).
	ClusterDomain string
	// Registry is the cluster's image registry, host:port, served over
	// plain HTTP (empty: none). Not a node flag: nodes only learn it.
	Registry string
}

// Validate says what is wrong with s, naming the setting.
func (s Settings) Validate() error {
	for _, c := range []struct{ key, v string }{{KeyClusterCIDR, s.ClusterCIDR}, {KeyServiceCIDR, s.ServiceCIDR}} {
		p, err := netip.ParsePrefix(c.v)
		if err != nil {
			return fmt.Errorf("%s %q: not a CIDR: %w", c.key, c.v, err)
		}
		if p != p.Masked() {
			return fmt.Errorf("%s %q: host bits set (%s?)", c.key, c.v, p.Masked())
		}
	}
	if s.ClusterDomain == "" {
		return fmt.Errorf("%s is empty", KeyClusterDomain)
	}
	if s.Registry != "" {
		if _, port, err := net.SplitHostPort(s.Registry); err != nil || port == "" {
			return fmt.Errorf("%s %q: not host:port", KeyRegistry, s.Registry)
		}
	}
	return nil
}

func (s Settings) data() map[string]string {
	d := map[string]string{KeyClusterCIDR: s.ClusterCIDR, KeyServiceCIDR: s.ServiceCIDR, KeyClusterDomain: s.ClusterDomain}
	if s.Registry != "" {
		d[KeyRegistry] = s.Registry
	}
	return d
}

// Publish writes s to the ConfigMap, creating or correcting it.
func Publish(ctx context.Context, client kubernetes.Interface, s Settings) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("cluster config: %w", err)
	}
	cms := client.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: metav1.NamespaceSystem}, Data: s.data()}
	cur, err := cms.Get(ctx, Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, want, metav1.CreateOptions{})
	case err == nil && !equalData(cur.Data, want.Data):
		cur.Data = want.Data
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("cluster config %s/%s: %w", metav1.NamespaceSystem, Name, err)
	}
	return nil
}

func equalData(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Read returns the cluster's settings; found is false when the cluster
// publishes none (a control plane older than this package).
func Read(ctx context.Context, client kubernetes.Interface) (s Settings, found bool, err error) {
	cm, err := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Settings{}, false, nil
	}
	if err != nil {
		return Settings{}, false, fmt.Errorf("read %s/%s: %w", metav1.NamespaceSystem, Name, err)
	}
	s = Settings{ClusterCIDR: cm.Data[KeyClusterCIDR], ServiceCIDR: cm.Data[KeyServiceCIDR], ClusterDomain: cm.Data[KeyClusterDomain],
		Registry: cm.Data[KeyRegistry]}
	if err := s.Validate(); err != nil {
		return Settings{}, false, fmt.Errorf("%s/%s: %w", metav1.NamespaceSystem, Name, err)
	}
	return s, true, nil
}

// Resolve settles a node's settings: each one the cluster publishes wins,
// and a flag given (non-empty in flags) that names another value is an
// error, since a node on other ranges than its cluster's breaks silently
// (pods unreachable, Services not programmed). Without a published config
// (found false) the flags hold, and defaults fill what they leave empty.
func Resolve(cluster Settings, found bool, flags, defaults Settings) (Settings, error) {
	pick := func(key, fromCluster, flag, def string, same func(a, b string) bool) (string, error) {
		switch {
		case !found && flag != "":
			return flag, nil
		case !found:
			return def, nil
		case flag != "" && !same(flag, fromCluster):
			return "", fmt.Errorf("--%s %s disagrees with the cluster's %s (kube-system/%s): leave the flag out, the node takes the cluster's", key, flag, fromCluster, Name)
		}
		return fromCluster, nil
	}
	var out Settings
	var err error
	if out.ClusterCIDR, err = pick(KeyClusterCIDR, cluster.ClusterCIDR, flags.ClusterCIDR, defaults.ClusterCIDR, samePrefix); err != nil {
		return Settings{}, err
	}
	if out.ServiceCIDR, err = pick(KeyServiceCIDR, cluster.ServiceCIDR, flags.ServiceCIDR, defaults.ServiceCIDR, samePrefix); err != nil {
		return Settings{}, err
	}
	if out.ClusterDomain, err = pick(KeyClusterDomain, cluster.ClusterDomain, flags.ClusterDomain, defaults.ClusterDomain, sameDomain); err != nil {
		return Settings{}, err
	}
	out.Registry = cluster.Registry
	if err := out.Validate(); err != nil {
		return Settings{}, err
	}
	return out, nil
}

// samePrefix compares CIDRs as prefixes; an unparsable one agrees with
// nothing.
func samePrefix(a, b string) bool {
	pa, errA := netip.ParsePrefix(a)
	pb, errB := netip.ParsePrefix(b)
	return errA == nil && errB == nil && pa == pb
}

// sameDomain ignores a trailing dot, as DNS does.
func sameDomain(a, b string) bool {
	return strings.TrimSuffix(a, ".") == strings.TrimSuffix(b, ".")
}
