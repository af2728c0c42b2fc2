package kubelet

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Provider runs the pods bound to one node.
type Provider interface {
	// CreatePod starts a pod; it returns once the start is under way.
	CreatePod(ctx context.Context, pod *corev1.Pod) error
	// UpdatePod applies the changes a pod update may carry (images, deadlines).
	UpdatePod(ctx context.Context, pod *corev1.Pod) error
	// DeletePod stops the pod, giving its containers
	// pod.DeletionGracePeriodSeconds to exit, and returns once they are gone.
	DeletePod(ctx context.Context, pod *corev1.Pod) error
	// GetPod returns the pod as the provider runs it, or nil if it does not.
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// GetPodStatus returns the pod's observed status, or nil if unknown.
	GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error)
	// GetPods lists every pod the provider runs, including ones it found
	// running when it started (so a restarted kubelet adopts them).
	GetPods(ctx context.Context) ([]*corev1.Pod, error)
	// NotifyPods registers the callback through which the provider reports
	// a pod whose status changed on its own (a container exited, a probe failed).
	NotifyPods(ctx context.Context, notify func(*corev1.Pod))
}

// NodeProvider describes the node a provider runs on: capacity,
// allocatable, addresses, system info and any conditions it observes.
type NodeProvider interface {
	ConfigureNode(ctx context.Context, node *corev1.Node)
}

// PodAnnotator is an optional extra of a provider: annotations that
// describe how it runs a pod (e.g. the Slurm provider's job id, state,
// submit time and node list). The kubelet merges them into the pod's
// metadata whenever it writes the pod's status; it adds and updates keys,
// never removes any. Nil or empty: nothing to write.
type PodAnnotator interface {
	PodAnnotations(namespace, name string) map[string]string
}

// FinalStatusDeleter is an optional extra of a provider: DeletePod that
// also returns the status the pod's containers ended with (nil if
// unknown). The kubelet writes it, with a terminal phase, before it lets
// the object go, as Kubernetes' kubelet does: a Job's pod failure policy
// and a StatefulSet read how a deleted pod ended.
type FinalStatusDeleter interface {
	DeletePodWithStatus(ctx context.Context, pod *corev1.Pod) (*corev1.PodStatus, error)
}
