package kinds

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// StatefulSets: scalable through /scale; once created, only the replicas,
// ordinals, template, update strategy, claim retention policy,
// minReadySeconds and revisionHistoryLimit change.
func statefulSets() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: appsv1.SchemeGroupVersion.WithResource("statefulsets"), Kind: "StatefulSet",
		Namespaced: true, ShortNames: []string{"sts"}, Categories: []string{"all"}, Status: true,
		Scale: replicasScale(func(ss *appsv1.StatefulSet) (**int32, int32, *metav1.LabelSelector) {
			return &ss.Spec.Replicas, ss.Status.Replicas, ss.Spec.Selector
		}),
		Default:        defaulter(defaultStatefulSet),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateStatefulSet),
		ValidateUpdate: updateValidator(validateStatefulSetUpdate),
		Printer:        statefulSetPrinter,
	}
}

// Defaults.

func defaultStatefulSet(ss *appsv1.StatefulSet) {
	spec := &ss.Spec
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	// As Kubernetes: an explicit RollingUpdate without rollingUpdate stays
	// without it (partition 0 all the same), an unset type gets both.
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := spec.UpdateStrategy.RollingUpdate; spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		ru != nil && ru.Partition == nil {
		ru.Partition = ptr.To[int32](0)
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	policy := spec.PersistentVolumeClaimRetentionPolicy
	if policy.WhenDeleted == "" {
		policy.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if policy.WhenScaled == "" {
		policy.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	for i := range spec.VolumeClaimTemplates {
		defaults.PersistentVolumeClaim(&spec.VolumeClaimTemplates[i])
	}
	defaults.PodTemplateSpec(&spec.Template)
}

// Validation.

var (
	supportedPodManagementPolicies  = []appsv1.PodManagementPolicyType{appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement}
	supportedClaimRetentionPolicies = []appsv1.PersistentVolumeClaimRetentionPolicyType{
		appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
	}
)

func validateStatefulSet(ss *appsv1.StatefulSet) field.ErrorList {
	spec := &ss.Spec
	specPath := field.NewPath("spec")
	allErrs := field.ErrorList{}
	if spec.PodManagementPolicy == "" {
		allErrs = append(allErrs, field.Required(specPath.Child("podManagementPolicy"), ""))
	} else if !slices.Contains(supportedPodManagementPolicies, spec.PodManagementPolicy) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	allErrs = append(allErrs, validateStatefulSetUpdateStrategy(&spec.UpdateStrategy, specPath.Child("updateStrategy"))...)
	if policy := spec.PersistentVolumeClaimRetentionPolicy; policy != nil {
		p := specPath.Child("persistentVolumeClaimRetentionPolicy")
		allErrs = append(allErrs, validation.Enum(policy.WhenDeleted, supportedClaimRetentionPolicies, p.Child("whenDeleted"))...)
		allErrs = append(allErrs, validation.Enum(policy.WhenScaled, supportedClaimRetentionPolicies, p.Child("whenScaled"))...)
	}
	allErrs = append(allErrs, validation.NonnegativePtr32(spec.Replicas, specPath.Child("replicas"))...)
	if spec.Ordinals != nil {
		allErrs = append(allErrs, validation.Nonnegative(int64(spec.Ordinals.Start), specPath.Child("ordinals", "start"))...)
	}
	allErrs = append(allErrs, validation.Nonnegative(int64(spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, validation.NonnegativePtr32(spec.RevisionHistoryLimit, specPath.Child("revisionHistoryLimit"))...)
	if spec.ServiceName != "" {
		allErrs = append(allErrs, validation.DNS1123Label(spec.ServiceName, specPath.Child("serviceName"))...)
	}

	// The pod template is checked as the pods will be: with a volume for
	// each claim template its containers may mount, as the controller adds
	// them. Kubernetes defers that check to pod creation; refusing here
	// the pods that could never be created is the same answer, earlier.
	tmpl := spec.Template.DeepCopy()
	tmpl.Spec.Volumes = podVolumes(tmpl.Spec.Volumes, spec.VolumeClaimTemplates)
	allErrs = append(allErrs, validation.SelectorMatchesTemplate(spec.Selector, tmpl, specPath, true, "statefulset")...)
	tplPath := specPath.Child("template")
	allErrs = append(allErrs, validation.PodTemplateSpec(tmpl, tplPath)...)
	if rp := spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(tplPath.Child("spec", "restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if spec.Template.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(tplPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in StatefulSet is not Supported"))
	}

	names := map[string]bool{}
	for i := range spec.VolumeClaimTemplates {
		claim := &spec.VolumeClaimTemplates[i]
		p := specPath.Child("volumeClaimTemplates").Index(i)
		if claim.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("metadata", "name"), ""))
		} else {
			// The claim is named <template>-<statefulset>-<ordinal>; the
			// template name alone must at least be a valid name.
			for _, msg := range apivalidation.NameIsDNSSubdomain(claim.Name, false) {
				allErrs = append(allErrs, field.Invalid(p.Child("metadata", "name"), claim.Name, msg))
			}
			if names[claim.Name] {
				allErrs = append(allErrs, field.Duplicate(p.Child("metadata", "name"), claim.Name))
			}
			names[claim.Name] = true
		}
		allErrs = append(allErrs, validation.Labels(claim.Labels, p.Child("metadata", "labels"))...)
		allErrs = append(allErrs, validatePersistentVolumeClaimSpec(&claim.Spec, p.Child("spec"))...)
	}
	return allErrs
}

func validateStatefulSetUpdateStrategy(s *appsv1.StatefulSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(fldPath.Child("rollingUpdate"), s.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType))}
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := s.RollingUpdate; ru != nil {
			return validation.NonnegativePtr32(ru.Partition, fldPath.Child("rollingUpdate", "partition"))
		}
	default:
		return field.ErrorList{field.Invalid(fldPath, s,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType))}
	}
	return nil
}

// podVolumes are a StatefulSet's pod volumes: the template's, with a
// claim volume for each claim template not already among them (the
// controller replaces those of the same name by its claims).
func podVolumes(volumes []corev1.Volume, claims []corev1.PersistentVolumeClaim) []corev1.Volume {
	have := map[string]bool{}
	for _, v := range volumes {
		have[v.Name] = true
	}
	for _, c := range claims {
		if c.Name == "" || have[c.Name] {
			continue
		}
		volumes = append(volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name},
		}})
	}
	return volumes
}

const statefulSetSpecUpdateForbidden = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', " +
	"'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"

// validateStatefulSetUpdate: the selector, service name, pod management
// policy and claim templates are the set's identity and storage, fixed at
// creation, as in Kubernetes.
func validateStatefulSetUpdate(ss, old *appsv1.StatefulSet) field.ErrorList {
	newSpec, oldSpec := ss.Spec.DeepCopy(), old.Spec.DeepCopy()
	newSpec.Replicas, newSpec.Ordinals, newSpec.Template = oldSpec.Replicas, oldSpec.Ordinals, oldSpec.Template
	newSpec.UpdateStrategy, newSpec.PersistentVolumeClaimRetentionPolicy = oldSpec.UpdateStrategy, oldSpec.PersistentVolumeClaimRetentionPolicy
	newSpec.MinReadySeconds, newSpec.RevisionHistoryLimit = oldSpec.MinReadySeconds, oldSpec.RevisionHistoryLimit
	if !equality.Semantic.DeepEqual(newSpec, oldSpec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), statefulSetSpecUpdateForbidden)}
	}
	return nil
}

// The table.

var statefulSetPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Ready", "string", "Number of the pod with ready state"),
		printers.AgeColumn(),
		printers.Wide(printers.Column("Containers", "string", "Names of each container in the template.")),
		printers.Wide(printers.Column("Images", "string", "Images referenced by each container in the template.")),
	},
	func(ss *appsv1.StatefulSet, now time.Time) []interface{} {
		names, images := printers.ContainerCells(ss.Spec.Template.Spec.Containers)
		return []interface{}{
			ss.Name,
			fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, printers.DerefInt32(ss.Spec.Replicas, 1)),
			printers.Age(ss.CreationTimestamp, now),
			names,
			images,
		}
	},
)
