package kinds

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Jobs get a selector of their own on create; their template never changes.
func jobs() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: batchv1.SchemeGroupVersion.WithResource("jobs"), Kind: "Job",
		Namespaced: true, Categories: []string{"all"}, Status: true,
		Default:          defaulter(defaults.Job),
		PrepareForCreate: generateJobSelector,
		NameRule:         apivalidation.NameIsDNSSubdomain,
		Validate:         validator(validation.Job),
		ValidateUpdate:   updateValidator(validation.JobUpdate),
		Printer:          printers.Job,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
		},
	}
}

// generateJobSelector gives a new Job, unless spec.manualSelector is set,
// the selector Kubernetes generates: its own UID, carried as labels by its
// pod template (prefixed and legacy forms), so its pods never match
// another Job's.
func generateJobSelector(obj runtime.Object) {
	job := obj.(*batchv1.Job)
	if ptr.Deref(job.Spec.ManualSelector, false) {
		return
	}
	uid := string(job.UID)
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		batchv1.ControllerUidLabel: uid, batchv1.JobNameLabel: job.Name,
		"controller-uid": uid, "job-name": job.Name,
	} {
		job.Spec.Template.Labels[k] = v
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: uid}}
	}
}
