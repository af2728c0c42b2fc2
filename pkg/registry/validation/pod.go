package validation

import (
	"fmt"
	"math"
	"path"
	"reflect"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedRestartPolicies = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	supportedDNSPolicies     = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	supportedPullPolicies    = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	supportedTermMsgPolicies = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
	supportedTolerationOps   = []corev1.TolerationOperator{corev1.TolerationOpExists, corev1.TolerationOpEqual}
	supportedTaintEffects    = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	supportedURISchemes      = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}
	supportedHostPathTypes   = []corev1.HostPathType{
		corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory, corev1.HostPathFileOrCreate,
		corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev,
	}
	// validEnvFieldPaths are the downward API fields an env var may reference.
	validEnvFieldPaths = sets.New(
		"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
	)
)

// maxVolumeDefaultMode is 0777, the largest file mode a volume may set.
const maxVolumeDefaultMode = 0777

// PodTemplateSpec checks a pod template of a workload or PodTemplate.
func PodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := Labels(t.Labels, fldPath.Child("metadata", "labels"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(t.Annotations, fldPath.Child("metadata", "annotations"))...)
	allErrs = append(allErrs, PodSpec(&t.Spec, fldPath.Child("spec"))...)
	if len(t.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return allErrs
}

// validatePodSpec checks the fields of a pod spec users get wrong in practice.
func PodSpec(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	volumes, allErrs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	allErrs = append(allErrs, validateContainers(spec, volumes, fldPath)...)
	allErrs = append(allErrs, Enum(spec.RestartPolicy, supportedRestartPolicies, fldPath.Child("restartPolicy"))...)
	allErrs = append(allErrs, Enum(spec.DNSPolicy, supportedDNSPolicies, fldPath.Child("dnsPolicy"))...)
	if spec.DNSPolicy == corev1.DNSNone && spec.DNSConfig == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("dnsConfig"),
			fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone)))
	}
	allErrs = append(allErrs, Labels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	if spec.ServiceAccountName != "" {
		for _, msg := range apimachineryvalidation.ValidateServiceAccountName(spec.ServiceAccountName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	if spec.NodeName != "" {
		allErrs = append(allErrs, DNS1123Subdomain(spec.NodeName, fldPath.Child("nodeName"))...)
	}
	if spec.Hostname != "" {
		allErrs = append(allErrs, DNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		allErrs = append(allErrs, DNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	if spec.PriorityClassName != "" {
		allErrs = append(allErrs, DNS1123Subdomain(spec.PriorityClassName, fldPath.Child("priorityClassName"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxUint32 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, utilvalidation.InclusiveRangeError(1, math.MaxUint32)))
		}
	}
	allErrs = append(allErrs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	for i, s := range spec.ImagePullSecrets {
		if s.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	if spec.Resources != nil {
		allErrs = append(allErrs, validateResourceRequirements(spec.Resources, fldPath.Child("resources"))...)
	}
	if sc := spec.SecurityContext; sc != nil {
		allErrs = append(allErrs, validateSysctls(sc.Sysctls, fldPath.Child("securityContext", "sysctls"))...)
	}
	return allErrs
}

// sysctlName is Kubernetes' sysctl name pattern: dot- or slash-separated
// segments of lower-case alphanumerics, '-' and '_'.
const sysctlSegment = `[a-z0-9]([-_a-z0-9]*[a-z0-9])?`

var sysctlName = regexp.MustCompile(`^(` + sysctlSegment + `[\./])*` + sysctlSegment + `$`)

// validateSysctls checks names (Kubernetes' pattern, at most 253
// characters) and that none repeats; whether a node allows one is the
// kubelet's to say.
func validateSysctls(sysctls []corev1.Sysctl, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, s := range sysctls {
		p := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			allErrs = append(allErrs, field.Required(p, ""))
		case len(s.Name) > 253 || !sysctlName.MatchString(s.Name):
			allErrs = append(allErrs, field.Invalid(p, s.Name,
				fmt.Sprintf("must have at most 253 characters and match regex %s", sysctlName.String())))
		case seen.Has(s.Name):
			allErrs = append(allErrs, field.Duplicate(p, s.Name))
		}
		seen.Insert(s.Name)
	}
	return allErrs
}

// validateContainers checks init and regular containers, including the
// pod-wide uniqueness of container names.
func validateContainers(spec *corev1.PodSpec, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	names := sets.New[string]()
	initPath := fldPath.Child("initContainers")
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		idxPath := initPath.Index(i)
		allErrs = append(allErrs, validateContainer(c, spec, volumes, names, idxPath)...)
		if c.RestartPolicy != nil && *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("restartPolicy"), *c.RestartPolicy,
				[]corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
		}
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if !sidecar {
			for _, f := range []struct {
				name string
				set  bool
			}{
				{"lifecycle", c.Lifecycle != nil},
				{"livenessProbe", c.LivenessProbe != nil},
				{"readinessProbe", c.ReadinessProbe != nil},
				{"startupProbe", c.StartupProbe != nil},
			} {
				if f.set {
					allErrs = append(allErrs, field.Forbidden(idxPath.Child(f.name), "may not be set for init containers without restartPolicy=Always"))
				}
			}
		}
	}
	ctrPath := fldPath.Child("containers")
	if len(spec.Containers) == 0 {
		allErrs = append(allErrs, field.Required(ctrPath, ""))
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		idxPath := ctrPath.Index(i)
		allErrs = append(allErrs, validateContainer(c, spec, volumes, names, idxPath)...)
		if c.RestartPolicy != nil {
			allErrs = append(allErrs, Enum(*c.RestartPolicy, []corev1.ContainerRestartPolicy{
				corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyOnFailure, corev1.ContainerRestartPolicyNever,
			}, idxPath.Child("restartPolicy"))...)
		}
		if c.LivenessProbe != nil && c.LivenessProbe.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("livenessProbe", "successThreshold"), c.LivenessProbe.SuccessThreshold, "must be 1"))
		}
		if c.StartupProbe != nil && c.StartupProbe.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("startupProbe", "successThreshold"), c.StartupProbe.SuccessThreshold, "must be 1"))
		}
	}
	return append(allErrs, validateEphemeralContainers(spec, volumes, names, fldPath.Child("ephemeralContainers"))...)
}

// ephemeralContainerFields are the fields of an ephemeral container that
// may be set, as Kubernetes lists them: none that the pod could come to
// rely on (ports, probes, lifecycle, resources, restart policies). A field
// added to the API is refused until it is listed here.
var ephemeralContainerFields = sets.New(
	"Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env", "VolumeMounts", "VolumeDevices",
	"TerminationMessagePath", "TerminationMessagePolicy", "ImagePullPolicy", "SecurityContext",
	"Stdin", "StdinOnce", "TTY",
)

// validateEphemeralContainers checks the ephemeral containers as any
// container, with names unique across all the pod's containers (names
// holds the init and app containers'), a targetContainerName that names
// an init or app container, only the allowed fields and no subPath.
func validateEphemeralContainers(spec *corev1.PodSpec, volumes, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	targets := names.Clone()
	for i := range spec.EphemeralContainers {
		ec := &spec.EphemeralContainers[i]
		idxPath := fldPath.Index(i)
		allErrs = append(allErrs, validateContainer((*corev1.Container)(&ec.EphemeralContainerCommon), spec, volumes, names, idxPath)...)
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("targetContainerName"), ec.TargetContainerName))
		}
		v := reflect.ValueOf(ec.EphemeralContainerCommon)
		for j := 0; j < v.NumField(); j++ {
			f := v.Type().Field(j)
			if ephemeralContainerFields.Has(f.Name) || v.Field(j).IsZero() {
				continue
			}
			name := strings.ToLower(f.Name[:1]) + f.Name[1:]
			allErrs = append(allErrs, field.Forbidden(idxPath.Child(name), "cannot be set for an Ephemeral Container"))
		}
		for j, vm := range ec.VolumeMounts {
			if vm.SubPath != "" {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if vm.SubPathExpr != "" {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("volumeMounts").Index(j).Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return allErrs
}

// validateContainer checks one container; names collects the container
// names seen so far in the pod.
func validateContainer(c *corev1.Container, spec *corev1.PodSpec, volumes, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	namePath := fldPath.Child("name")
	if c.Name == "" {
		allErrs = append(allErrs, field.Required(namePath, ""))
	} else {
		allErrs = append(allErrs, DNS1123Label(c.Name, namePath)...)
		if names.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(namePath, c.Name))
		}
		names.Insert(c.Name)
	}
	if c.Image == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("image"), ""))
	} else if strings.TrimSpace(c.Image) != c.Image {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	allErrs = append(allErrs, Enum(c.ImagePullPolicy, supportedPullPolicies, fldPath.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, OptionalEnum(c.TerminationMessagePolicy, supportedTermMsgPolicies, fldPath.Child("terminationMessagePolicy"))...)
	allErrs = append(allErrs, validateContainerPorts(c.Ports, spec.HostNetwork, fldPath.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, fldPath.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(c.EnvFrom, fldPath.Child("envFrom"))...)
	allErrs = append(allErrs, validateVolumeMounts(c.VolumeMounts, volumes, fldPath.Child("volumeMounts"))...)
	allErrs = append(allErrs, validateResourceRequirements(&c.Resources, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateProbe(c.LivenessProbe, fldPath.Child("livenessProbe"))...)
	allErrs = append(allErrs, validateProbe(c.ReadinessProbe, fldPath.Child("readinessProbe"))...)
	allErrs = append(allErrs, validateProbe(c.StartupProbe, fldPath.Child("startupProbe"))...)
	if c.Lifecycle != nil {
		allErrs = append(allErrs, validateLifecycleHandler(c.Lifecycle.PostStart, fldPath.Child("lifecycle", "postStart"))...)
		allErrs = append(allErrs, validateLifecycleHandler(c.Lifecycle.PreStop, fldPath.Child("lifecycle", "preStop"))...)
	}
	return allErrs
}

func validateContainerPorts(ports []corev1.ContainerPort, hostNetwork bool, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	names := sets.New[string]()
	for i, p := range ports {
		idxPath := fldPath.Index(i)
		if p.Name != "" {
			allErrs = append(allErrs, PortName(p.Name, idxPath.Child("name"))...)
			if names.Has(p.Name) {
				allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		if p.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			allErrs = append(allErrs, PortNumber(p.ContainerPort, idxPath.Child("containerPort"))...)
		}
		if p.HostPort != 0 {
			allErrs = append(allErrs, PortNumber(p.HostPort, idxPath.Child("hostPort"))...)
			if hostNetwork && p.HostPort != p.ContainerPort {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("hostPort"), p.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
		allErrs = append(allErrs, Protocol(p.Protocol, idxPath.Child("protocol"))...)
	}
	return allErrs
}

func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, ev := range env {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsRelaxedEnvVarName(ev.Name) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), ev.Name, msg))
			}
		}
		if ev.ValueFrom == nil {
			continue
		}
		vfPath := idxPath.Child("valueFrom")
		if ev.Value != "" {
			allErrs = append(allErrs, field.Invalid(vfPath, "", "may not be specified when `value` is not empty"))
		}
		vf := ev.ValueFrom
		switch n := CountSetPointers(vf); {
		case n == 0:
			allErrs = append(allErrs, field.Invalid(vfPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
		case n > 1:
			allErrs = append(allErrs, field.Invalid(vfPath, "", "may not have more than one field specified at a time"))
		}
		if vf.FieldRef != nil {
			fp := vfPath.Child("fieldRef", "fieldPath")
			switch p := vf.FieldRef.FieldPath; {
			case p == "":
				allErrs = append(allErrs, field.Required(fp, ""))
			case validEnvFieldPaths.Has(p), isLabelOrAnnotationPath(p):
			default:
				allErrs = append(allErrs, field.NotSupported(fp, p, sets.List(validEnvFieldPaths)))
			}
		}
		if vf.ResourceFieldRef != nil && vf.ResourceFieldRef.Resource == "" {
			allErrs = append(allErrs, field.Required(vfPath.Child("resourceFieldRef", "resource"), ""))
		}
		if r := vf.ConfigMapKeyRef; r != nil {
			allErrs = append(allErrs, validateKeyRef(r.Name, r.Key, vfPath.Child("configMapKeyRef"))...)
		}
		if r := vf.SecretKeyRef; r != nil {
			allErrs = append(allErrs, validateKeyRef(r.Name, r.Key, vfPath.Child("secretKeyRef"))...)
		}
	}
	return allErrs
}

// isLabelOrAnnotationPath accepts metadata.labels['key'] style field paths
// (and the whole maps, which the downward API allows for volumes).
func isLabelOrAnnotationPath(p string) bool {
	for _, prefix := range []string{"metadata.labels", "metadata.annotations"} {
		if strings.HasPrefix(p, prefix+"['") && strings.HasSuffix(p, "']") {
			return true
		}
	}
	return false
}

func validateKeyRef(name, key string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	if key == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range utilvalidation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("key"), key, msg))
		}
	}
	return allErrs
}

func validateEnvFrom(envFrom []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, ef := range envFrom {
		idxPath := fldPath.Index(i)
		switch {
		case ef.ConfigMapRef == nil && ef.SecretRef == nil:
			allErrs = append(allErrs, field.Invalid(idxPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case ef.ConfigMapRef != nil && ef.SecretRef != nil:
			allErrs = append(allErrs, field.Invalid(idxPath, "", "may not have more than one field specified at a time"))
		case ef.ConfigMapRef != nil && ef.ConfigMapRef.Name == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("configMapRef", "name"), ""))
		case ef.SecretRef != nil && ef.SecretRef.Name == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("secretRef", "name"), ""))
		}
	}
	return allErrs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	paths := sets.New[string]()
	for i, m := range mounts {
		idxPath := fldPath.Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else if !volumes.Has(m.Name) {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("mountPath"), ""))
		} else if paths.Has(m.MountPath) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if m.SubPath != "" {
			allErrs = append(allErrs, validateLocalRelativePath(m.SubPath, idxPath.Child("subPath"))...)
		}
	}
	return allErrs
}

// validateLocalRelativePath rejects absolute paths and ".." elements.
func validateLocalRelativePath(p string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if path.IsAbs(p) {
		allErrs = append(allErrs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	for _, item := range strings.Split(p, "/") {
		if item == ".." {
			allErrs = append(allErrs, field.Invalid(fldPath, p, "must not contain '..'"))
			break
		}
	}
	return allErrs
}

// validateVolumes checks pod volumes and returns the set of their names.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	allErrs := field.ErrorList{}
	names := sets.New[string]()
	for i := range volumes {
		v := &volumes[i]
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		if v.Name == "" {
			allErrs = append(allErrs, field.Required(namePath, ""))
		} else {
			allErrs = append(allErrs, DNS1123Label(v.Name, namePath)...)
			if names.Has(v.Name) {
				allErrs = append(allErrs, field.Duplicate(namePath, v.Name))
			}
			names.Insert(v.Name)
		}
		allErrs = append(allErrs, validateVolumeSource(&v.VolumeSource, idxPath)...)
	}
	return names, allErrs
}

func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	switch n := CountSetPointers(src); {
	case n == 0:
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	case n > 1:
		allErrs = append(allErrs, field.Forbidden(fldPath, "may not specify more than 1 volume type"))
	}
	if s := src.HostPath; s != nil {
		allErrs = append(allErrs, HostPath(s, fldPath.Child("hostPath"))...)
	}
	if s := src.EmptyDir; s != nil && s.SizeLimit != nil && s.SizeLimit.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("emptyDir", "sizeLimit"), s.SizeLimit.String(), IsNegativeErrorMsg))
	}
	if s := src.ConfigMap; s != nil {
		p := fldPath.Child("configMap")
		if s.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		}
		allErrs = append(allErrs, validateVolumeMode(s.DefaultMode, p.Child("defaultMode"))...)
		allErrs = append(allErrs, validateKeyToPaths(s.Items, p.Child("items"))...)
	}
	if s := src.Secret; s != nil {
		p := fldPath.Child("secret")
		if s.SecretName == "" {
			allErrs = append(allErrs, field.Required(p.Child("secretName"), ""))
		}
		allErrs = append(allErrs, validateVolumeMode(s.DefaultMode, p.Child("defaultMode"))...)
		allErrs = append(allErrs, validateKeyToPaths(s.Items, p.Child("items"))...)
	}
	if s := src.DownwardAPI; s != nil {
		allErrs = append(allErrs, validateVolumeMode(s.DefaultMode, fldPath.Child("downwardAPI", "defaultMode"))...)
	}
	if s := src.Projected; s != nil {
		allErrs = append(allErrs, validateVolumeMode(s.DefaultMode, fldPath.Child("projected", "defaultMode"))...)
		allErrs = append(allErrs, userID(s.DefaultUser, fldPath.Child("projected", "defaultUser"))...)
		allErrs = append(allErrs, projectedSources(s, fldPath.Child("projected"))...)
	}
	if s := src.PersistentVolumeClaim; s != nil && s.ClaimName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
	}
	if s := src.NFS; s != nil {
		allErrs = append(allErrs, NFS(s, fldPath.Child("nfs"))...)
	}
	return allErrs
}

func HostPath(s *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if s.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	} else {
		for _, item := range strings.Split(s.Path, "/") {
			if item == ".." {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), s.Path, "must not contain '..'"))
				break
			}
		}
	}
	if s.Type != nil && *s.Type != corev1.HostPathUnset {
		allErrs = append(allErrs, Enum(*s.Type, supportedHostPathTypes, fldPath.Child("type"))...)
	}
	return allErrs
}

func NFS(s *corev1.NFSVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if s.Server == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("server"), ""))
	}
	if s.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	} else if !path.IsAbs(s.Path) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), s.Path, "must be an absolute path"))
	}
	return allErrs
}

func validateVolumeMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > maxVolumeDefaultMode || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

func validateKeyToPaths(items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, kp := range items {
		idxPath := fldPath.Index(i)
		if kp.Key == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("key"), ""))
		}
		if kp.Path == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("path"), ""))
		} else {
			allErrs = append(allErrs, validateLocalRelativePath(kp.Path, idxPath.Child("path"))...)
		}
		allErrs = append(allErrs, validateVolumeMode(kp.Mode, idxPath.Child("mode"))...)
	}
	return allErrs
}

func validateProbe(p *corev1.Probe, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	allErrs := validateHandler(CountSetPointers(&p.ProbeHandler), fldPath)
	allErrs = append(allErrs, Nonnegative(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"timeoutSeconds", p.TimeoutSeconds},
		{"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold},
		{"failureThreshold", p.FailureThreshold},
	} {
		if f.value < 1 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.name), f.value, "must be greater than or equal to 1"))
		}
	}
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	allErrs = append(allErrs, validateHTTPGet(p.HTTPGet, fldPath.Child("httpGet"))...)
	if p.TCPSocket != nil {
		allErrs = append(allErrs, PortNumOrName(p.TCPSocket.Port, fldPath.Child("tcpSocket", "port"))...)
	}
	if p.GRPC != nil {
		allErrs = append(allErrs, PortNumber(p.GRPC.Port, fldPath.Child("grpc", "port"))...)
	}
	if p.Exec != nil && len(p.Exec.Command) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("exec", "command"), ""))
	}
	return allErrs
}

func validateLifecycleHandler(h *corev1.LifecycleHandler, fldPath *field.Path) field.ErrorList {
	if h == nil {
		return nil
	}
	allErrs := validateHandler(CountSetPointers(h), fldPath)
	allErrs = append(allErrs, validateHTTPGet(h.HTTPGet, fldPath.Child("httpGet"))...)
	if h.TCPSocket != nil {
		allErrs = append(allErrs, PortNumOrName(h.TCPSocket.Port, fldPath.Child("tcpSocket", "port"))...)
	}
	if h.Exec != nil && len(h.Exec.Command) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("exec", "command"), ""))
	}
	if h.Sleep != nil && h.Sleep.Seconds < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("sleep", "seconds"), h.Sleep.Seconds, IsNegativeErrorMsg))
	}
	return allErrs
}

// validateHandler checks that exactly one handler type is set.
func validateHandler(set int, fldPath *field.Path) field.ErrorList {
	switch {
	case set == 0:
		return field.ErrorList{field.Required(fldPath, "must specify a handler type")}
	case set > 1:
		return field.ErrorList{field.Forbidden(fldPath, "may not specify more than 1 handler type")}
	}
	return nil
}

func validateHTTPGet(a *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	allErrs := field.ErrorList{}
	if a.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, PortNumOrName(a.Port, fldPath.Child("port"))...)
	allErrs = append(allErrs, OptionalEnum(a.Scheme, supportedURISchemes, fldPath.Child("scheme"))...)
	for i, h := range a.HTTPHeaders {
		for _, msg := range utilvalidation.IsHTTPHeaderName(h.Name) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("httpHeaders").Index(i).Child("name"), h.Name, msg))
		}
	}
	return allErrs
}

func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, t := range tolerations {
		idxPath := fldPath.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, QualifiedName(t.Key, idxPath.Child("key"))...)
		} else if t.Operator != corev1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("value"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("operator"), t.Operator, supportedTolerationOps))
		}
		allErrs = append(allErrs, OptionalEnum(t.Effect, supportedTaintEffects, idxPath.Child("effect"))...)
	}
	return allErrs
}
