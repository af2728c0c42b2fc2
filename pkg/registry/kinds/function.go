package kinds

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// Functions (minik8s.io/v1) are Python code served over HTTP, built and
// scaled by the serverless parts (pkg/serverless). This file is the whole
// of the kind's server side.
func functions() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: fnmeta.Resource, Kind: "Function",
		Namespaced: true, ShortNames: []string{"fn"}, Categories: []string{"all"}, Status: true,
		Default:  defaulter(defaultFunction),
		NameRule: apivalidation.NameIsDNS1035Label,
		Validate: validator(validateFunction),
		Printer:  functionPrinter,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.runtime": obj.(*minik8sv1.Function).Spec.Runtime}
		},
	}
}

// MaxInlineSource is the largest spec.source.inline: an object must fit
// etcd's request limit with room to spare; bigger code goes into a
// ConfigMap (kubectl fn deploy -f).
const MaxInlineSource = 512 * 1024

func defaultFunction(fn *minik8sv1.Function) {
	s := &fn.Spec
	if s.Handler == "" {
		s.Handler = fnmeta.DefaultHandler
	}
	sc := &s.Scale
	if sc.MinScale == nil {
		sc.MinScale = ptr.To[int32](fnmeta.DefaultMinScale)
	}
	if sc.MaxScale == nil {
		sc.MaxScale = ptr.To[int32](max(fnmeta.DefaultMaxScale, *sc.MinScale))
	}
	if sc.Target == nil {
		sc.Target = ptr.To[int32](fnmeta.DefaultTarget)
	}
	if sc.ScaleToZeroAfter == nil {
		d, _ := time.ParseDuration(fnmeta.DefaultScaleToZeroAfter)
		sc.ScaleToZeroAfter = &metav1.Duration{Duration: d}
	}
	if s.Timeout == nil {
		d, _ := time.ParseDuration(fnmeta.DefaultTimeout)
		s.Timeout = &metav1.Duration{Duration: d}
	}
}

func validateFunction(fn *minik8sv1.Function) field.ErrorList {
	spec := field.NewPath("spec")
	s := &fn.Spec
	allErrs := validation.Enum(s.Runtime, fnmeta.Runtimes, spec.Child("runtime"))
	allErrs = append(allErrs, validateHandler(s.Handler, spec.Child("handler"))...)
	allErrs = append(allErrs, validateFunctionSource(&s.Source, spec.Child("source"))...)
	allErrs = append(allErrs, validateFunctionScale(&s.Scale, spec.Child("scale"))...)
	if s.Timeout != nil && s.Timeout.Duration <= 0 {
		allErrs = append(allErrs, field.Invalid(spec.Child("timeout"), s.Timeout.Duration.String(), "must be positive"))
	}
	allErrs = append(allErrs, validateInstanceContainer(s, spec)...)
	st, stPath := &fn.Status, field.NewPath("status")
	allErrs = append(allErrs, validation.Nonnegative(st.ObservedGeneration, stPath.Child("observedGeneration"))...)
	allErrs = append(allErrs, validation.Nonnegative(st.Revision, stPath.Child("revision"))...)
	return append(allErrs, metav1validation.ValidateConditions(st.Conditions, stPath.Child("conditions"))...)
}

// validateHandler: module.function, the module a dotted Python module
// path and the function a Python identifier.
func validateHandler(h string, fldPath *field.Path) field.ErrorList {
	i := strings.LastIndex(h, ".")
	if i <= 0 || i == len(h)-1 {
		return field.ErrorList{field.Invalid(fldPath, h, "must be module.function, e.g. main.handle")}
	}
	for _, part := range strings.Split(h, ".") {
		if !pythonIdentifier(part) {
			return field.ErrorList{field.Invalid(fldPath, h, "must be module.function made of Python identifiers (letters, digits, '_', not starting with a digit)")}
		}
	}
	return nil
}

func pythonIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func validateFunctionSource(src *minik8sv1.FunctionSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case src.Inline == "" && src.ConfigMap == nil:
		allErrs = append(allErrs, field.Required(fldPath, "inline code or a configMap with the function's files is required"))
	case src.Inline != "" && src.ConfigMap != nil:
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("configMap"), "may not be set together with inline"))
	}
	if n := len(src.Inline); n > MaxInlineSource {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("inline"), strconv.Itoa(n)+" bytes",
			"must be at most "+strconv.Itoa(MaxInlineSource)+" bytes; put larger code in a ConfigMap (kubectl fn deploy -f)"))
	}
	if cm := src.ConfigMap; cm != nil {
		allErrs = append(allErrs, validation.DNS1123Subdomain(cm.Name, fldPath.Child("configMap", "name"))...)
	}
	return allErrs
}

func validateFunctionScale(sc *minik8sv1.FunctionScale, fldPath *field.Path) field.ErrorList {
	allErrs := validation.NonnegativePtr32(sc.MinScale, fldPath.Child("minScale"))
	if sc.MaxScale != nil && *sc.MaxScale < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxScale"), *sc.MaxScale, "must be at least 1"))
	}
	if sc.MinScale != nil && sc.MaxScale != nil && *sc.MinScale > *sc.MaxScale {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("minScale"), *sc.MinScale, "must not be greater than maxScale"))
	}
	if sc.Target != nil && *sc.Target < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("target"), *sc.Target, "must be at least 1"))
	}
	if d := sc.ScaleToZeroAfter; d != nil && d.Duration < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("scaleToZeroAfter"), d.Duration.String(), "must not be negative"))
	}
	return allErrs
}

// validateInstanceContainer checks env and resources as a pod's would
// be, through the pod validation, with the errors' paths moved back to
// the Function's fields.
func validateInstanceContainer(s *minik8sv1.FunctionSpec, spec *field.Path) field.ErrorList {
	pod := &corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
		TerminationGracePeriodSeconds: ptr.To[int64](30), SchedulerName: corev1.DefaultSchedulerName,
		Containers: []corev1.Container{{
			Name: "function", Image: "function", Env: s.Env, Resources: s.Resources,
			TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy: corev1.PullIfNotPresent,
		}},
	}
	container := spec.Child("containers").Index(0).String() + "."
	var allErrs field.ErrorList
	for _, e := range validation.PodSpec(pod, spec) {
		if rest, ok := strings.CutPrefix(e.Field, container); ok && (strings.HasPrefix(rest, "env") || strings.HasPrefix(rest, "resources")) {
			e.Field = spec.String() + "." + rest
			allErrs = append(allErrs, e)
		}
	}
	return allErrs
}

// The table: NAME RUNTIME REVISION READY INSTANCES URL AGE.
var functionPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Runtime", "string", minik8sv1.FunctionSpec{}.SwaggerDoc()["runtime"]),
		printers.Column("Revision", "integer", minik8sv1.FunctionStatus{}.SwaggerDoc()["revision"]),
		printers.Column("Ready", "string", "The Ready condition's status (and its reason when not True)."),
		printers.Column("Instances", "string", "Ready instances / instances."),
		printers.Column("URL", "string", minik8sv1.FunctionStatus{}.SwaggerDoc()["url"]),
		printers.AgeColumn(),
		printers.Wide(printers.Column("Image", "string", minik8sv1.FunctionStatus{}.SwaggerDoc()["image"])),
	},
	func(fn *minik8sv1.Function, now time.Time) []interface{} {
		ready := "Unknown"
		for _, c := range fn.Status.Conditions {
			if c.Type == "Ready" {
				ready = string(c.Status)
				if c.Status != metav1.ConditionTrue && c.Reason != "" {
					ready += " (" + c.Reason + ")"
				}
			}
		}
		instances := strconv.Itoa(int(fn.Status.ReadyInstances)) + "/" + strconv.Itoa(int(fn.Status.Instances))
		return []interface{}{fn.Name, fn.Spec.Runtime, fn.Status.Revision, ready, instances, fn.Status.URL,
			printers.Age(fn.CreationTimestamp, now), fn.Status.Image}
	},
)
