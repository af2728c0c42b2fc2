package defaults

import (
	"strings"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// defaultDNSRecord: a path written without its leading "/" ("path1") gets
// one. An empty path stays empty, for validation to refuse.
func defaultDNSRecord(r *minik8sv1.DNSRecord) {
	for i := range r.Spec.Paths {
		p := &r.Spec.Paths[i]
		if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
			p.Path = "/" + p.Path
		}
	}
}
