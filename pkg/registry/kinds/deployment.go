package kinds

import (
	"fmt"
	"strings"
	"time"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Deployments: scalable through /scale; the selector never changes.
func deployments() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment",
		Namespaced: true, ShortNames: []string{"deploy"}, Categories: []string{"all"}, Status: true,
		Scale: replicasScale(func(d *appsv1.Deployment) (**int32, int32, *metav1.LabelSelector) {
			return &d.Spec.Replicas, d.Status.Replicas, d.Spec.Selector
		}),
		Default:        defaulter(defaultDeployment),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateDeployment),
		ValidateUpdate: selectorImmutable(func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector }),
		Printer:        deploymentPrinter,
	}
}

// Defaults.

func defaultDeployment(d *appsv1.Deployment) {
	spec := &d.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.Strategy.Type == "" {
		spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if spec.Strategy.RollingUpdate == nil {
			spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		ru := spec.Strategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptr.To(intstr.FromString("25%"))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if spec.ProgressDeadlineSeconds == nil {
		spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	defaults.PodTemplateSpec(&spec.Template)
}

// Validation.

var supportedDeploymentStrategies = []appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType}

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	spec := &d.Spec
	specPath := field.NewPath("spec")
	allErrs := validation.NonnegativePtr32(spec.Replicas, specPath.Child("replicas"))
	allErrs = append(allErrs, validation.ReplicatedTemplate(spec.Selector, &spec.Template, specPath, "deployment")...)

	strategyPath := specPath.Child("strategy")
	allErrs = append(allErrs, validation.Enum(spec.Strategy.Type, supportedDeploymentStrategies, strategyPath.Child("type"))...)
	switch spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if spec.Strategy.RollingUpdate != nil {
			allErrs = append(allErrs, field.Forbidden(strategyPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if spec.Strategy.RollingUpdate != nil {
			allErrs = append(allErrs, validateRollingUpdate(spec.Strategy.RollingUpdate, strategyPath.Child("rollingUpdate"))...)
		}
	}
	allErrs = append(allErrs, validation.NonnegativePtr32(spec.RevisionHistoryLimit, specPath.Child("revisionHistoryLimit"))...)
	allErrs = append(allErrs, validation.Nonnegative(int64(spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if pds := spec.ProgressDeadlineSeconds; pds != nil {
		p := specPath.Child("progressDeadlineSeconds")
		allErrs = append(allErrs, validation.Nonnegative(int64(*pds), p)...)
		if *pds <= spec.MinReadySeconds {
			allErrs = append(allErrs, field.Invalid(p, *pds, "must be greater than minReadySeconds"))
		}
	}
	return allErrs
}

func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	muPath, msPath := fldPath.Child("maxUnavailable"), fldPath.Child("maxSurge")
	if ru.MaxUnavailable != nil {
		allErrs = append(allErrs, validateIntOrPercentTo100(*ru.MaxUnavailable, muPath)...)
	}
	if ru.MaxSurge != nil {
		allErrs = append(allErrs, validateIntOrPercent(*ru.MaxSurge, msPath)...)
	}
	if isZero(ru.MaxUnavailable) && isZero(ru.MaxSurge) {
		allErrs = append(allErrs, field.Invalid(muPath, ru.MaxUnavailable.String(), "may not be 0 when `maxSurge` is 0"))
	}
	return allErrs
}

// validateIntOrPercent accepts a non-negative integer or "<n>%".
func validateIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if v.Type == intstr.String {
		for _, msg := range utilvalidation.IsValidPercent(v.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, v.StrVal, msg))
		}
		return allErrs
	}
	return validation.Nonnegative(int64(v.IntVal), fldPath)
}

// validateIntOrPercentTo100 accepts a non-negative integer or a
// percentage up to 100%.
func validateIntOrPercentTo100(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	allErrs := validateIntOrPercent(v, fldPath)
	if percent, ok := asPercent(v); ok && percent > 100 {
		allErrs = append(allErrs, field.Invalid(fldPath, v.String(), "must not be greater than 100%"))
	}
	return allErrs
}

func asPercent(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(utilvalidation.IsValidPercent(v.StrVal)) > 0 {
		return 0, false
	}
	var n int
	if _, err := fmt.Sscanf(strings.TrimSuffix(v.StrVal, "%"), "%d", &n); err != nil {
		return 0, false
	}
	return n, true
}

func isZero(v *intstr.IntOrString) bool {
	if v == nil {
		return false
	}
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	n, ok := asPercent(*v)
	return ok && n == 0
}

// The table.

var deploymentPrinter = printers.Typed(
	append([]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Ready", "string", "Number of the pod with ready state"),
		printers.Column("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
		printers.Column("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
		printers.AgeColumn(),
	}, printers.TemplateColumns(appsv1.DeploymentSpec{}.SwaggerDoc()["selector"])...),
	deploymentCells,
)

func deploymentCells(d *appsv1.Deployment, now time.Time) []interface{} {
	names, images := printers.ContainerCells(d.Spec.Template.Spec.Containers)
	selector := "<invalid>"
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = sel.String()
	}
	return []interface{}{
		d.Name,
		fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, printers.DerefInt32(d.Spec.Replicas, 1)),
		int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas),
		printers.Age(d.CreationTimestamp, now),
		names,
		images,
		selector,
	}
}
