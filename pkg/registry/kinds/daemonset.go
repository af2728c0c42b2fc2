package kinds

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// AnnotationTemplateGeneration is where apps/v1 keeps a DaemonSet's
// template generation (the internal spec.templateGeneration of
// Kubernetes): 1 on create, one more each time spec.template changes. The
// DaemonSet controller labels its pods with it (pod-template-generation).
const AnnotationTemplateGeneration = "deprecated.daemonset.template.generation"

// DaemonSets: one pod per eligible node; the selector never changes, and
// the template generation is the server's to count.
func daemonSets() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: appsv1.SchemeGroupVersion.WithResource("daemonsets"), Kind: "DaemonSet",
		Namespaced: true, ShortNames: []string{"ds"}, Categories: []string{"all"}, Status: true,
		Default:          defaulter(defaultDaemonSet),
		NameRule:         apivalidation.NameIsDNSSubdomain,
		Validate:         validator(validateDaemonSet),
		ValidateUpdate:   selectorImmutable(func(ds *appsv1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }),
		PrepareForCreate: func(obj runtime.Object) { setTemplateGeneration(obj.(*appsv1.DaemonSet), 1) },
		PrepareForUpdate: func(obj, old runtime.Object) {
			ds, prev := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
			// A client may not set it (kubectl apply of a manifest drops
			// it): it follows the stored one, one more when the
			// template changed, as Kubernetes' strategy does.
			gen := templateGeneration(prev)
			if !apiequality.Semantic.DeepEqual(ds.Spec.Template, prev.Spec.Template) {
				gen++
			}
			setTemplateGeneration(ds, gen)
		},
		Printer: daemonSetPrinter,
	}
}

// templateGeneration is ds's template generation, 0 when unknown.
func templateGeneration(ds *appsv1.DaemonSet) int64 {
	n, err := strconv.ParseInt(ds.Annotations[AnnotationTemplateGeneration], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func setTemplateGeneration(ds *appsv1.DaemonSet, gen int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[AnnotationTemplateGeneration] = strconv.FormatInt(gen, 10)
}

// Defaults.

func defaultDaemonSet(ds *appsv1.DaemonSet) {
	us := &ds.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if us.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if us.RollingUpdate.MaxUnavailable == nil {
			us.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if us.RollingUpdate.MaxSurge == nil {
			us.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	defaults.PodTemplateSpec(&ds.Spec.Template)
}

// Validation.

var supportedDaemonSetStrategies = []appsv1.DaemonSetUpdateStrategyType{
	appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType,
}

func validateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	spec := &ds.Spec
	specPath := field.NewPath("spec")
	allErrs := validation.ReplicatedTemplate(spec.Selector, &spec.Template, specPath, "daemonset")
	allErrs = append(allErrs, validation.Nonnegative(int64(spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, validation.NonnegativePtr32(spec.RevisionHistoryLimit, specPath.Child("revisionHistoryLimit"))...)

	usPath := specPath.Child("updateStrategy")
	allErrs = append(allErrs, validation.Enum(spec.UpdateStrategy.Type, supportedDaemonSetStrategies, usPath.Child("type"))...)
	if spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if ru := spec.UpdateStrategy.RollingUpdate; ru == nil {
			allErrs = append(allErrs, field.Required(usPath.Child("rollingUpdate"), ""))
		} else {
			allErrs = append(allErrs, validateRollingUpdateDaemonSet(ru, usPath.Child("rollingUpdate"))...)
		}
	}
	return allErrs
}

// validateRollingUpdateDaemonSet: both limits are counts or percentages up
// to 100%, and exactly one of them is non-zero, as in Kubernetes (a node
// either loses its pod for a moment or runs two for a moment, not both).
func validateRollingUpdateDaemonSet(ru *appsv1.RollingUpdateDaemonSet, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	muPath, msPath := fldPath.Child("maxUnavailable"), fldPath.Child("maxSurge")
	for _, f := range []struct {
		v    *intstr.IntOrString
		path *field.Path
	}{{ru.MaxUnavailable, muPath}, {ru.MaxSurge, msPath}} {
		if f.v == nil {
			continue
		}
		allErrs = append(allErrs, validateIntOrPercentTo100(*f.v, f.path)...)
	}
	hasUnavailable := ru.MaxUnavailable != nil && !isZero(ru.MaxUnavailable)
	hasSurge := ru.MaxSurge != nil && !isZero(ru.MaxSurge)
	switch {
	case hasUnavailable && hasSurge:
		allErrs = append(allErrs, field.Invalid(msPath, ru.MaxSurge.String(), "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		allErrs = append(allErrs, field.Required(muPath, "cannot be 0 when maxSurge is 0"))
	}
	return allErrs
}

// The table.

var daemonSetPrinter = printers.Typed(
	append([]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Desired", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
		printers.Column("Current", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
		printers.Column("Ready", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
		printers.Column("Up-to-date", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
		printers.Column("Available", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
		printers.Column("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
		printers.AgeColumn(),
	}, printers.TemplateColumns(appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"])...),
	func(ds *appsv1.DaemonSet, now time.Time) []interface{} {
		names, images := printers.ContainerCells(ds.Spec.Template.Spec.Containers)
		return []interface{}{
			ds.Name,
			int64(ds.Status.DesiredNumberScheduled),
			int64(ds.Status.CurrentNumberScheduled),
			int64(ds.Status.NumberReady),
			int64(ds.Status.UpdatedNumberScheduled),
			int64(ds.Status.NumberAvailable),
			labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
			printers.Age(ds.CreationTimestamp, now),
			names,
			images,
			metav1.FormatLabelSelector(ds.Spec.Selector),
		}
	},
)
