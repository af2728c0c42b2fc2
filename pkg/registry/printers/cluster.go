package printers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storageutil "k8s.io/kubectl/pkg/util/storage"
)

// HorizontalPodAutoscalers (autoscaling/v2).

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
		orDefault(TruncatedList(ports, 3, ","), Unset),
		orDefault(TruncatedList(addrs, 3, ","), Unset),
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
	class := None
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
