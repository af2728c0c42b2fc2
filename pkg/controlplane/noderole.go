package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// LabelControlPlane is the role label of a node that runs the control
// plane, as kubeadm and k3s set it; `kubectl get nodes` shows its suffix
// in the ROLES column.
const LabelControlPlane = "node-role.kubernetes.io/control-plane"

// MarkControlPlaneNode labels node name with LabelControlPlane once it has
// registered, with the admin's client: node-role labels are not a
// kubelet's to set on itself (Kubernetes' NodeRestriction refuses them).
// It returns when the label is there or ctx ends.
func MarkControlPlaneNode(ctx context.Context, client kubernetes.Interface, name string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{LabelControlPlane: ""}}})
	if err != nil {
		return err
	}
	// Retried until the kubelet registers the node and while the
	// apiserver is unreachable; a refusal of the request itself is final.
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
			return false, err
		}
		return false, nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("label node %s %s: %w", name, LabelControlPlane, err)
	}
	return nil
}
