package printers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storageutil "k8s.io/kubectl/pkg/util/storage"
)

// HorizontalPodAutoscalers (autoscaling/v2).

var HorizontalPodAutoscaler = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Reference", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]),
		Column("Targets", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]),
		Column("MinPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]),
		Column("MaxPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]),
		Column("Replicas", "string", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
		AgeColumn(),
	},
	hpaCells,
)

func hpaCells(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) []interface{} {
	minPods := unset
	if hpa.Spec.MinReplicas != nil {
		minPods = strconv.Itoa(int(*hpa.Spec.MinReplicas))
	}
	ref := hpa.Spec.ScaleTargetRef
	return []interface{}{
		hpa.Name,
		ref.Kind + "/" + ref.Name,
		hpaTargets(hpa.Spec.Metrics, hpa.Status.CurrentMetrics),
		minPods,
		int64(hpa.Spec.MaxReplicas),
		int64(hpa.Status.CurrentReplicas),
		Age(hpa.CreationTimestamp, now),
	}
}

// hpaTargets renders "current/target" per metric, e.g. "cpu: 40%/80%"; the
// status at the same index is the metric's current value.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return none
	}
	list := make([]string, len(specs))
	for i, spec := range specs {
		var status autoscalingv2.MetricStatus
		if i < len(statuses) {
			status = statuses[i]
		}
		list[i] = hpaMetric(spec, status)
	}
	return TruncatedList(list, 2, ", ")
}

func hpaMetric(spec autoscalingv2.MetricSpec, status autoscalingv2.MetricStatus) string {
	switch {
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		var current *autoscalingv2.MetricValueStatus
		if status.External != nil {
			current = &status.External.Current
		}
		return valueTarget(spec.External.Target, current)
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		var current *autoscalingv2.MetricValueStatus
		if status.Object != nil {
			current = &status.Object.Current
		}
		return valueTarget(spec.Object.Target, current)
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		current := unknown
		if status.Pods != nil {
			current = quantity(status.Pods.Current.AverageValue)
		}
		return current + "/" + quantity(spec.Pods.Target.AverageValue)
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		var current *autoscalingv2.MetricValueStatus
		if status.Resource != nil {
			current = &status.Resource.Current
		}
		return spec.Resource.Name.String() + ": " + resourceTarget(spec.Resource.Target, current)
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		var current *autoscalingv2.MetricValueStatus
		if status.ContainerResource != nil {
			current = &status.ContainerResource.Current
		}
		return spec.ContainerResource.Name.String() + ": " + resourceTarget(spec.ContainerResource.Target, current)
	default:
		return "<unknown type>"
	}
}

// valueTarget renders an object or external metric: by average value with an
// " (avg)" suffix, else by value.
func valueTarget(target autoscalingv2.MetricTarget, current *autoscalingv2.MetricValueStatus) string {
	if target.AverageValue != nil {
		cur := unknown
		if current != nil && current.AverageValue != nil {
			cur = current.AverageValue.String()
		}
		return cur + "/" + target.AverageValue.String() + " (avg)"
	}
	cur := unknown
	if current != nil {
		cur = quantity(current.Value)
	}
	return cur + "/" + quantity(target.Value)
}

// resourceTarget renders a resource metric by average value, else by
// utilization percentage ("<auto>" without a target).
func resourceTarget(target autoscalingv2.MetricTarget, current *autoscalingv2.MetricValueStatus) string {
	if target.AverageValue != nil {
		cur := unknown
		if current != nil {
			cur = quantity(current.AverageValue)
		}
		return cur + "/" + target.AverageValue.String()
	}
	cur, want := unknown, "<auto>"
	if current != nil && current.AverageUtilization != nil {
		cur = fmt.Sprintf("%d%%", *current.AverageUtilization)
	}
	if target.AverageUtilization != nil {
		want = fmt.Sprintf("%d%%", *target.AverageUtilization)
	}
	return cur + "/" + want
}

func quantity(q *resource.Quantity) string {
	if q == nil {
		return unknown
	}
	return q.String()
}

// EndpointSlices.

var EndpointSlice = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		Column("AddressType", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]),
		Column("Ports", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]),
		Column("Endpoints", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
		AgeColumn(),
	},
	endpointSliceCells,
)

func endpointSliceCells(es *discoveryv1.EndpointSlice, now time.Time) []interface{} {
	var ports, addrs []string
	for _, p := range es.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*")
		}
	}
	for _, ep := range es.Endpoints {
		addrs = append(addrs, ep.Addresses...)
	}
	return []interface{}{
		es.Name,
		string(es.AddressType),
		orDefault(TruncatedList(ports, 3, ","), unset),
		orDefault(TruncatedList(addrs, 3, ","), unset),
		Age(es.CreationTimestamp, now),
	}
}

// Leases.

var Lease = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
		AgeColumn(),
	},
	func(l *coordinationv1.Lease, now time.Time) []interface{} {
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []interface{}{l.Name, holder, Age(l.CreationTimestamp, now)}
	},
)

// StorageClasses.

var StorageClass = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Provisioner", "string", storagev1.StorageClass{}.SwaggerDoc()["provisioner"]),
		Column("ReclaimPolicy", "string", storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"]),
		Column("VolumeBindingMode", "string", storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"]),
		Column("AllowVolumeExpansion", "string", storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"]),
		AgeColumn(),
	},
	storageClassCells,
)

func storageClassCells(sc *storagev1.StorageClass, now time.Time) []interface{} {
	name := sc.Name
	if storageutil.IsDefaultAnnotationText(sc.ObjectMeta) == "Yes" {
		name += " (default)"
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	binding := storagev1.VolumeBindingImmediate
	if sc.VolumeBindingMode != nil {
		binding = *sc.VolumeBindingMode
	}
	expansion := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	return []interface{}{name, sc.Provisioner, string(reclaim), string(binding), expansion, Age(sc.CreationTimestamp, now)}
}

// Ingresses.

var Ingress = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
		Column("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
		Column("Address", "string", "Address is a list containing ingress points for the load-balancer"),
		Column("Ports", "string", "Ports of TLS configurations that open"),
		AgeColumn(),
	},
	ingressCells,
)

func ingressCells(ing *networkingv1.Ingress, now time.Time) []interface{} {
	class := none
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	var addrs []string
	for _, in := range ing.Status.LoadBalancer.Ingress {
		addrs = append(addrs, orDefault(in.IP, in.Hostname))
	}
	ports := "80"
	if len(ing.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	return []interface{}{
		ing.Name,
		class,
		ingressHosts(ing.Spec.Rules),
		strings.Join(sortedUnique(addrs), ","),
		ports,
		Age(ing.CreationTimestamp, now),
	}
}

// ingressHosts lists the first three rule hosts ("*" when no rule names one);
// rules past the third host are summarized as "+ N more...", N counting from
// the third rule as kubectl does.
func ingressHosts(rules []networkingv1.IngressRule) string {
	const max = 3
	var hosts []string
	more := false
	for _, r := range rules {
		if len(hosts) == max {
			more = true
			break
		}
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	s := strings.Join(hosts, ",")
	if more {
		s += fmt.Sprintf(" + %d more...", len(rules)-max)
	}
	return s
}
