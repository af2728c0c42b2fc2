package apiserver

import (
	"net/http"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/minik8s/minik8s/pkg/registry"
)

// KubernetesVersion is the Kubernetes API level minik8s speaks: the
// version of the client libraries it is built and tested with.
const KubernetesVersion = "v1.37.2"

var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// discovery holds the discovery documents, built once from the table.
type discovery struct {
	groups    *metav1.APIGroupList
	core      *metav1.APIVersions
	resources map[schema.GroupVersion]*metav1.APIResourceList
	byGroup   map[string]*metav1.APIGroup
	// aggregated is all of it in two documents (discovery_aggregated.go).
	aggregated aggregatedDiscovery
}

func newDiscovery(table *registry.Table) *discovery {
	d := &discovery{
		groups:    &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}},
		core:      &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}},
		resources: map[schema.GroupVersion]*metav1.APIResourceList{},
		byGroup:   map[string]*metav1.APIGroup{},
	}
	for _, gv := range table.GroupVersions() {
		d.resources[gv] = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
		if gv.Group == "" {
			continue
		}
		g, ok := d.byGroup[gv.Group]
		if !ok {
			g = &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: gv.Group}
			d.byGroup[gv.Group] = g
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		g.Versions = append(g.Versions, v)
		if g.PreferredVersion.Version == "" {
			g.PreferredVersion = v
		}
	}
	for _, r := range table.Resources() {
		list := d.resources[r.GroupVersion()]
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.Resource, SingularName: r.Singular, Namespaced: r.Namespaced, Kind: r.Kind,
			Verbs: allVerbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
		sub := func(name, kind, group, version string, verbs metav1.Verbs) {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: r.Resource + "/" + name, Namespaced: r.Namespaced, Kind: kind, Group: group, Version: version, Verbs: verbs,
			})
		}
		if r.Status {
			sub("status", r.Kind, "", "", metav1.Verbs{"get", "patch", "update"})
		}
		if r.Approval != nil {
			sub("approval", r.Kind, "", "", metav1.Verbs{"get", "patch", "update"})
		}
		for _, name := range r.SpecPartNames() {
			sub(name, r.Kind, "", "", metav1.Verbs{"get", "patch", "update"})
		}
		if r.Scale != nil {
			sub("scale", "Scale", "autoscaling", "v1", metav1.Verbs{"get", "patch", "update"})
		}
		for _, a := range r.Actions {
			sub(a.Name, a.Kind, a.Body.Group, a.Body.Version, metav1.Verbs{"create"})
		}
		if r.Finalize {
			sub("finalize", r.Kind, "", "", metav1.Verbs{"update"})
		}
		if isServiceAccounts(r) { // serviceaccounts.go
			sub("token", "TokenRequest", "authentication.k8s.io", "v1", metav1.Verbs{"create"})
		}
		if isPods(r) { // served by the kubelets (proxy.go)
			sub("attach", "PodAttachOptions", "", "", metav1.Verbs{"create", "get"})
			sub("exec", "PodExecOptions", "", "", metav1.Verbs{"create", "get"})
			sub("log", "Pod", "", "", metav1.Verbs{"get"})
			sub("portforward", "PodPortForwardOptions", "", "", metav1.Verbs{"create", "get"})
		}
		// Proxies to a pod, a Service's endpoints or a node's kubelet
		// (serviceproxy.go, nodeproxy.go).
		if isPods(r) || isServices(r) || isNodes(r) {
			sub("proxy", proxyKind(r), "", "", metav1.Verbs{"create", "delete", "get", "patch", "update"})
		}
	}
	d.orderGroups()
	return d
}

// orderGroups rebuilds the /apis list from byGroup: Kubernetes lists its
// own groups first; ours (minik8s.io) after.
func (d *discovery) orderGroups() {
	names := make([]string, 0, len(d.byGroup))
	for name := range d.byGroup {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := groupRank(names[i]), groupRank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	d.groups.Groups = d.groups.Groups[:0]
	for _, name := range names {
		d.groups.Groups = append(d.groups.Groups, *d.byGroup[name])
	}
}

var groupOrder = []string{"apps", "events.k8s.io", "autoscaling", "batch", "networking.k8s.io", "storage.k8s.io", "coordination.k8s.io", "discovery.k8s.io"}

// groupRank orders the groups of /apis: those of groupOrder as listed,
// then other Kubernetes groups (certificates.k8s.io, ...), then any other
// (minik8s.io). Groups of one rank go by name.
func groupRank(g string) int {
	for i, name := range groupOrder {
		if name == g {
			return i
		}
	}
	if !strings.Contains(g, ".") || strings.HasSuffix(g, ".k8s.io") {
		return len(groupOrder)
	}
	return len(groupOrder) + 1
}

// serveDiscovery answers /api, /api/v1, /apis, /apis/{g} and /apis/{g}/{v}.
// Discovery documents are read-only: another method than GET is a 405.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	parts := splitPath(r.URL.Path)
	doc := s.discovery.Load().document(parts)
	if doc == nil {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, strings.ToLower(r.Method), schema.GroupResource{}, "", "", 0, false))
		return true
	}
	if s.serveAggregated(w, r, parts) {
		return true
	}
	writeJSON(w, http.StatusOK, doc)
	return true
}

// document is the discovery document at a path's parts, nil for none.
func (d *discovery) document(parts []string) any {
	switch {
	case len(parts) == 1 && parts[0] == "api":
		return d.core
	case len(parts) == 2 && parts[0] == "api":
		if list, ok := d.resources[schema.GroupVersion{Version: parts[1]}]; ok {
			return list
		}
	case len(parts) == 1 && parts[0] == "apis":
		return d.groups
	case len(parts) == 2 && parts[0] == "apis":
		if g, ok := d.byGroup[parts[1]]; ok {
			return g
		}
	case len(parts) == 3 && parts[0] == "apis":
		if list, ok := d.resources[schema.GroupVersion{Group: parts[1], Version: parts[2]}]; ok {
			return list
		}
	}
	return nil
}

func versionInfo() version.Info {
	v := strings.TrimPrefix(KubernetesVersion, "v")
	parts := strings.SplitN(v, ".", 3)
	return version.Info{
		Major: parts[0], Minor: parts[1], GitVersion: KubernetesVersion + "+minik8s",
		GitTreeState: "clean", GoVersion: goVersion(), Compiler: "gc", Platform: platform(),
	}
}

// proxyKind is the options kind Kubernetes names for a proxy subresource.
func proxyKind(res *registry.Resource) string {
	switch {
	case isPods(res):
		return "PodProxyOptions"
	case isServices(res):
		return "ServiceProxyOptions"
	}
	return "NodeProxyOptions"
}

// newDiscovery builds the discovery documents of what the server serves
// now: its table, the review APIs and metrics.k8s.io.
func (s *Server) newDiscovery() *discovery {
	d := newDiscovery(s.table)
	d.addReviewAPIs()
	if servesMetricsAPI(s.table) {
		d.addMetricsAPI()
	}
	s.aggregator.addAggregated(d)
	d.aggregated = d.aggregate()
	return d
}

// refreshDiscovery rebuilds the discovery documents after the table changed.
func (s *Server) refreshDiscovery() {
	s.discoveryMu.Lock()
	defer s.discoveryMu.Unlock()
	s.discovery.Store(s.newDiscovery())
}
