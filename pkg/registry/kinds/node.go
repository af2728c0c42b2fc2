package kinds

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Nodes register with the status their kubelet reports.
func nodes() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node",
		ShortNames: []string{"no"}, Status: true, KeepStatusOnCreate: true, NoGeneration: true,
		Default:        defaulter(defaultNode),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateNode),
		ValidateUpdate: updateValidator(validateNodeUpdate),
		Printer:        nodePrinter,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
		},
	}
}

// Defaults.

func defaultNode(node *corev1.Node) {
	defaults.ResourceList(node.Status.Capacity)
	defaults.ResourceList(node.Status.Allocatable)
	if node.Status.Allocatable == nil && node.Status.Capacity != nil {
		node.Status.Allocatable = make(corev1.ResourceList, len(node.Status.Capacity))
		for name, q := range node.Status.Capacity {
			node.Status.Allocatable[name] = q.DeepCopy()
		}
	}
}

// Validation.

var supportedTaintEffectsForNodes = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

func validateNode(node *corev1.Node) field.ErrorList {
	allErrs := field.ErrorList{}
	specPath := field.NewPath("spec")
	if node.Spec.PodCIDR != "" {
		allErrs = append(allErrs, utilvalidation.IsValidCIDR(specPath.Child("podCIDR"), node.Spec.PodCIDR)...)
	}
	for i, cidr := range node.Spec.PodCIDRs {
		allErrs = append(allErrs, utilvalidation.IsValidCIDR(specPath.Child("podCIDRs").Index(i), cidr)...)
	}
	if len(node.Spec.PodCIDRs) > 0 && node.Spec.PodCIDR != "" && node.Spec.PodCIDRs[0] != node.Spec.PodCIDR {
		allErrs = append(allErrs, field.Invalid(specPath.Child("podCIDRs").Index(0), node.Spec.PodCIDRs[0], "must match `podCIDR`"))
	}
	allErrs = append(allErrs, validateTaints(node.Spec.Taints, specPath.Child("taints"))...)
	allErrs = append(allErrs, validation.ResourceList(node.Status.Capacity, field.NewPath("status", "capacity"))...)
	allErrs = append(allErrs, validation.ResourceList(node.Status.Allocatable, field.NewPath("status", "allocatable"))...)
	return allErrs
}

// validateNodeUpdate: pod CIDRs may be assigned once, never changed.
func validateNodeUpdate(node, old *corev1.Node) field.ErrorList {
	allErrs := field.ErrorList{}
	specPath := field.NewPath("spec")
	if old.Spec.PodCIDR != "" && node.Spec.PodCIDR != old.Spec.PodCIDR {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("podCIDR"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if len(old.Spec.PodCIDRs) > 0 && !equality.Semantic.DeepEqual(node.Spec.PodCIDRs, old.Spec.PodCIDRs) {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	return allErrs
}

func validateTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	seen := sets.New[string]()
	for i, t := range taints {
		idxPath := fldPath.Index(i)
		if t.Key == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("key"), ""))
		} else {
			allErrs = append(allErrs, validation.QualifiedName(t.Key, idxPath.Child("key"))...)
		}
		for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("value"), t.Value, msg))
		}
		allErrs = append(allErrs, validation.Enum(t.Effect, supportedTaintEffectsForNodes, idxPath.Child("effect"))...)
		key := t.Key + ":" + string(t.Effect)
		if seen.Has(key) {
			allErrs = append(allErrs, field.Duplicate(idxPath, "taints must be unique by key and effect pair"))
		}
		seen.Insert(key)
	}
	return allErrs
}

// The table.

const nodeRolePrefix = "node-role.kubernetes.io/"

var nodePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Status", "string", "The status of the node"),
		printers.Column("Roles", "string", "The roles of the node"),
		printers.AgeColumn(),
		printers.Column("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
		printers.Wide(printers.Column("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"])),
		printers.Wide(printers.Column("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"])),
		printers.Wide(printers.Column("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"])),
		printers.Wide(printers.Column("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"])),
		printers.Wide(printers.Column("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"])),
	},
	nodeCells,
)

func nodeCells(node *corev1.Node, now time.Time) []interface{} {
	info := node.Status.NodeInfo
	return []interface{}{
		node.Name,
		nodeStatus(node),
		printers.OrDefault(strings.Join(nodeRoles(node), ","), printers.None),
		printers.Age(node.CreationTimestamp, now),
		info.KubeletVersion,
		nodeAddress(node, corev1.NodeInternalIP),
		nodeAddress(node, corev1.NodeExternalIP),
		printers.OrDefault(info.OSImage, printers.Unknown),
		printers.OrDefault(info.KernelVersion, printers.Unknown),
		printers.OrDefault(info.ContainerRuntimeVersion, printers.Unknown),
	}
}

// nodeStatus is "Ready", "NotReady" or "Unknown" from the Ready condition,
// with ",SchedulingDisabled" for cordoned nodes.
func nodeStatus(node *corev1.Node) string {
	status := "Unknown"
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = string(corev1.NodeReady)
			if c.Status != corev1.ConditionTrue {
				status = "Not" + status
			}
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles collects roles from node-role.kubernetes.io/<role> labels and the
// legacy kubernetes.io/role=<role> label, sorted and de-duplicated.
func nodeRoles(node *corev1.Node) []string {
	var roles []string
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, nodeRolePrefix) && len(k) > len(nodeRolePrefix):
			roles = append(roles, strings.TrimPrefix(k, nodeRolePrefix))
		case k == "kubernetes.io/role" && v != "":
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return printers.None
}
