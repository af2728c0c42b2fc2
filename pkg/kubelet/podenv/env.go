package podenv

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Context is what environment values may refer to.
type Context struct {
	Pod           *corev1.Pod
	PodIP, HostIP string
	// Allocatable defaults resource limits a container does not set.
	Allocatable corev1.ResourceList
	Objects     *Objects
	// ServiceEnv are the Services' variables (FOO_SERVICE_HOST...).
	ServiceEnv map[string]string
}

// ContainerEnv resolves a container's environment as Kubernetes does:
// envFrom first, then env in order (valueFrom resolved, $(VAR)
// expanded against the variables before it and the services'), then
// the services' variables that nothing overrode. It returns the
// variables in that order, as NAME=value.
func ContainerEnv(c *corev1.Container, ec *Context) ([]string, map[string]string, error) {
	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := ec.Objects.ConfigMap(from.ConfigMapRef.Name)
			if err != nil {
				if IsNotFound(err) && Optional(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, nil, err
			}
			for _, k := range sortedKeys(cm.Data) {
				set(from.Prefix+k, cm.Data[k])
			}
		case from.SecretRef != nil:
			s, err := ec.Objects.Secret(from.SecretRef.Name)
			if err != nil {
				if IsNotFound(err) && Optional(from.SecretRef.Optional) {
					continue
				}
				return nil, nil, err
			}
			for _, k := range sortedKeys(s.Data) {
				set(from.Prefix+k, string(s.Data[k]))
			}
		}
	}
	mapping := MappingFor(env, ec.ServiceEnv)
	for _, e := range c.Env {
		val := e.Value
		switch {
		case val != "":
			val = Expand(val, mapping)
		case e.ValueFrom != nil:
			var skip bool
			var err error
			val, skip, err = ec.valueFrom(e.ValueFrom, c)
			if err != nil {
				return nil, nil, err
			}
			if skip {
				continue
			}
		}
		set(e.Name, val)
	}
	out := make([]string, 0, len(order)+len(ec.ServiceEnv))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	all := make(map[string]string, len(env)+len(ec.ServiceEnv))
	for _, k := range sortedKeys(ec.ServiceEnv) {
		all[k] = ec.ServiceEnv[k]
		if _, ok := env[k]; !ok {
			out = append(out, k+"="+ec.ServiceEnv[k])
		}
	}
	for k, v := range env {
		all[k] = v
	}
	return out, all, nil
}

// Optional is an optional reference's Optional field: false unless set.
func Optional(b *bool) bool { return b != nil && *b }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// valueFrom resolves an env var's source; skip is true for an optional
// source that is missing.
func (ec *Context) valueFrom(src *corev1.EnvVarSource, c *corev1.Container) (string, bool, error) {
	pod := ec.Pod
	switch {
	case src.FieldRef != nil:
		v, err := FieldValue(src.FieldRef.FieldPath, pod, ec.PodIP, ec.HostIP)
		return v, false, err
	case src.ResourceFieldRef != nil:
		v, err := ResourceValue(src.ResourceFieldRef, pod, c, ec.Allocatable)
		return v, false, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := ec.Objects.ConfigMap(ref.Name)
		if err != nil {
			if IsNotFound(err) && Optional(ref.Optional) {
				return "", true, nil
			}
			return "", false, err
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if Optional(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return v, false, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := ec.Objects.Secret(ref.Name)
		if err != nil {
			if IsNotFound(err) && Optional(ref.Optional) {
				return "", true, nil
			}
			return "", false, err
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if Optional(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), false, nil
	}
	return "", false, fmt.Errorf("unsupported valueFrom source")
}

// FieldValue is a pod field for env's fieldRef: metadata and the fields
// only the kubelet knows (node name, addresses).
func FieldValue(path string, pod *corev1.Pod, podIP, hostIP string) (string, error) {
	switch path {
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	}
	return MetadataField(path, pod)
}

// MetadataField is Kubernetes' ExtractFieldPathAsString for a pod.
func MetadataField(path string, pod *corev1.Pod) (string, error) {
	if base, key, ok := splitSubscript(path); ok {
		switch base {
		case "metadata.annotations":
			return pod.Annotations[key], nil
		case "metadata.labels":
			return pod.Labels[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support subscript", path)
	}
	switch path {
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// splitSubscript splits "metadata.labels['key']".
func splitSubscript(path string) (base, key string, ok bool) {
	if !strings.HasSuffix(path, "']") {
		return "", "", false
	}
	parts := strings.SplitN(strings.TrimSuffix(path, "']"), "['", 2)
	if len(parts) != 2 || parts[0] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// formatMap renders labels or annotations as the downward API does:
// key="value" lines, sorted.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range sortedKeys(m) {
		fmt.Fprintf(&b, "%v=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ResourceValue is a resourceFieldRef's value: the container's limit or
// request divided by divisor, rounded up; limits not set are the node's
// allocatable, as in Kubernetes.
func ResourceValue(fs *corev1.ResourceFieldSelector, pod *corev1.Pod, c *corev1.Container, allocatable corev1.ResourceList) (string, error) {
	target := c
	if fs.ContainerName != "" {
		target = FindContainer(pod, fs.ContainerName)
		if target == nil {
			return "", fmt.Errorf("container %q not found in pod %s/%s", fs.ContainerName, pod.Namespace, pod.Name)
		}
	}
	divisor := fs.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(fs.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource: %v", fs.Resource)
	}
	rn := corev1.ResourceName(name)
	switch {
	case rn == corev1.ResourceCPU, rn == corev1.ResourceMemory, rn == corev1.ResourceEphemeralStorage,
		strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
	default:
		return "", fmt.Errorf("unsupported container resource: %v", fs.Resource)
	}
	var q resource.Quantity
	if kind == "limits" {
		var ok bool
		if q, ok = target.Resources.Limits[rn]; !ok {
			q = allocatable[rn]
		}
	} else {
		q = target.Resources.Requests[rn]
	}
	if rn == corev1.ResourceCPU {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// FindContainer is the pod's container, init container or ephemeral
// container of that name.
func FindContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}

// ServiceEnv are the variables of the Services a pod sees: the
// apiserver's "kubernetes" Service always, its namespace's Services
// unless enableServiceLinks is false.
func ServiceEnv(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) (map[string]string, error) {
	if client == nil {
		return nil, nil
	}
	byName := map[string]*corev1.Service{}
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		list, err := client.CoreV1().Services(pod.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list services of namespace %s: %w", pod.Namespace, err)
		}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
	}
	if _, ok := byName["kubernetes"]; !ok || pod.Namespace != metav1.NamespaceDefault {
		svc, err := client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metaGet)
		switch {
		case err == nil:
			byName["kubernetes"] = svc
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get service default/kubernetes: %w", err)
		}
	}
	out := map[string]string{}
	for _, name := range sortedKeys(byName) {
		for _, kv := range serviceVars(byName[name]) {
			out[kv[0]] = kv[1]
		}
	}
	return out, nil
}

// serviceVars are one Service's variables, Docker links included.
func serviceVars(svc *corev1.Service) [][2]string {
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
		return nil
	}
	prefix := strings.ToUpper(strings.ReplaceAll(svc.Name, "-", "_"))
	out := [][2]string{
		{prefix + "_SERVICE_HOST", ip},
		{prefix + "_SERVICE_PORT", strconv.Itoa(int(svc.Spec.Ports[0].Port))},
	}
	for _, sp := range svc.Spec.Ports {
		if sp.Name != "" {
			out = append(out, [2]string{prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(sp.Name, "-", "_")), strconv.Itoa(int(sp.Port))})
		}
	}
	for i, sp := range svc.Spec.Ports {
		proto := strings.ToLower(string(sp.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		hostPort := net.JoinHostPort(ip, strconv.Itoa(int(sp.Port)))
		if i == 0 {
			out = append(out, [2]string{prefix + "_PORT", proto + "://" + hostPort})
		}
		pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, sp.Port, strings.ToUpper(proto))
		out = append(out,
			[2]string{pp, proto + "://" + hostPort},
			[2]string{pp + "_PROTO", proto},
			[2]string{pp + "_PORT", strconv.Itoa(int(sp.Port))},
			[2]string{pp + "_ADDR", ip},
		)
	}
	return out
}

// MappingFor looks a variable up in each map in turn; an unknown one
// stays as written, $(NAME).
func MappingFor(maps ...map[string]string) func(string) string {
	return func(name string) string {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v
			}
		}
		return "$(" + name + ")"
	}
}

// Expand replaces $(NAME) references with mapping(NAME); $$ is a literal
// $, so $$(NAME) stays $(NAME). It is Kubernetes' expansion package.
func Expand(input string, mapping func(string) string) string {
	var b strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		b.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariable(input[cursor+1:])
		if isVar {
			b.WriteString(mapping(read))
		} else {
			b.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return b.String() + input[checkpoint:]
}

// readVariable reads what follows a $: a (NAME) reference, an escaped
// $, or anything else, which stays as it is.
func readVariable(input string) (string, bool, int) {
	switch input[0] {
	case '$':
		return input[:1], false, 1
	case '(':
		for i := 1; i < len(input); i++ {
			if input[i] == ')' {
				return input[1:i], true, i + 1
			}
		}
		return "$(", false, 1
	default:
		return "$" + input[:1], false, 1
	}
}
