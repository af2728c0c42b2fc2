package kinds

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// PodTemplates: stored pod templates, defaulted and validated as a
// workload's template is.
func podTemplates() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("podtemplates"), Kind: "PodTemplate",
		Namespaced: true,
		NameRule:   apivalidation.NameIsDNSSubdomain,
		Default:    defaulter(func(pt *corev1.PodTemplate) { defaults.PodTemplateSpec(&pt.Template) }),
		Validate: validator(func(pt *corev1.PodTemplate) field.ErrorList {
			return validation.PodTemplateSpec(&pt.Template, field.NewPath("template"))
		}),
		Printer: podTemplatePrinter,
	}
}

var podTemplatePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Containers", "string", "Names of each container in the template."),
		printers.Column("Images", "string", "Images referenced by each container in the template."),
		printers.Column("Pod Labels", "string", "The labels for the pod template."),
	},
	func(pt *corev1.PodTemplate, _ time.Time) []interface{} {
		var names, images []string
		for _, c := range pt.Template.Spec.Containers {
			names, images = append(names, c.Name), append(images, c.Image)
		}
		var labels []string
		for _, k := range validation.SortedKeys(pt.Template.Labels) {
			labels = append(labels, k+"="+pt.Template.Labels[k])
		}
		return []interface{}{pt.Name, strings.Join(names, ","), strings.Join(images, ","), strings.Join(labels, ",")}
	},
)
