package gateway

import (
	"cmp"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// defaultHost is the server of rules without a host.
const defaultHost = ""

// location is one route of one host.
type location struct {
	exact bool   // nginx "location = path"
	path  string // "/", "/path1/", "/api"
	// upstream is the Service's clusterIP:port; empty: the backend is
	// missing and the route answers 503.
	upstream string
	// strip passes the request on without the path prefix (DNSRecords).
	strip bool
	// readTimeout, when set, replaces nginx's 60s wait for the backend's
	// answer: a backend with timeouts of its own (the function router)
	// answers them itself.
	readTimeout time.Duration
	// implied marks the "= /p" that a prefix "/p/" brings along, so that
	// /p answers too: it yields to an explicit Exact path, and a clash
	// over it is reported as the prefix's.
	implied bool
	owner   string // "dnsrecord ns/name" or "ingress ns/name", for comments
}

func (l location) key() string {
	if l.exact {
		return "= " + l.path
	}
	return l.path
}

// routes is the whole routing table: host -> locations.
type routes struct {
	hosts map[string][]location
}

// problem is what went wrong for one object, for its status.
type problem struct {
	reason, message string
}

// objectKey names a DNSRecord or Ingress in the problems map.
type objectKey struct {
	kind, namespace, name string
}

// serviceLookup finds a Service by namespace and name.
type serviceLookup func(namespace, name string) (*corev1.Service, bool)

// builder assembles routes from DNSRecords and Ingresses, oldest first.
type builder struct {
	services serviceLookup
	routes   routes
	claimed  map[string]location // host + " " + location key -> its location
	problems map[objectKey][]problem
}

func newBuilder(services serviceLookup) *builder {
	return &builder{services: services, routes: routes{hosts: map[string][]location{}},
		claimed: map[string]location{}, problems: map[objectKey][]problem{}}
}

// upstream resolves a Service port (by number or name) to clusterIP:port.
func (b *builder) upstream(namespace, service string, port intstr.IntOrString) (string, *problem) {
	svc, ok := b.services(namespace, service)
	if !ok {
		return "", &problem{"BackendNotFound", fmt.Sprintf("service %s/%s not found", namespace, service)}
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "", &problem{"BackendNotFound", fmt.Sprintf("service %s/%s has no clusterIP", namespace, service)}
	}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if (port.Type == intstr.Int && p.Port == port.IntVal) || (port.Type == intstr.String && p.Name == port.StrVal) {
			return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(p.Port))), nil
		}
	}
	return "", &problem{"BackendNotFound", fmt.Sprintf("service %s/%s has no TCP port %s", namespace, service, port.String())}
}

// safePath and safeHost are what may reach nginx.conf unquoted: paths and
// hosts the API validation lets through but that would break (or inject
// into) the configuration are refused here too.
var (
	safePath = regexp.MustCompile(`^/[A-Za-z0-9._~/%:@+,=-]*$`)
	safeHost = regexp.MustCompile(`^(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)
)

// add claims host+location for obj, or records the conflict.
func (b *builder) add(obj objectKey, host string, loc location) {
	if host == statusHost {
		b.problems[obj] = append(b.problems[obj], problem{"UnsupportedPath", host + " is the gateway's own name"})
		return
	}
	if !safePath.MatchString(loc.path) || (host != defaultHost && !safeHost.MatchString(host)) {
		b.problems[obj] = append(b.problems[obj], problem{"UnsupportedPath",
			fmt.Sprintf("%s%s: the gateway routes only host names and paths of letters, digits and ._~/%%:@+,=-", displayHost(host), loc.path)})
		return
	}
	k := host + " " + loc.key()
	if had, taken := b.claimed[k]; taken {
		switch {
		case had.implied && !loc.implied:
			// An Exact path wins over the one a prefix implies, as in
			// Kubernetes; the prefix keeps what lies below it.
			b.claimed[k] = loc
			locs := b.routes.hosts[host]
			locs[slices.IndexFunc(locs, func(l location) bool { return l.key() == loc.key() })] = loc
		case had.owner != loc.owner && !loc.implied:
			b.problems[obj] = append(b.problems[obj], problem{"PathConflict",
				fmt.Sprintf("%s%s is already routed by %s", displayHost(host), loc.path, had.owner)})
		}
		return
	}
	b.claimed[k] = loc
	b.routes.hosts[host] = append(b.routes.hosts[host], loc)
}

// addPrefix routes path and what lies below it, on segment boundaries
// (/p is /p, /p/ and /p/x, not /px): nginx's prefix "/p/" and an implied
// "= /p", which also keeps nginx from redirecting /p to /p/.
func (b *builder) addPrefix(obj objectKey, host string, loc location) {
	loc.path = strings.TrimSuffix(loc.path, "/")
	if loc.path != "" {
		exact := loc
		exact.exact, exact.implied = true, true
		b.add(obj, host, exact)
	}
	loc.path += "/"
	b.add(obj, host, loc)
}

func displayHost(h string) string {
	if h == defaultHost {
		return "*"
	}
	return h
}

func (b *builder) addDNSRecord(rec *minik8sv1.DNSRecord) {
	obj := objectKey{"DNSRecord", rec.Namespace, rec.Name}
	b.problems[obj] = nil
	owner := "dnsrecord " + rec.Namespace + "/" + rec.Name
	for _, p := range rec.Spec.Paths {
		up, prob := b.upstream(rec.Namespace, p.Service, p.Port)
		if prob != nil {
			b.problems[obj] = append(b.problems[obj], *prob)
		}
		path := p.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		b.addPrefix(obj, strings.ToLower(rec.Spec.Host), location{path: path, upstream: up, strip: true, owner: owner})
	}
}

func (b *builder) addIngress(ing *networkingv1.Ingress) {
	obj := objectKey{"Ingress", ing.Namespace, ing.Name}
	b.problems[obj] = nil
	owner := "ingress " + ing.Namespace + "/" + ing.Name
	backend := func(be networkingv1.IngressBackend) string {
		if be.Service == nil {
			b.problems[obj] = append(b.problems[obj], problem{"BackendNotFound", "only service backends are supported"})
			return ""
		}
		port := intstr.FromInt32(be.Service.Port.Number)
		if be.Service.Port.Name != "" {
			port = intstr.FromString(be.Service.Port.Name)
		}
		up, prob := b.upstream(ing.Namespace, be.Service.Name, port)
		if prob != nil {
			b.problems[obj] = append(b.problems[obj], *prob)
		}
		return up
	}
	for _, rule := range ing.Spec.Rules {
		if rule.HTTP == nil {
			continue
		}
		host := strings.ToLower(rule.Host)
		for _, p := range rule.HTTP.Paths {
			up := backend(p.Backend)
			loc := location{path: cmp.Or(p.Path, "/"), upstream: up, owner: owner}
			if p.PathType != nil && *p.PathType == networkingv1.PathTypeExact {
				loc.exact = true
				b.add(obj, host, loc)
				continue
			}
			b.addPrefix(obj, host, loc)
		}
	}
	if ing.Spec.DefaultBackend != nil {
		b.add(obj, defaultHost, location{path: "/", upstream: backend(*ing.Spec.DefaultBackend), owner: owner})
	}
}

// build makes the routes of recs and ings, oldest object first so that
// the first to claim a host and path keeps it.
func build(services serviceLookup, recs []*minik8sv1.DNSRecord, ings []*networkingv1.Ingress) (routes, map[objectKey][]problem) {
	type item struct {
		created metav1.Time
		key     string
		add     func()
	}
	b := newBuilder(services)
	var items []item
	for _, r := range recs {
		items = append(items, item{r.CreationTimestamp, "d/" + r.Namespace + "/" + r.Name, func() { b.addDNSRecord(r) }})
	}
	for _, i := range ings {
		items = append(items, item{i.CreationTimestamp, "i/" + i.Namespace + "/" + i.Name, func() { b.addIngress(i) }})
	}
	slices.SortFunc(items, func(x, y item) int {
		if c := x.created.Time.Compare(y.created.Time); c != 0 {
			return c
		}
		return strings.Compare(x.key, y.key)
	})
	b.addBuiltin()
	for _, it := range items {
		it.add()
	}
	return b.routes, b.problems
}

// Builtin routes of the default server: the paths of minik8s' own
// services, claimed before any DNSRecord or Ingress. Each goes to port 80
// of a Service in kube-system, with the path unchanged; it is there only
// while its Service is.
var builtinRoutes = []struct{ path, service string }{
	// Functions: /function/<namespace>/<name> (pkg/serverless/router).
	{"/function", "minik8s-functions"},
	// Workflows run synchronously, /workflow/<namespace>/<name>, and HTTP
	// triggers, /trigger/<namespace>/<name> (pkg/workflow/trigger), served
	// by the router's process.
	{"/workflow", "minik8s-functions"},
	{"/trigger", "minik8s-functions"},
}

func (b *builder) addBuiltin() {
	for _, r := range builtinRoutes {
		upstream, prob := b.upstream("kube-system", r.service, intstr.FromInt32(80))
		if prob != nil {
			continue
		}
		b.addPrefix(objectKey{"Service", "kube-system", r.service}, defaultHost,
			location{path: r.path, upstream: upstream, owner: "minik8s service kube-system/" + r.service, readTimeout: time.Hour})
	}
}

// names are the hosts to publish in DNS: every named, non-wildcard host.
func (r routes) names() []string {
	var out []string
	for h := range r.hosts {
		if h != defaultHost && !strings.HasPrefix(h, "*") {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}
