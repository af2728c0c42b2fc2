package apiserver

import (
	"fmt"
	"net"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/minik8s/minik8s/pkg/registry"
)

// The proxy subresource of Nodes passes any HTTP request on to the node's
// kubelet, as Kubernetes' nodes/proxy does:
//
//	/api/v1/nodes/{name[:port]}/proxy[/{path}]
//
// so that Prometheus' kubernetes_sd "node" role reaches every kubelet's
// /metrics and /metrics/cadvisor through the apiserver
// (/api/v1/nodes/{node}/proxy/metrics/cadvisor). The kubelet is found as
// for pods/log (proxy.go): the node's InternalIP (or its next preferred
// address) and daemonEndpoints' kubelet port, over TLS with the apiserver's
// kubelet client certificate, which kubelets let in. Only the kubelet port
// is proxied: a port in the name must be that one (Kubernetes would proxy
// other ports of the node in plain HTTP; minik8s does not). Every method,
// the query and the body go through, upgrades included; the answer comes
// back as the kubelet gives it. Authorization is Kubernetes': the request's
// verb on nodes/proxy; the caller's credentials do not travel on.

func isNodes(res *registry.Resource) bool { return res.Group == "" && res.Resource == "nodes" }

// serveNodeProxy serves nodes/{name}/proxy.
func (s *Server) serveNodeProxy(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	// A scheme ("https:name:port") is accepted and ignored: kubelets speak TLS.
	_, name, port, ok := utilnet.SplitSchemeNamePort(info.Name)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", info.Name))
	}
	ctx := r.Context()
	obj, _, err := s.get(ctx, res, "", name)
	if err != nil {
		return err
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("unexpected object %T for a node", obj))
	}
	loc, err := nodeKubeletURL(node, info.ProxyPath, nil)
	if err != nil {
		return err
	}
	if _, kubeletPort, _ := net.SplitHostPort(loc.Host); port != "" && port != kubeletPort {
		return apierrors.NewBadRequest(fmt.Sprintf("node %s: only the kubelet port (%s) is proxied, not %q", name, kubeletPort, port))
	}
	loc.RawQuery = r.URL.RawQuery
	if redirectToRoot(w, r, loc.Path) {
		return nil
	}
	proxy := s.kubeletProxy(loc)
	proxy.ServeHTTP(w, r)
	return nil
}
