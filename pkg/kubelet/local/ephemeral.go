package local

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// syncEphemeralContainers starts the ephemeral containers that never ran
// in the pod, as Kubernetes' kubelet does: once each, whatever becomes of
// them, in the pod's sandbox (its network, IPC and UTS namespaces and its
// volumes), in the process namespace of their targetContainerName when
// they name one.
func (w *podWorker) syncEphemeralContainers(ctx context.Context, pod *corev1.Pod, sb *runtime.ContainerStatus) bool {
	acted := false
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		if len(w.obs.instances("", ec.Name)) > 0 || w.restartBase[ec.Name] > 0 {
			continue // never restarted
		}
		if w.startEphemeral(ctx, pod, ec, sb) {
			acted = true
		}
	}
	return acted
}

// startEphemeral creates and starts one ephemeral container.
func (w *podWorker) startEphemeral(ctx context.Context, pod *corev1.Pod, ec *corev1.EphemeralContainer, sb *runtime.ContainerStatus) bool {
	c := (*corev1.Container)(&ec.EphemeralContainerCommon)
	return w.runContainer(ctx, pod, c, sb, func() (runtime.ContainerConfig, error) {
		var target string
		if name := ec.TargetContainerName; name != "" {
			for _, inst := range w.obs.instances(sb.ID, name) {
				if inst.State == runtime.StateRunning {
					target = inst.ID
					break
				}
			}
			if target == "" {
				return runtime.ContainerConfig{}, fmt.Errorf("unable to find target container %v", name)
			}
		}
		cfg, err := w.p.containerConfig(ctx, pod, c, false, 0, w.podIP)
		if err != nil {
			return cfg, err
		}
		cfg.Labels[labelEphemeral] = "true"
		cfg.TargetPIDOf = target
		return cfg, nil
	})
}

// isEphemeral says whether name is one of the pod's ephemeral containers.
func isEphemeral(pod *corev1.Pod, name string) bool {
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name == name {
			return true
		}
	}
	return false
}
