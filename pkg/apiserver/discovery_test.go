package apiserver

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/kinds"
)

// TestDiscoveryGroupOrder: /apis lists Kubernetes' groups first, in
// Kubernetes' order (metrics.k8s.io included), and minik8s.io after them
// all, the same on every start.
func TestDiscoveryGroupOrder(t *testing.T) {
	scheme, err := registry.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"apps", "events.k8s.io", "autoscaling", "batch", "networking.k8s.io", "storage.k8s.io", "coordination.k8s.io",
		"discovery.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io", "certificates.k8s.io", "flowcontrol.apiserver.k8s.io", "metrics.k8s.io", "node.k8s.io", "policy", "rbac.authorization.k8s.io", "resource.k8s.io",
		"scheduling.k8s.io", "storagemigration.k8s.io", "minik8s.io"}
	for range 20 { // map order differs between runs: the result may not
		table, err := registry.NewTable(scheme, kinds.All())
		if err != nil {
			t.Fatal(err)
		}
		d := newDiscovery(table)
		d.addMetricsAPI()
		var got []string
		for _, g := range d.groups.Groups {
			got = append(got, g.Name)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("groups = %v, want %v", got, want)
		}
	}
}

func TestDiscoveryDNSRecords(t *testing.T) {
	scheme, err := registry.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	table, err := registry.NewTable(scheme, kinds.All())
	if err != nil {
		t.Fatal(err)
	}
	d := newDiscovery(table)
	g := d.byGroup["minik8s.io"]
	if g == nil || g.PreferredVersion.GroupVersion != "minik8s.io/v1" {
		t.Fatalf("group minik8s.io: %+v", g)
	}
	var names []string
	for gv, list := range d.resources {
		if gv.Group != "minik8s.io" {
			continue
		}
		for _, r := range list.APIResources {
			names = append(names, r.Name)
			if r.Name == "dnsrecords" && (r.Kind != "DNSRecord" || !r.Namespaced || r.SingularName != "dnsrecord" ||
				!slices.Equal(r.ShortNames, []string{"dnsr"}) || len(r.Categories) != 0) {
				t.Errorf("dnsrecords: %+v", r)
			}
			if r.Name == "functions" && (r.Kind != "Function" || !r.Namespaced || !slices.Equal(r.ShortNames, []string{"fn"})) {
				t.Errorf("functions: %+v", r)
			}
			if r.Name == "workflows" && (r.Kind != "Workflow" || !r.Namespaced || !slices.Equal(r.ShortNames, []string{"wf"}) || !slices.Equal(r.Categories, []string{"all"})) {
				t.Errorf("workflows: %+v", r)
			}
			if r.Name == "workflowruns" && (r.Kind != "WorkflowRun" || !r.Namespaced || !slices.Equal(r.ShortNames, []string{"wfr"}) || len(r.Categories) != 0) {
				t.Errorf("workflowruns: %+v", r)
			}
			if r.Name == "triggers" && (r.Kind != "Trigger" || !r.Namespaced || !slices.Equal(r.ShortNames, []string{"trg"}) || len(r.Categories) != 0) {
				t.Errorf("triggers: %+v", r)
			}
		}
	}
	if !slices.Equal(names, []string{"dnsrecords", "dnsrecords/status", "functions", "functions/status",
		"workflows", "workflows/status", "workflowruns", "workflowruns/status", "triggers", "triggers/status"}) {
		t.Errorf("minik8s.io/v1 resources = %v", names)
	}
}
