package controlplane

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/controller/volume/localpath"
	"github.com/minik8s/minik8s/pkg/registry/kinds"
)

// ensureDefaultStorageClass creates the default StorageClass local-path
// when it does not exist, as an addon manager's EnsureExists would: a
// class the administrator changed or re-created is left as it is, and one
// deleted comes back at the next start.
func ensureDefaultStorageClass(ctx context.Context, client kubernetes.Interface) error {
	_, err := client.StorageV1().StorageClasses().Create(ctx, localpath.DefaultClass(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the default storage class: %w", err)
	}
	return nil
}

// ensureSystemPriorityClasses creates system-node-critical and
// system-cluster-critical, as kube-apiserver does at start.
func ensureSystemPriorityClasses(ctx context.Context, client kubernetes.Interface) error {
	for _, pc := range kinds.SystemPriorityClasses() {
		_, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create priority class %s: %w", pc.Name, err)
		}
	}
	return nil
}

// ensureMandatoryFlowControl creates the "exempt" and "catch-all"
// PriorityLevelConfigurations and FlowSchemas, as kube-apiserver keeps
// its mandatory configuration. Levels go first: the schemas name them.
func ensureMandatoryFlowControl(ctx context.Context, client kubernetes.Interface) error {
	for _, pl := range kinds.MandatoryPriorityLevelConfigurations() {
		_, err := client.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create priority level %s: %w", pl.Name, err)
		}
	}
	for _, fs := range kinds.MandatoryFlowSchemas() {
		_, err := client.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create flow schema %s: %w", fs.Name, err)
		}
	}
	return nil
}
