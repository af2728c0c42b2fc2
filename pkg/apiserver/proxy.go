package apiserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"

	"github.com/minik8s/minik8s/pkg/registry"
)

// The pod subresources that reach into a running pod — log, exec, attach
// and portforward — are served by the pod's kubelet, as in Kubernetes: the
// apiserver checks the pod and container, finds the node's address and
// kubelet port, and proxies the request to the kubelet's
// /containerLogs, /exec, /attach or /portForward over TLS with its kubelet
// client certificate (Config.KubeletClientCert). exec, attach and
// portforward are upgrade requests (WebSocket or SPDY); the proxy passes the upgraded connection
// through untouched. Like Kubernetes by default, it does not verify the
// kubelet's serving certificate.

// defaultKubeletPort is used for nodes that do not publish theirs.
const defaultKubeletPort = 10250

// kubeletClient reaches kubelets.
type kubeletClient struct {
	transport *http.Transport
	client    *http.Client
}

func newKubeletClient(cert tls.Certificate) *kubeletClient {
	cfg := &tls.Config{
		// Kubelets serve self-signed certificates by default; Kubernetes'
		// apiserver does not verify them either unless told a CA.
		InsecureSkipVerify: true, //nolint:gosec
		MinVersion:         tls.VersionTLS12,
	}
	if len(cert.Certificate) > 0 {
		cfg.Certificates = []tls.Certificate{cert}
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 16,
	}
	return &kubeletClient{transport: tr, client: &http.Client{Transport: tr}}
}

func isPods(res *registry.Resource) bool { return res.Group == "" && res.Resource == "pods" }

var podsResource = schema.GroupResource{Resource: "pods"}

// servePodLog serves GET pods/{name}/log.
func (s *Server) servePodLog(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	if !isPods(res) {
		return errNoSuchResource()
	}
	if info.Verb != "get" {
		return methodNotAllowed(info)
	}
	q := r.URL.Query()
	params, err := podLogParams(q, info.Name)
	if err != nil {
		return err
	}
	ctx := r.Context()
	pod, container, err := s.podContainer(ctx, res, info, q.Get("container"))
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		// Not scheduled: no logs yet, and no error (Kubernetes answers so).
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	loc, err := s.kubeletURL(ctx, pod.Spec.NodeName, fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container), params)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return err
	}
	resp, err := s.kubelet.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := kubeletResponseError(resp, pod.Name); err != nil {
		return err
	}
	if wsstream.IsWebSocketRequest(r) {
		// As kube-apiserver: the log streams over a websocket in binary
		// (binary.k8s.io) or base64 (base64.binary.k8s.io) frames.
		// bufio: the stream's copy drops what a Read returns together
		// with io.EOF, as the HTTP body of a short log does.
		return wsstream.NewReader(bufio.NewReader(resp.Body), true, wsstream.NewDefaultReaderProtocols()).Copy(hijackable{w}, r)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	var dst io.Writer = w
	if params.Get("follow") == "true" {
		dst = apiFlushWriter{w: w, rc: http.NewResponseController(w)}
	}
	_, _ = io.Copy(dst, resp.Body)
	return nil
}

// hijackable lets a handler that asserts http.Hijacker (the websocket
// server) take over the connection under the apiserver's wrapping
// ResponseWriters, which reach it through Unwrap.
type hijackable struct{ http.ResponseWriter }

func (h hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}

type apiFlushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f apiFlushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

// podLogParams validates the PodLogOptions in q and returns them as the
// kubelet's /containerLogs query.
func podLogParams(q url.Values, name string) (url.Values, error) {
	out := url.Values{}
	for _, p := range []string{"follow", "previous", "timestamps", "insecureSkipTLSVerifyBackend"} {
		v := q.Get(p)
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid %s %q: %v", p, v, err))
		}
		if b && p != "insecureSkipTLSVerifyBackend" {
			out.Set(p, "true")
		}
	}
	var invalid []string
	for _, p := range []struct {
		name string
		min  int64
	}{{"sinceSeconds", 1}, {"tailLines", 0}, {"limitBytes", 1}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid %s %q: %v", p.name, v, err))
		}
		if n < p.min {
			invalid = append(invalid, fmt.Sprintf("%s: Invalid value: %d: must be greater than or equal to %d", p.name, n, p.min))
			continue
		}
		out.Set(p.name, strconv.FormatInt(n, 10))
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid sinceTime %q: %v", v, err))
		}
		if out.Has("sinceSeconds") {
			invalid = append(invalid, "sinceSeconds: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified")
		}
		out.Set("sinceTime", t.UTC().Format(time.RFC3339))
	}
	if len(invalid) > 0 {
		st := apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, nil)
		st.ErrStatus.Message = fmt.Sprintf("PodLogOptions %q is invalid: %s", name, strings.Join(invalid, ", "))
		return nil, st
	}
	return out, nil
}

// servePodStream proxies pods/{name}/exec, attach (GET for WebSocket,
// POST for SPDY) and portforward to the kubelet.
func (s *Server) servePodStream(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	if !isPods(res) {
		return errNoSuchResource()
	}
	if info.Verb != "get" && info.Verb != "create" {
		return methodNotAllowed(info)
	}
	q := r.URL.Query()
	params := url.Values{}
	ctx := r.Context()
	var pod *corev1.Pod
	var path string
	if info.Subresource == "portforward" {
		// PodPortForwardOptions: the ports matter to WebSocket clients only.
		if ports := q["ports"]; len(ports) > 0 {
			params.Set("port", strings.Join(ports, ","))
		}
		obj, _, err := s.get(ctx, res, info.Namespace, info.Name)
		if err != nil {
			return err
		}
		var ok bool
		if pod, ok = obj.(*corev1.Pod); !ok {
			return apierrors.NewInternalError(fmt.Errorf("unexpected object %T for a pod", obj))
		}
		path = fmt.Sprintf("/portForward/%s/%s", pod.Namespace, pod.Name)
	} else {
		if err := s.connectPodAdmission(ctx, res, info, q); err != nil {
			return err
		}
		// PodExecOptions / PodAttachOptions, in the kubelet's words.
		for _, p := range []struct{ api, kubelet string }{{"stdin", "input"}, {"stdout", "output"}, {"stderr", "error"}, {"tty", "tty"}} {
			v := q.Get(p.api)
			if v == "" {
				continue
			}
			b, err := strconv.ParseBool(v)
			if err != nil {
				return apierrors.NewBadRequest(fmt.Sprintf("invalid %s %q: %v", p.api, v, err))
			}
			if b {
				params.Set(p.kubelet, "1")
			}
		}
		if info.Subresource == "exec" {
			if len(q["command"]) == 0 {
				return apierrors.NewBadRequest("you must specify at least one command for the container")
			}
			params["command"] = q["command"]
		}
		var container string
		var err error
		if pod, container, err = s.podContainer(ctx, res, info, q.Get("container")); err != nil {
			return err
		}
		path = fmt.Sprintf("/%s/%s/%s/%s", info.Subresource, pod.Namespace, pod.Name, container)
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	loc, err := s.kubeletURL(ctx, pod.Spec.NodeName, path, params)
	if err != nil {
		return err
	}
	proxy := s.kubeletProxy(loc)
	proxy.ServeHTTP(w, r)
	return nil
}

// connectPodAdmission runs admission on a connect to a pod's exec or
// attach, with the PodExecOptions or PodAttachOptions of the query, as
// kube-apiserver does before it connects.
func (s *Server) connectPodAdmission(ctx context.Context, res *registry.Resource, info requestInfo, q url.Values) error {
	flag := func(name string) bool { b, _ := strconv.ParseBool(q.Get(name)); return b }
	var options runtime.Object = &corev1.PodAttachOptions{Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"),
		TTY: flag("tty"), Container: q.Get("container")}
	kind := corev1.SchemeGroupVersion.WithKind("PodAttachOptions")
	if info.Subresource == "exec" {
		options = &corev1.PodExecOptions{Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"),
			TTY: flag("tty"), Container: q.Get("container"), Command: q["command"]}
		kind = corev1.SchemeGroupVersion.WithKind("PodExecOptions")
	}
	options.GetObjectKind().SetGroupVersionKind(kind)
	return s.connectAdmission(ctx, res, subresource(info.Subresource), info.Namespace, info.Name, options, kind)
}

// podContainer reads the pod and picks the container: the one named, or
// the only one; errors as Kubernetes words them.
func (s *Server) podContainer(ctx context.Context, res *registry.Resource, info requestInfo, container string) (*corev1.Pod, string, error) {
	obj, _, err := s.get(ctx, res, info.Namespace, info.Name)
	if err != nil {
		return nil, "", err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, "", apierrors.NewInternalError(fmt.Errorf("unexpected object %T for a pod", obj))
	}
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	if container == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod, pod.Spec.Containers[0].Name, nil
		case 0:
			return nil, "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		}
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, names))
	}
	for _, n := range names {
		if n == container {
			return pod, container, nil
		}
	}
	return nil, "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
}

// kubeletURL is https://{node address}:{kubelet port}{path}?{params}.
// The address is the node's first InternalIP, else ExternalIP, InternalDNS,
// ExternalDNS, Hostname; the port its daemonEndpoints' kubelet port.
func (s *Server) kubeletURL(ctx context.Context, nodeName, path string, params url.Values) (*url.URL, error) {
	nodes, ok := s.table.Lookup(corev1.SchemeGroupVersion.WithResource("nodes"))
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("nodes are not served"))
	}
	obj, _, err := s.get(ctx, nodes, "", nodeName)
	if err != nil {
		return nil, err
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("unexpected object %T for a node", obj))
	}
	return nodeKubeletURL(node, path, params)
}

// nodeKubeletURL is kubeletURL for a node already read.
func nodeKubeletURL(node *corev1.Node, path string, params url.Values) (*url.URL, error) {
	host := ""
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeInternalDNS, corev1.NodeExternalDNS, corev1.NodeHostName} {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" && host == "" {
				host = a.Address
			}
		}
	}
	if host == "" {
		return nil, apierrors.NewInternalError(fmt.Errorf("no preferred addresses found; known addresses: %v", node.Status.Addresses))
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port <= 0 {
		port = defaultKubeletPort
	}
	return &url.URL{
		Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(int(port))),
		Path: path, RawQuery: params.Encode(),
	}, nil
}

// kubeletResponseError turns a kubelet's error answer into an API error,
// as Kubernetes' apiserver relays it.
func kubeletResponseError(resp *http.Response, name string) error {
	if resp.StatusCode >= 200 && resp.StatusCode <= 206 {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	text := strings.TrimSpace(string(body))
	switch resp.StatusCode {
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(fmt.Errorf("%s", text))
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, "", podsResource, name, text, 0, false)
}

// kubeletProxy passes a request on to the kubelet URL loc with the
// apiserver's kubelet client certificate, without the caller's
// credentials (which are for us, not for the kubelet).
func (s *Server) kubeletProxy(loc *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Transport:     s.kubelet.transport,
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := *loc
			pr.Out.URL, pr.Out.Host = &u, ""
			for h := range pr.Out.Header {
				if h == "Authorization" || h == "Cookie" || strings.HasPrefix(h, "Impersonate-") {
					pr.Out.Header.Del(h)
				}
			}
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.Debug("proxy to kubelet", "url", loc.Redacted(), "err", err)
			writeError(w, apierrors.NewInternalError(fmt.Errorf("error dialing backend: %w", err)))
		},
	}
}

// redirectToRoot answers a GET or HEAD of .../proxy (no path) with a
// redirect to .../proxy/, as Kubernetes does, and reports whether it did.
func redirectToRoot(w http.ResponseWriter, r *http.Request, path string) bool {
	if path != "" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	target := r.URL.Path + "/"
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", target)
	w.WriteHeader(http.StatusMovedPermanently)
	return true
}
