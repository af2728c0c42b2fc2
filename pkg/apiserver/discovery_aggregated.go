package apiserver

import (
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Aggregated discovery (apidiscovery.k8s.io): /api and /apis answer, to a
// client that asks for it in Accept, every group, version and resource in
// one document, so that kubectl and client-go learn the API in two
// requests instead of one per group version.

// aggregatedDiscovery are the documents of /api and /apis.
type aggregatedDiscovery struct {
	core, groups *apidiscoveryv2.APIGroupDiscoveryList
}

func (d *discovery) aggregate() aggregatedDiscovery {
	list := func() *apidiscoveryv2.APIGroupDiscoveryList {
		return &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: apidiscoveryv2.SchemeGroupVersion.String()}}
	}
	out := aggregatedDiscovery{core: list(), groups: list()}
	if res, ok := d.resources[schema.GroupVersion{Version: "v1"}]; ok {
		out.core.Items = append(out.core.Items, apidiscoveryv2.APIGroupDiscovery{
			Versions: []apidiscoveryv2.APIVersionDiscovery{versionDiscovery(res, "v1")},
		})
	}
	for _, g := range d.groups.Groups {
		gd := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.Name}}
		// The preferred version first, as Kubernetes lists them.
		versions := append([]metav1.GroupVersionForDiscovery{g.PreferredVersion}, g.Versions...)
		seen := map[string]bool{}
		for _, v := range versions {
			if seen[v.Version] {
				continue
			}
			seen[v.Version] = true
			if res, ok := d.resources[schema.GroupVersion{Group: g.Name, Version: v.Version}]; ok {
				gd.Versions = append(gd.Versions, versionDiscovery(res, v.Version))
			}
		}
		if len(gd.Versions) > 0 { // an aggregated group whose backends have not answered
			out.groups.Items = append(out.groups.Items, gd)
		}
	}
	return out
}

// versionDiscovery is one group version's resources, their subresources
// nested under them.
func versionDiscovery(list *metav1.APIResourceList, version string) apidiscoveryv2.APIVersionDiscovery {
	gv, _ := schema.ParseGroupVersion(list.GroupVersion)
	vd := apidiscoveryv2.APIVersionDiscovery{Version: version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	index := map[string]int{}
	for _, r := range list.APIResources {
		parent, sub, isSub := strings.Cut(r.Name, "/")
		kind := &metav1.GroupVersionKind{Group: orDefault(r.Group, gv.Group), Version: orDefault(r.Version, gv.Version), Kind: r.Kind}
		if isSub {
			i, ok := index[parent]
			if !ok {
				continue
			}
			vd.Resources[i].Subresources = append(vd.Resources[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
				Subresource: sub, ResponseKind: kind, Verbs: r.Verbs,
			})
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		index[r.Name] = len(vd.Resources)
		vd.Resources = append(vd.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Name, ResponseKind: kind, Scope: scope, SingularResource: r.SingularName,
			Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
	}
	return vd
}

// aggregatedVersion is the apidiscovery version the Accept header asks
// for first ("" for none), as Kubernetes negotiates it: v2, or v2beta1
// for older clients.
func aggregatedVersion(accept string) string {
	for _, clause := range strings.Split(accept, ",") {
		params := map[string]string{}
		parts := strings.Split(clause, ";")
		mediaType := strings.TrimSpace(parts[0])
		for _, p := range parts[1:] {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok {
				params[k] = v
			}
		}
		if mediaType != "application/json" || params["as"] != "APIGroupDiscoveryList" || params["g"] != apidiscoveryv2.SchemeGroupVersion.Group {
			continue
		}
		switch params["v"] {
		case "v2", "v2beta1":
			return params["v"]
		}
	}
	return ""
}

// serveAggregated answers /api or /apis with the aggregated document when
// the client asks for it, and says whether it did.
func (s *Server) serveAggregated(w http.ResponseWriter, r *http.Request, parts []string) bool {
	if len(parts) != 1 || (parts[0] != "api" && parts[0] != "apis") {
		return false
	}
	v := aggregatedVersion(r.Header.Get("Accept"))
	if v == "" {
		return false
	}
	d := s.discovery.Load().aggregated
	doc := d.groups
	if parts[0] == "api" {
		doc = d.core
	}
	var body any = doc
	if v == "v2beta1" {
		body = toV2beta1(doc)
	}
	w.Header().Set("Content-Type", "application/json;g=apidiscovery.k8s.io;v="+v+";as=APIGroupDiscoveryList")
	w.Header().Set("Vary", "Accept")
	writeJSON(w, http.StatusOK, body)
	return true
}

// toV2beta1 is doc in apidiscovery.k8s.io/v2beta1, whose fields are v2's.
func toV2beta1(doc *apidiscoveryv2.APIGroupDiscoveryList) *apidiscoveryv2beta1.APIGroupDiscoveryList {
	out := &apidiscoveryv2beta1.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: apidiscoveryv2beta1.SchemeGroupVersion.String()}}
	for _, g := range doc.Items {
		gb := apidiscoveryv2beta1.APIGroupDiscovery{ObjectMeta: g.ObjectMeta}
		for _, v := range g.Versions {
			vb := apidiscoveryv2beta1.APIVersionDiscovery{Version: v.Version, Freshness: apidiscoveryv2beta1.DiscoveryFreshness(v.Freshness)}
			for _, r := range v.Resources {
				rb := apidiscoveryv2beta1.APIResourceDiscovery{Resource: r.Resource, ResponseKind: r.ResponseKind, Scope: apidiscoveryv2beta1.ResourceScope(r.Scope),
					SingularResource: r.SingularResource, Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories}
				for _, sr := range r.Subresources {
					rb.Subresources = append(rb.Subresources, apidiscoveryv2beta1.APISubresourceDiscovery{Subresource: sr.Subresource, ResponseKind: sr.ResponseKind, AcceptedTypes: sr.AcceptedTypes, Verbs: sr.Verbs})
				}
				vb.Resources = append(vb.Resources, rb)
			}
			gb.Versions = append(gb.Versions, vb)
		}
		out.Items = append(out.Items, gb)
	}
	return out
}
