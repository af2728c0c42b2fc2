package registry

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// Minik8s is the table of minik8s' own kinds (group minik8s.io).
func Minik8s() []*Resource {
	return []*Resource{
		{GroupVersionResource: minik8sv1.SchemeGroupVersion.WithResource("dnsrecords"), Kind: "DNSRecord", Namespaced: true,
			ShortNames: []string{"dnsr"}, Status: true, FieldLabels: dnsRecordFields},
	}
}

// All is every resource minik8s serves: Kubernetes' kinds, then its own.
func All() []*Resource {
	return append(Builtin(), Minik8s()...)
}

// dnsRecordFields lets a client find the records of a host
// (--field-selector spec.host=minik8s.com).
func dnsRecordFields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.host": obj.(*minik8sv1.DNSRecord).Spec.Host}
}
