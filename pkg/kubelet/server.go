package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/pki"
)

// The kubelet's HTTPS server, on Config.ServerAddress, serves the paths of
// Kubernetes' kubelet that the apiserver proxies pods/log, pods/exec and
// pods/attach to:
//
//	GET      /healthz
//	GET      /containerLogs/{namespace}/{pod}/{container}?follow=&previous=&timestamps=&tailLines=&limitBytes=&sinceSeconds=&sinceTime=
//	GET|POST /exec/{namespace}/{pod}/{container}?command=...&input=1&output=1&error=1&tty=1
//	GET|POST /attach/{namespace}/{pod}/{container}?input=1&output=1&error=1&tty=1
//	GET|POST /portForward/{namespace}/{pod}
//	GET      /stats/summary
//	GET      /metrics
//	GET      /metrics/cadvisor
//
// exec and attach speak the remotecommand protocol (remotecommand.go),
// portForward Kubernetes' port forwarding protocol (portforward.go),
// stats/summary the Summary API (summary.go), metrics and
// metrics/cadvisor Prometheus' text format (metrics.go).
// Every connection must present a client certificate signed by
// Config.ClientCA (TLS rejects the others); only the apiserver
// (pki.KubeletClientUser) and admins (group system:masters) get past
// /healthz, everyone else gets 403, as Kubernetes' kubelet answers a user
// its authorizer denies.

// DefaultServerPort is the kubelet port of Kubernetes.
const DefaultServerPort = 10250

// streamIdleTimeout ends exec/attach sessions with no traffic for this long
// (Kubernetes' streamingConnectionIdleTimeout).
const streamIdleTimeout = 4 * time.Hour

// startServer listens on Config.ServerAddress and serves until ctx ends.
// The returned channel reports a server that stopped on its own; both are
// nil when the server is disabled.
func (k *Kubelet) startServer(ctx context.Context) (<-chan error, error) {
	if k.cfg.ServerAddress == "" {
		return nil, nil
	}
	listen := net.Listen
	if k.cfg.Listen != nil {
		listen = k.cfg.Listen
	}
	ln, err := listen("tcp", k.cfg.ServerAddress)
	if err != nil {
		return nil, fmt.Errorf("kubelet server: listen: %w", err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	var cert tls.Certificate
	if k.cfg.ServerCert != nil {
		cert = *k.cfg.ServerCert
	} else if cert, err = selfSignedCert(k.cfg.NodeName, addr.IP); err != nil {
		_ = ln.Close()
		return nil, err
	}
	k.serverPort = int32(addr.Port)
	if !addr.IP.IsUnspecified() {
		k.serverIP = addr.IP.String()
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true) // upgrades (exec, attach) need HTTP/1.1
	srv := &http.Server{
		Handler:           k.serverHandler(),
		ReadHeaderTimeout: 30 * time.Second,
		Protocols:         &protocols,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    k.cfg.ClientCA,
			MinVersion:   tls.VersionTLS12,
		},
		// Sessions end with the kubelet.
		BaseContext: func(net.Listener) context.Context { return ctx },
		// Rejected handshakes (no or a foreign client certificate) are the
		// clients' problem; keep them out of the kubelet's warnings.
		ErrorLog: slog.NewLogLogger(k.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() {
		if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	k.log.Info("kubelet server listening", "addr", addr.String())
	return errc, nil
}

// describeServer tells the apiserver where to reach the server: the port
// in daemonEndpoints and, when the provider names no InternalIP, the IP the
// server listens on.
func (k *Kubelet) describeServer(node *corev1.Node) {
	if k.serverPort == 0 {
		return
	}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = k.serverPort
	if k.serverIP == "" {
		return
	}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return
		}
	}
	node.Status.Addresses = append([]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: k.serverIP}}, node.Status.Addresses...)
}

// selfSignedCert makes a serving certificate for a kubelet given none, as
// Kubernetes' kubelet does without --tls-cert-file. The apiserver does not
// verify it (Kubernetes' default, too).
func selfSignedCert(nodeName string, ip net.IP) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet server: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: nodeName + "@" + strconv.FormatInt(now.Unix(), 10)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{nodeName, "localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if ip != nil && !ip.IsUnspecified() {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet server: self-signed certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// serverHandler routes the kubelet's API.
func (k *Kubelet) serverHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.authorized(k.serveContainerLogs))
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", k.authorized(k.serveExec))
	mux.HandleFunc("/attach/{namespace}/{pod}/{container}", k.authorized(k.serveAttach))
	mux.HandleFunc("/portForward/{namespace}/{pod}", k.authorized(k.servePortForward))
	mux.HandleFunc("GET /stats/summary", k.authorized(k.serveStatsSummary))
	mux.HandleFunc("GET /metrics", k.authorized(k.newMetricsHandler().ServeHTTP))
	mux.HandleFunc("GET /metrics/cadvisor", k.authorized(k.serveCadvisorMetrics))
	return mux
}

// authorized lets the apiserver and admins through. TLS has verified the
// certificate already; this decides what its holder may do.
func (k *Kubelet) authorized(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, groups := "system:anonymous", []string(nil)
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			subject := r.TLS.PeerCertificates[0].Subject
			user, groups = subject.CommonName, subject.Organization
		}
		if user != pki.KubeletClientUser && !slices.Contains(groups, pki.MastersGroup) {
			verb := "get"
			if r.Method != http.MethodGet {
				verb = "create"
			}
			// Kubernetes' kubelet's words for a denied request.
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=proxy)", user, verb), http.StatusForbidden)
			return
		}
		next(w, r)
	}
}

// containerOf finds the pod (bound to this node) and checks it has the
// container, answering 404 as Kubernetes' kubelet when either is missing.
func (k *Kubelet) containerOf(w http.ResponseWriter, r *http.Request) (pod *corev1.Pod, container string, ok bool) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	pod, err := k.pods.Pods(ns).Get(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			http.Error(w, fmt.Sprintf("pod %q does not exist", name), http.StatusNotFound)
		} else {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		return nil, "", false
	}
	if !hasContainer(&pod.Spec, container) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, name), http.StatusNotFound)
		return nil, "", false
	}
	return pod, container, true
}

func hasContainer(spec *corev1.PodSpec, name string) bool {
	for _, c := range spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

func notImplemented(w http.ResponseWriter, what string) {
	http.Error(w, fmt.Sprintf("this node's provider does not support %s", what), http.StatusNotImplemented)
}

func (k *Kubelet) serveContainerLogs(w http.ResponseWriter, r *http.Request) {
	pod, container, ok := k.containerOf(w, r)
	if !ok {
		return
	}
	logger, ok := k.cfg.Provider.(ContainerLogger)
	if !ok {
		notImplemented(w, "container logs")
		return
	}
	opts, err := logOptionsFrom(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	status := &pod.Status
	if observed, err := k.cfg.Provider.GetPodStatus(ctx, pod.Namespace, pod.Name); err == nil && observed != nil {
		status = observed
	}
	if err := validateContainerLogStatus(pod.Name, status, container, opts.Previous); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	logs, err := logger.GetContainerLogs(ctx, pod.Namespace, pod.Name, container, opts)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	defer logs.Close()
	var src io.Reader = logs
	if opts.LimitBytes != nil {
		src = io.LimitReader(logs, *opts.LimitBytes)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	var dst io.Writer = w
	if opts.Follow {
		dst = flushWriter{w: w, rc: http.NewResponseController(w)}
	}
	if _, err := io.Copy(dst, src); err != nil && ctx.Err() == nil {
		k.log.Debug("stream container logs", "pod", pod.Namespace+"/"+pod.Name, "container", container, "err", err)
	}
}

// flushWriter sends every write at once: followed logs reach the client
// line by line.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

// logOptionsFrom reads /containerLogs' query, with Kubernetes' validation.
func logOptionsFrom(q url.Values) (LogOptions, error) {
	var opts LogOptions
	var err error
	flag := func(name string) bool {
		v := q.Get(name)
		if v == "" || err != nil {
			return false
		}
		b, perr := strconv.ParseBool(v)
		if perr != nil {
			err = fmt.Errorf("invalid %s %q: want true or false", name, v)
		}
		return b
	}
	number := func(name string, min int64) *int64 {
		v := q.Get(name)
		if v == "" || err != nil {
			return nil
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		switch {
		case perr != nil:
			err = fmt.Errorf("invalid %s %q: want an integer", name, v)
		case n < min:
			err = fmt.Errorf("%s: Invalid value: %d: must be greater than or equal to %d", name, n, min)
		}
		return &n
	}
	opts.Follow, opts.Previous, opts.Timestamps = flag("follow"), flag("previous"), flag("timestamps")
	opts.TailLines = number("tailLines", 0)
	opts.LimitBytes = number("limitBytes", 1)
	opts.SinceSeconds = number("sinceSeconds", 1)
	if v := q.Get("sinceTime"); v != "" && err == nil {
		t, perr := time.Parse(time.RFC3339, v)
		if perr != nil {
			return opts, fmt.Errorf("invalid sinceTime %q: want RFC 3339", v)
		}
		opts.SinceTime = &metav1.Time{Time: t}
	}
	if err == nil && opts.SinceSeconds != nil && opts.SinceTime != nil {
		err = errors.New("at most one of sinceTime or sinceSeconds may be specified")
	}
	return opts, err
}

// validateContainerLogStatus says why a container has no logs to show
// yet, in the words of Kubernetes' kubelet.
func validateContainerLogStatus(podName string, status *corev1.PodStatus, container string, previous bool) error {
	var cs *corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				cs = &list[i]
			}
		}
	}
	if cs == nil {
		return fmt.Errorf("container %q in pod %q is not available", container, podName)
	}
	last, state := cs.LastTerminationState, cs.State
	switch {
	case previous:
		if last.Terminated == nil {
			return fmt.Errorf("previous terminated container %q in pod %q not found", container, podName)
		}
	case state.Running != nil, state.Terminated != nil, last.Terminated != nil:
	case state.Waiting != nil:
		reason := state.Waiting.Reason
		switch reason {
		case "ErrImagePull":
			reason = "image can't be pulled"
		case "ImagePullBackOff":
			reason = "trying and failing to pull image"
		}
		return fmt.Errorf("container %q in pod %q is waiting to start: %s", container, podName, reason)
	default:
		return fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, podName)
	}
	return nil
}
