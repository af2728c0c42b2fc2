package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
)

// The proxy subresources of Services and Pods pass any HTTP request on to
// a backend inside the cluster, as Kubernetes' services/proxy and
// pods/proxy do:
//
//	/api/v1/namespaces/{ns}/services/{[scheme:]name[:port]}/proxy[/{path}]
//	/api/v1/namespaces/{ns}/pods/{[scheme:]name[:port]}/proxy[/{path}]
//
// A Service's backend is one ready endpoint of its EndpointSlices, picked
// at random, at the slice's port of the same name as the Service port
// asked for (a port number names the Service port that has it); the
// clusterIP is not used. A pod's backend is its IP, at the port given (a
// number or a container port's name) or its first container port. Every
// method, the query and the body go through; the answer comes back as the
// backend gives it, streamed, upgrades included. Authentication is the
// same as for any request; the caller's credentials do not travel on.
// http is the default scheme; https does not verify the backend's
// certificate, as Kubernetes does not.

// newProxyTransport is the transport to Service and pod backends.
func newProxyTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil, // backends are cluster addresses, never behind the host's proxy
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // as Kubernetes' proxy
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 16,
	}
}

func isServices(res *registry.Resource) bool { return res.Group == "" && res.Resource == "services" }

// serveProxy serves services/{name}/proxy and pods/{name}/proxy, and
// nodes/{name}/proxy through the kubelet's client (nodeproxy.go).
func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	if isNodes(res) {
		return s.serveNodeProxy(w, r, res, info)
	}
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(info.Name)
	var loc *url.URL
	var err error
	switch {
	case isServices(res):
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", info.Name))
		}
		loc, err = s.serviceLocation(r.Context(), res, info.Namespace, name, port)
	case isPods(res):
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", info.Name))
		}
		loc, err = s.podLocation(r.Context(), res, info.Namespace, name, port)
	default:
		return pathNotFound()
	}
	if err != nil {
		return err
	}
	loc.Scheme = "http"
	if scheme != "" {
		loc.Scheme = scheme
	}
	loc.Path, loc.RawQuery = info.ProxyPath, r.URL.RawQuery
	if redirectToRoot(w, r, loc.Path) {
		return nil
	}
	// Like kube-apiserver, absolute links in an HTML answer (and a
	// redirect's Location) are rewritten to go through the proxy path.
	suffix := loc.Path
	if strings.HasSuffix(r.URL.Path, "/") && !strings.HasSuffix(suffix, "/") {
		suffix += "/"
	}
	rewriting := &utilproxy.Transport{Scheme: r.URL.Scheme, Host: r.URL.Host,
		PathPrepend: strings.TrimSuffix(r.URL.Path, suffix), RoundTripper: s.proxy}
	proxy := &httputil.ReverseProxy{
		Transport:     rewriting,
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := *loc
			pr.Out.URL, pr.Out.Host = &u, ""
			pr.SetXForwarded()
			// The caller's credentials are for us, not for the backend.
			for h := range pr.Out.Header {
				if h == "Authorization" || strings.HasPrefix(h, "Impersonate-") {
					pr.Out.Header.Del(h)
				}
			}
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.Debug("proxy to backend", "url", loc.Redacted(), "err", err)
			writeError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err)))
		},
	}
	proxy.ServeHTTP(w, r)
	return nil
}

// serviceLocation picks a ready endpoint of Service ns/name for the
// Service port port (a name, a number or "" for the unnamed port) and
// returns its host:port.
func (s *Server) serviceLocation(ctx context.Context, res *registry.Resource, ns, name, port string) (*url.URL, error) {
	obj, _, err := s.get(ctx, res, ns, name)
	if err != nil {
		return nil, err
	}
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("unexpected object %T for a service", obj))
	}
	portName := port
	if n, err := strconv.ParseInt(port, 10, 32); err == nil {
		found := false
		for _, p := range svc.Spec.Ports {
			if int64(p.Port) == n {
				portName, found = p.Name, true
				break
			}
		}
		if !found {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, name))
		}
	}
	slicesRes, ok := s.table.Lookup(discoveryv1.SchemeGroupVersion.WithResource("endpointslices"))
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("endpointslices are not served"))
	}
	slices, err := s.list(ctx, slicesRes, ns, &metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return nil, err
	}
	var hosts []string
	anyReady := false
	for _, obj := range slices.items {
		slice, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		hosts = append(hosts, readyHosts(slice, portName)...)
		anyReady = anyReady || len(readyHosts(slice, "*")) > 0
	}
	if len(hosts) == 0 {
		// As Kubernetes words it: the Service's name when it has no
		// endpoints at all, name:port when none has that port.
		id := name
		if anyReady && port != "" {
			id = name + ":" + port
		}
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", id))
	}
	return &url.URL{Host: hosts[rand.IntN(len(hosts))]}, nil
}

// readyHosts lists host:port of slice's ready endpoints at its port named
// portName ("*": its first port). An endpoint whose readiness is unknown counts as ready, as the
// EndpointSlice API says.
func readyHosts(slice *discoveryv1.EndpointSlice, portName string) []string {
	var port int32
	for _, p := range slice.Ports {
		if p.Port != nil && (portName == "*" || ptr.Deref(p.Name, "") == portName) {
			port = *p.Port
			break
		}
	}
	if port == 0 {
		return nil
	}
	var hosts []string
	for _, ep := range slice.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
			continue
		}
		hosts = append(hosts, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(port))))
	}
	return hosts
}

// podLocation is pod ns/name's IP at port: a number, a container port's
// name, or "" for the first container port (none: the scheme's default).
func (s *Server) podLocation(ctx context.Context, res *registry.Resource, ns, name, port string) (*url.URL, error) {
	obj, _, err := s.get(ctx, res, ns, name)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("unexpected object %T for a pod", obj))
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		number := ""
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if number == "" && (port == "" || p.Name == port) {
					number = strconv.Itoa(int(p.ContainerPort))
				}
			}
		}
		if number == "" && port != "" {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s has no container port named %q", name, port))
		}
		port = number
	}
	// As Kubernetes: never the apiserver's own loopback or link-local
	// addresses through a pod's status.
	ip := net.ParseIP(pod.Status.PodIP)
	if ip == nil || !ip.IsGlobalUnicast() {
		return nil, apierrors.NewBadRequest("address not allowed")
	}
	host := ip.String()
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if ip.To4() == nil {
		host = "[" + host + "]"
	}
	return &url.URL{Host: host}, nil
}
