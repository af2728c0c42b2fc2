package validation

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedTaintEffectsForNodes = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

func Namespace(ns *corev1.Namespace) field.ErrorList {
	allErrs := field.ErrorList{}
	fldPath := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		allErrs = append(allErrs, apimachineryvalidation.ValidateFinalizerName(string(f), fldPath.Index(i))...)
	}
	return allErrs
}

func Node(node *corev1.Node) field.ErrorList {
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
	allErrs = append(allErrs, validateResourceList(node.Status.Capacity, field.NewPath("status", "capacity"))...)
	allErrs = append(allErrs, validateResourceList(node.Status.Allocatable, field.NewPath("status", "allocatable"))...)
	return allErrs
}

// NodeUpdate: pod CIDRs may be assigned once, never changed.
func NodeUpdate(node, old *corev1.Node) field.ErrorList {
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
			allErrs = append(allErrs, QualifiedName(t.Key, idxPath.Child("key"))...)
		}
		for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("value"), t.Value, msg))
		}
		allErrs = append(allErrs, Enum(t.Effect, supportedTaintEffectsForNodes, idxPath.Child("effect"))...)
		key := t.Key + ":" + string(t.Effect)
		if seen.Has(key) {
			allErrs = append(allErrs, field.Duplicate(idxPath, "taints must be unique by key and effect pair"))
		}
		seen.Insert(key)
	}
	return allErrs
}

func ConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	allErrs := field.ErrorList{}
	dataPath, binPath := field.NewPath("data"), field.NewPath("binaryData")
	total := 0
	for _, key := range sortedKeys(cm.Data) {
		allErrs = append(allErrs, validateDataKey(key, dataPath.Key(key))...)
		if _, dup := cm.BinaryData[key]; dup {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		allErrs = append(allErrs, validateDataKey(key, binPath.Key(key))...)
		total += len(cm.BinaryData[key])
	}
	if total > corev1.MaxSecretSize {
		allErrs = append(allErrs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return allErrs
}

func validateDataKey(key string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, msg := range utilvalidation.IsConfigMapKey(key) {
		allErrs = append(allErrs, field.Invalid(fldPath, key, msg))
	}
	return allErrs
}

// immutableDataMsg is upstream's message for changing immutable data.
const immutableDataMsg = "field is immutable when `immutable` is set"

func ConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	return validateImmutableData(old.Immutable, cm.Immutable, map[string]bool{
		"data":       equalMaps(cm.Data, old.Data),
		"binaryData": equalBytesMaps(cm.BinaryData, old.BinaryData),
	})
}

func Secret(s *corev1.Secret) field.ErrorList {
	allErrs := field.ErrorList{}
	dataPath := field.NewPath("data")
	total := 0
	for _, key := range sortedKeys(s.Data) {
		allErrs = append(allErrs, validateDataKey(key, dataPath.Key(key))...)
		total += len(s.Data[key])
	}
	if total > corev1.MaxSecretSize {
		allErrs = append(allErrs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	required := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				allErrs = append(allErrs, field.Required(dataPath.Key(k), ""))
			}
		}
	}
	requireJSON := func(key string) {
		b, ok := s.Data[key]
		if !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(key), ""))
			return
		}
		if err := json.Unmarshal(b, &map[string]any{}); err != nil {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, hasUser := s.Data[corev1.BasicAuthUsernameKey]
		_, hasPass := s.Data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPass {
			required(corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		required(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	return allErrs
}

func SecretUpdate(s, old *corev1.Secret) field.ErrorList {
	allErrs := Immutable(s.Type, old.Type, field.NewPath("type"))
	return append(allErrs, validateImmutableData(old.Immutable, s.Immutable, map[string]bool{
		"data": equalBytesMaps(s.Data, old.Data),
	})...)
}

// validateImmutableData applies the `immutable: true` rules shared by
// ConfigMaps and Secrets; unchanged maps each data field to whether it is
// unchanged.
func validateImmutableData(oldImmutable, newImmutable *bool, unchanged map[string]bool) field.ErrorList {
	if oldImmutable == nil || !*oldImmutable {
		return nil
	}
	allErrs := field.ErrorList{}
	if newImmutable == nil || !*newImmutable {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), immutableDataMsg))
	}
	for _, name := range sortedKeys(unchanged) {
		if !unchanged[name] {
			allErrs = append(allErrs, field.Forbidden(field.NewPath(name), immutableDataMsg))
		}
	}
	return allErrs
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func equalBytesMaps(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || string(w) != string(v) {
			return false
		}
	}
	return true
}

func Event(ev *corev1.Event) field.ErrorList {
	allErrs := field.ErrorList{}
	nsPath := field.NewPath("involvedObject", "namespace")
	if ev.InvolvedObject.Namespace == "" {
		// Events about cluster-scoped objects live in "default" (or nowhere).
		if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
			allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else if ev.Namespace != ev.InvolvedObject.Namespace {
		allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if ev.Count < 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("count"), ev.Count, isNegativeErrorMsg))
	}
	return allErrs
}

func ServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, s := range sa.Secrets {
		if s.Name != "" {
			allErrs = append(allErrs, DNS1123Subdomain(s.Name, field.NewPath("secrets").Index(i).Child("name"))...)
		}
	}
	for i, s := range sa.ImagePullSecrets {
		if s.Name == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	return allErrs
}

func Endpoints(ep *corev1.Endpoints) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, ss := range ep.Subsets {
		idxPath := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			allErrs = append(allErrs, field.Required(idxPath, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j, a := range ss.Addresses {
			allErrs = append(allErrs, validateEndpointAddress(&a, idxPath.Child("addresses").Index(j))...)
		}
		for j, a := range ss.NotReadyAddresses {
			allErrs = append(allErrs, validateEndpointAddress(&a, idxPath.Child("notReadyAddresses").Index(j))...)
		}
		names := sets.New[string]()
		for j, p := range ss.Ports {
			portPath := idxPath.Child("ports").Index(j)
			if p.Name == "" {
				if len(ss.Ports) > 1 {
					allErrs = append(allErrs, field.Required(portPath.Child("name"), ""))
				}
			} else {
				allErrs = append(allErrs, DNS1123Label(p.Name, portPath.Child("name"))...)
				if names.Has(p.Name) {
					allErrs = append(allErrs, field.Duplicate(portPath.Child("name"), p.Name))
				}
				names.Insert(p.Name)
			}
			allErrs = append(allErrs, PortNumber(p.Port, portPath.Child("port"))...)
			allErrs = append(allErrs, Protocol(p.Protocol, portPath.Child("protocol"))...)
		}
	}
	return allErrs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	allErrs := utilvalidation.IsValidIP(fldPath.Child("ip"), a.IP)
	if a.Hostname != "" {
		allErrs = append(allErrs, DNS1123Label(a.Hostname, fldPath.Child("hostname"))...)
	}
	if a.NodeName != nil && *a.NodeName != "" {
		allErrs = append(allErrs, DNS1123Subdomain(*a.NodeName, fldPath.Child("nodeName"))...)
	}
	return allErrs
}

// Host checks a DNS host name that may start with a "*." wildcard
// and must not be an IP address.
func Host(host string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if len(utilvalidation.IsValidIP(fldPath, host)) == 0 {
		return append(allErrs, field.Invalid(fldPath, host, "must be a DNS name, not an IP address"))
	}
	var msgs []string
	if strings.Contains(host, "*") {
		msgs = utilvalidation.IsWildcardDNS1123Subdomain(host)
	} else {
		msgs = utilvalidation.IsDNS1123Subdomain(host)
	}
	for _, msg := range msgs {
		allErrs = append(allErrs, field.Invalid(fldPath, host, msg))
	}
	return allErrs
}
