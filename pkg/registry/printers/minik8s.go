package printers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// DNSRecords (minik8s.io/v1): the host, where each path goes, and the
// gateway address the host resolves to.

// maxDNSRecordPaths is how many paths the Paths cell spells out.
const maxDNSRecordPaths = 3

var dnsRecordPrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Host", "string", minik8sv1.DNSRecordSpec{}.SwaggerDoc()["host"]),
		column("Paths", "string", "Each path and the Service port it goes to, as path->service:port."),
		column("Address", "string", minik8sv1.DNSRecordStatus{}.SwaggerDoc()["address"]),
		ageColumn(),
	},
	func(r *minik8sv1.DNSRecord, now time.Time) []interface{} {
		routes := make([]string, len(r.Spec.Paths))
		for i, p := range r.Spec.Paths {
			routes[i] = p.Path + "->" + p.Service + ":" + p.Port.String()
		}
		return []interface{}{r.Name, r.Spec.Host, truncatedList(routes, maxDNSRecordPaths, ","), r.Status.Address, age(r.CreationTimestamp, now)}
	},
)
