package kinds

import (
	"fmt"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// csiNodeIDMaxLength bounds a driver's node ID, as Kubernetes does (the
// longer of its two limits, which it allows on every write).
const csiNodeIDMaxLength = 256

// CSINodes: the CSI drivers registered on a node, named after it
// (storage.k8s.io/v1). A driver entry never changes but for its
// allocatable count.
func csiNodes() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: storagev1.SchemeGroupVersion.WithResource("csinodes"), Kind: "CSINode",
		NoGeneration: true,
		NameRule:     apivalidation.NameIsDNSSubdomain,
		Validate:     validator(validateCSINode),
		ValidateUpdate: updateValidator(func(n, old *storagev1.CSINode) field.ErrorList {
			var allErrs field.ErrorList
			for _, o := range old.Spec.Drivers {
				for _, d := range n.Spec.Drivers {
					if o.Name != d.Name {
						continue
					}
					oc, dc := o.DeepCopy(), d.DeepCopy()
					oc.Allocatable, dc.Allocatable = nil, nil
					allErrs = append(allErrs, validation.Immutable(dc, oc, field.NewPath("spec", "drivers"))...)
				}
			}
			return allErrs
		}),
		Printer: csiNodePrinter,
	}
}

func validateCSINode(n *storagev1.CSINode) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for i, d := range n.Spec.Drivers {
		p := field.NewPath("spec", "drivers").Index(i)
		allErrs = append(allErrs, csiDriverName(d.Name, p.Child("name"))...)
		if seen[d.Name] {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), d.Name))
		}
		seen[d.Name] = true
		if d.NodeID == "" {
			allErrs = append(allErrs, field.Required(p.Child("nodeID"), ""))
		} else if len(d.NodeID) > csiNodeIDMaxLength {
			allErrs = append(allErrs, field.Invalid(p.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		if a := d.Allocatable; a != nil && a.Count != nil {
			allErrs = append(allErrs, validation.Nonnegative(int64(*a.Count), p.Child("allocatable", "count"))...)
		}
		keys := map[string]bool{}
		for _, k := range d.TopologyKeys {
			if k == "" {
				allErrs = append(allErrs, field.Required(p, k))
			}
			if keys[k] {
				allErrs = append(allErrs, field.Duplicate(p, k))
			}
			keys[k] = true
			allErrs = append(allErrs, validation.QualifiedName(k, p)...)
		}
	}
	return allErrs
}

var csiNodePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
		printers.AgeColumn(),
	},
	func(n *storagev1.CSINode, now time.Time) []interface{} {
		return []interface{}{n.Name, int64(len(n.Spec.Drivers)), printers.Age(n.CreationTimestamp, now)}
	},
)
