package defaults

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	defaultPersistentVolumeClaimSpec(&pvc.Spec)
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
}

func defaultPersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec) {
	if spec.VolumeMode == nil {
		spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	ResourceList(spec.Resources.Limits)
	ResourceList(spec.Resources.Requests)
}

func ReplicationController(rc *corev1.ReplicationController) {
	if rc.Spec.Template != nil {
		if labels := rc.Spec.Template.Labels; labels != nil {
			if len(rc.Spec.Selector) == 0 {
				rc.Spec.Selector = CopyStringMap(labels)
			}
			if len(rc.Labels) == 0 {
				rc.Labels = CopyStringMap(labels)
			}
		}
		PodTemplateSpec(rc.Spec.Template)
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
}

// CopyStringMap returns a copy of in.
func CopyStringMap(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// countSetPointers counts the non-nil pointer fields of a struct such as
// VolumeSource, where exactly one member is expected to be set.
func countSetPointers(structPtr any) int {
	v := reflect.ValueOf(structPtr).Elem()
	n := 0
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}
