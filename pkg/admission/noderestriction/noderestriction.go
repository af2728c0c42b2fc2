// Package noderestriction is the part of Kubernetes' NodeRestriction
// admission that needs the object being written: a node (system:node:<name>
// in system:nodes) creates PodCertificateRequests only for itself and for
// pods bound to it, with the pod's, its service account's and the node's
// own UIDs. What a node may touch at all is the Node authorizer's
// (pkg/apiserver/authz), which lets a node create PodCertificateRequests
// and leaves their content to this plugin.
package noderestriction

import (
	"context"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/minik8s/minik8s/pkg/admission"
)

// Node identities, as Kubernetes names them (pkg/apiserver/authz has the
// same; not imported, to keep admission below the apiserver).
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

var (
	podsGVR            = corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR           = corev1.SchemeGroupVersion.WithResource("nodes")
	serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
)

// Plugin is the NodeRestriction admission plugin.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name is the plugin's name in kube-apiserver.
func (*Plugin) Name() string { return "NodeRestriction" }

// Validate refuses a node's PodCertificateRequest for anything but a pod
// running on it, as it is.
func (*Plugin) Validate(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	req, ok := a.Object.(*certificatesv1.PodCertificateRequest)
	if !ok || a.Operation != admission.Create || a.Subresource != "" {
		return admission.Result{}
	}
	node, ok := strings.CutPrefix(a.UserName, nodeUserPrefix)
	if !ok || !slices.Contains(a.UserGroups, nodesGroup) {
		return admission.Result{}
	}
	if err := checkPodCertificateRequest(ctx, objects, node, req); err != nil {
		return admission.Result{Err: err}
	}
	return admission.Result{}
}

func checkPodCertificateRequest(ctx context.Context, objects admission.Objects, node string, req *certificatesv1.PodCertificateRequest) error {
	gr := certificatesv1.Resource("podcertificaterequests")
	forbid := func(format string, args ...any) error {
		return apierrors.NewForbidden(gr, req.Name, fmt.Errorf(format, args...))
	}
	if string(req.Spec.NodeName) != node {
		return forbid("PodCertificateRequest.Spec.NodeName=%q, which is not the requesting node %q", req.Spec.NodeName, node)
	}
	n, err := objects.Get(ctx, nodesGVR, "", node)
	if err != nil {
		return forbid("while retrieving node %q named in the PodCertificateRequest: %v", node, err)
	}
	if uid := n.(*corev1.Node).UID; uid != req.Spec.NodeUID {
		return forbid("PodCertificateRequest names node UID %q, inconsistent with the running node (%q)", req.Spec.NodeUID, uid)
	}
	podKey := req.Namespace + "/" + req.Spec.PodName
	obj, err := objects.Get(ctx, podsGVR, req.Namespace, req.Spec.PodName)
	if err != nil {
		return forbid("while retrieving pod %q named in the PodCertificateRequest: %v", podKey, err)
	}
	pod := obj.(*corev1.Pod)
	switch {
	case pod.UID != req.Spec.PodUID:
		return forbid("PodCertificateRequest for pod %q contains pod UID (%q) which differs from running pod %q", podKey, req.Spec.PodUID, pod.UID)
	case pod.Spec.NodeName != node:
		return forbid("pod %q is not running on node %q named in the PodCertificateRequest", podKey, node)
	case pod.Spec.ServiceAccountName != req.Spec.ServiceAccountName:
		return forbid("PodCertificateRequest for pod %q contains serviceAccountName (%q) that differs from running pod (%q)", podKey, req.Spec.ServiceAccountName, pod.Spec.ServiceAccountName)
	}
	sa, err := objects.Get(ctx, serviceAccountsGVR, req.Namespace, req.Spec.ServiceAccountName)
	if err != nil {
		return forbid("while retrieving service account %q named in the PodCertificateRequest: %v", req.Namespace+"/"+req.Spec.ServiceAccountName, err)
	}
	if uid := sa.(*corev1.ServiceAccount).UID; uid != req.Spec.ServiceAccountUID {
		return forbid("PodCertificateRequest for pod %q names service account UID %q, which differs from the running service account (%q)", podKey, req.Spec.ServiceAccountUID, uid)
	}
	return nil
}
