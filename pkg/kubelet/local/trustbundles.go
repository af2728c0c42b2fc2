package local

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// trustAnchors is what a projected clusterTrustBundle source writes, as
// Kubernetes' kubelet: the certificates of the bundle it names, or of
// every bundle of its signer that its label selector matches (nil
// selects none, empty all), deduplicated, one PEM block each. An
// optional source that finds nothing writes an empty file; otherwise
// finding nothing keeps the pod from starting.
func (p *Provider) trustAnchors(ctx context.Context, src *corev1.ClusterTrustBundleProjection) ([]byte, error) {
	if p.cfg.Client == nil {
		return nil, errors.New("no API client to read ClusterTrustBundles")
	}
	optional := ptr.Deref(src.Optional, false)
	bundles := p.cfg.Client.CertificatesV1().ClusterTrustBundles()
	var found []certificatesv1.ClusterTrustBundle
	switch {
	case src.Name != nil:
		b, err := bundles.Get(ctx, *src.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && optional {
			return []byte{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("while getting ClusterTrustBundle: %w", err)
		}
		found = append(found, *b)
	case src.SignerName != nil:
		selector, err := metav1.LabelSelectorAsSelector(src.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("while parsing label selector: %w", err)
		}
		list, err := bundles.List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return nil, fmt.Errorf("while listing ClusterTrustBundles matching label selector %v: %w", src.LabelSelector, err)
		}
		for _, b := range list.Items {
			if b.Spec.SignerName == *src.SignerName && selector.Matches(labels.Set(b.Labels)) {
				found = append(found, b)
			}
		}
		if len(found) == 0 {
			if optional {
				return []byte{}, nil
			}
			return nil, errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
		}
	default:
		return nil, errors.New("a clusterTrustBundle source names neither a bundle nor a signer")
	}
	var blocks []string
	for _, b := range found {
		rest := []byte(b.Spec.TrustBundle)
		for {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			blocks = append(blocks, string(block.Bytes))
		}
	}
	slices.Sort(blocks)
	blocks = slices.Compact(blocks)
	out := []byte{}
	for _, der := range blocks {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(der)})...)
	}
	return out, nil
}
