package apiserver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"log/slog"
	"mime"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/apiserver/audit"
	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/apiserver/authz"
	"github.com/minik8s/minik8s/pkg/apiserver/openapi"
	"github.com/minik8s/minik8s/pkg/dashboard"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/kinds"
	"github.com/minik8s/minik8s/pkg/serviceaccount"
	"github.com/minik8s/minik8s/pkg/storage"
)

// Config is what the apiserver is built from.
type Config struct {
	// Store holds the cluster state.
	Store storage.Store
	// EncryptionKey, when set, encrypts Secrets (and other resources marked
	// Encrypted in the registry) at rest with AES-256-GCM.
	EncryptionKey []byte
	// Authenticator identifies callers; nil serves everyone (in-process tests only).
	Authenticator authn.Authenticator
	// Authorizer decides what an authenticated caller may do (a 403
	// otherwise); nil allows everything (in-process tests only).
	Authorizer authz.Authorizer
	// Admit checks what an authenticated caller creates or updates
	// beyond validation (RBAC's privilege-escalation prevention); nil:
	// nothing more.
	Admit func(ctx context.Context, user authz.User, obj k8sruntime.Object) error
	// Admission is the validating admission run on every create and
	// update (admission.go); nil is DefaultAdmission (PodSecurity), an
	// empty list none.
	Admission []admission.Plugin
	// Audit, when set, logs requests (audit.k8s.io/v1 Events).
	Audit *audit.Logger
	// RulesFor lists the RBAC rules of a user in a namespace, for
	// SelfSubjectRulesReview (kubectl auth can-i --list); nil: none known.
	RulesFor func(ctx context.Context, user authz.User, namespace string) ([]rbacv1.PolicyRule, error)
	// Resources to serve; nil means kinds.All().
	Resources []*registry.Resource
	// BookmarkInterval is how often watches that allow bookmarks get one.
	BookmarkInterval time.Duration
	Logger           *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ServiceCIDR is where Service cluster IPs come from (default 10.96.0.0/12).
	ServiceCIDR string
	// NodePortRange is "min-max" (default 30000-32767).
	NodePortRange string
	// KubeletClientCert is presented to kubelets when pods/log, exec,
	// attach and portforward are proxied to them (proxy.go); kubelets
	// reject callers without one.
	KubeletClientCert tls.Certificate
	// MetricsCacheTTL is how long a kubelet's stats summary serves the
	// metrics.k8s.io API (resourcemetrics.go); default DefaultMetricsCacheTTL.
	MetricsCacheTTL time.Duration
	// RequestTimeout bounds every request but watches and streams
	// (deadline.go); default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// ServiceAccountTokens signs the tokens of the TokenRequest API (POST
	// .../serviceaccounts/<name>/token, serviceaccounts.go); nil serves
	// none.
	ServiceAccountTokens *serviceaccount.Signer
	// FrontProxy is how the aggregation layer calls extension API
	// servers (aggregator.go); nil: without a client certificate, and
	// nothing published for them to trust.
	FrontProxy *FrontProxyConfig
	// ClientCAPEM is the CA of the client certificates this apiserver
	// accepts, published for extension API servers (client-ca-file).
	ClientCAPEM []byte
}

// Defaults of the service address ranges, as Kubernetes'.
const (
	DefaultServiceCIDR   = "10.96.0.0/12"
	DefaultNodePortRange = "30000-32767"
)

// Server is the Kubernetes API over a Store.
type Server struct {
	cfg       Config
	store     storage.Store
	table     *registry.Table
	scheme    *k8sruntime.Scheme
	codecs    serializer.CodecFactory
	discovery atomic.Pointer[discovery]
	// discoveryMu serializes rebuilding discovery.
	discoveryMu sync.Mutex
	// aggregator proxies to the APIServices with a Service (aggregator.go).
	aggregator *aggregator
	// openapi serves /openapi/: the table's resources (oapiResources)
	// and the custom resources' documents.
	openapi       atomic.Pointer[http.Handler]
	oapiResources []openapi.Resource
	// schemas resolves kinds' schemas for admission (admissionschemas.go).
	schemas builtinSchemas
	// fieldTypes is the built-in kinds' schema for managedFields and
	// server-side apply (fieldmanager.go), built on first use.
	fieldTypes func() (managedfields.TypeConverter, error)
	// crdSync serializes the custom resources' syncs, and guards
	// oapiFingerprint, what the custom part of openapi was built from.
	crdSync         sync.Mutex
	oapiFingerprint string
	// crConverters builds each definition's converter between its
	// versions (conversion webhooks reached like admission webhooks).
	crConverters *conversion.CRConverterFactory
	metrics      *metrics
	// hooks keep state outside the objects in step with their writes.
	hooks   map[*registry.Resource]registry.WriteHook
	kubelet *kubeletClient
	// proxy reaches Service and pod backends (serviceproxy.go).
	proxy *http.Transport
	log   *slog.Logger
	now   func() time.Time
	// summaries and metricsCodecs serve metrics.k8s.io (nil summaries
	// when the table has no pods or nodes).
	summaries     *summaryCache
	metricsCodecs serializer.CodecFactory
}

// New validates cfg and builds the server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("apiserver: a Store is required")
	}
	if cfg.Resources == nil {
		cfg.Resources = kinds.All()
	}
	if cfg.BookmarkInterval == 0 {
		cfg.BookmarkInterval = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ServiceCIDR == "" {
		cfg.ServiceCIDR = DefaultServiceCIDR
	}
	if cfg.NodePortRange == "" {
		cfg.NodePortRange = DefaultNodePortRange
	}
	if cfg.MetricsCacheTTL == 0 {
		cfg.MetricsCacheTTL = DefaultMetricsCacheTTL
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.Admission == nil {
		cfg.Admission = DefaultAdmission()
	}
	var portMin, portMax int
	if _, err := fmt.Sscanf(cfg.NodePortRange, "%d-%d", &portMin, &portMax); err != nil || portMin < 1 || portMax > 65535 || portMin > portMax {
		return nil, fmt.Errorf("node port range %q: want min-max", cfg.NodePortRange)
	}
	scheme, err := registry.NewScheme()
	if err != nil {
		return nil, err
	}
	table, err := registry.NewTable(scheme, cfg.Resources)
	if err != nil {
		return nil, err
	}
	store := cfg.Store
	if len(cfg.EncryptionKey) > 0 {
		aead, err := storage.NewAESGCM(cfg.EncryptionKey)
		if err != nil {
			return nil, err
		}
		var prefixes []string
		for _, r := range table.All {
			if r.Encrypted {
				prefixes = append(prefixes, keyPrefix(r))
			}
		}
		store = storage.Encrypted(store, aead, prefixes...)
	}
	var oapiResources []openapi.Resource
	for _, r := range table.All {
		var subs []string
		if r.Status {
			subs = append(subs, "status")
		}
		if r.Scale != nil {
			subs = append(subs, "scale")
		}
		for _, a := range r.Actions {
			subs = append(subs, a.Name)
		}
		if isServiceAccounts(r) {
			subs = append(subs, "token")
		}
		if r.Approval != nil {
			subs = append(subs, "approval")
		}
		subs = append(subs, r.SpecPartNames()...)
		oapiResources = append(oapiResources, openapi.Resource{
			GroupVersionKind: r.GroupVersionKind(), Resource: r.Resource, Namespaced: r.Namespaced,
			Verbs: allVerbs, Subresources: subs, Object: r.New(), ListObject: r.NewList(),
		})
	}
	oapi, err := openapi.NewHandler(oapiResources)
	if err != nil {
		return nil, fmt.Errorf("build openapi: %w", err)
	}
	hooks := map[*registry.Resource]registry.WriteHook{}
	for _, r := range table.All {
		if r.NewWriteHook == nil {
			continue
		}
		h, err := r.NewWriteHook(registry.HookConfig{Store: store, ServiceCIDR: cfg.ServiceCIDR, NodePortMin: portMin, NodePortMax: portMax})
		if err != nil {
			return nil, err
		}
		hooks[r] = h
	}
	s := &Server{
		cfg: cfg, store: store, table: table, scheme: scheme,
		hooks:         hooks,
		codecs:        serializer.NewCodecFactory(scheme),
		oapiResources: oapiResources,
		fieldTypes: sync.OnceValues(func() (managedfields.TypeConverter, error) {
			return builtinFieldTypes(scheme, table.All, oapiResources)
		}),
		metrics:    newMetrics(),
		kubelet:    newKubeletClient(cfg.KubeletClientCert),
		proxy:      newProxyTransport(),
		aggregator: newAggregator(cfg.FrontProxy),
		log:        cfg.Logger,
		now:        cfg.Now,
	}
	s.discovery.Store(s.newDiscovery())
	s.openapi.Store(&oapi)
	// The schema for managed fields takes about a second to parse: ahead
	// of the first write, not during it.
	go func() { _, _ = s.fieldTypes() }()
	if servesMetricsAPI(table) {
		s.summaries = newSummaryCache(kubeletSummaries{client: s.kubelet.client}, cfg.MetricsCacheTTL, cfg.Now)
		s.metricsCodecs = newMetricsCodecs()
	}
	s.giveServiceResolver()
	if s.crConverters, err = conversion.NewCRConverterFactory(serviceResolver{s}, nil); err != nil {
		return nil, fmt.Errorf("apiserver: custom resource conversion: %w", err)
	}
	return s, nil
}

// Table is the set of served resources.
func (s *Server) Table() *registry.Table { return s.table }

// publicPaths answer without credentials, as in Kubernetes' default RBAC
// for system:unauthenticated: health and version only.
var publicPaths = []string{"/healthz", "/livez", "/readyz", "/version"}

// Handler is the full HTTP handler: request deadlines, authentication,
// metrics, routing.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.installHealth(mux)
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, versionInfo()) })
	s.installIssuerDiscovery(mux)
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}))
	mux.Handle("/openapi/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*s.openapi.Load()).ServeHTTP(w, r) }))
	mux.Handle(dashboard.Prefix, dashboard.Handler())
	mux.Handle("/dashboard", http.RedirectHandler(dashboard.Prefix, http.StatusMovedPermanently))
	mux.HandleFunc("/", s.serveAPI)
	var h http.Handler = mux
	if s.cfg.Authorizer != nil {
		h = s.authorize(h)
		h = s.impersonate(h)
	}
	if s.cfg.Authenticator != nil {
		h = authn.Middleware(s.cfg.Authenticator, publicPaths, h)
	}
	if s.cfg.Audit != nil {
		h = s.cfg.Audit.Middleware(h)
	}
	return s.withDeadline(s.recoverPanics(h))
}

// serveAPI routes /api and /apis requests and records their metrics.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if t := s.aggregator.target(r.URL.Path); t != nil {
		s.proxyToAPIService(w, r, t)
		return
	}
	info := parseRequestInfo(r)
	if !info.IsResource {
		if s.serveDiscovery(w, r) {
			return
		}
		writeError(w, pathNotFound())
		return
	}
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	if isReview(info) {
		if err := s.serveReview(rec, r, info); err != nil {
			writeError(rec, err)
		}
	} else if info.Group == metricsv1beta1.GroupName {
		s.serveResourceMetrics(rec, r, info)
	} else {
		s.serveResource(rec, r, info)
	}
	s.metrics.requests.WithLabelValues(info.Verb, info.Group, info.Resource, info.Subresource, strconv.Itoa(rec.code)).Inc()
	if info.Verb != "watch" {
		s.metrics.latency.WithLabelValues(info.Verb, info.Group, info.Resource, info.Subresource).Observe(time.Since(start).Seconds())
	}
}

// recoverPanics turns a panic in a handler into a 500 Status: no panic
// reaches a user as a dropped connection.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				buf := make([]byte, 8<<10)
				buf = buf[:runtime.Stack(buf, false)]
				s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(buf))
				writeError(w, apierrors.NewInternalError(fmt.Errorf("%v", v)))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (the proxy to
// kubelets hijacks it for exec and attach).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// bodyJSON returns a request body as JSON, converting YAML and protobuf.
func (s *Server) bodyJSON(r *http.Request, data []byte, gvk schema.GroupVersionKind) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != k8sruntime.ContentTypeProtobuf {
		return bodyJSON(r, data)
	}
	info, ok := k8sruntime.SerializerInfoForMediaType(s.codecs.SupportedMediaTypes(), mt)
	if !ok {
		return nil, unsupportedMediaType(mt)
	}
	obj, err := s.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if !hasProtobuf(obj) {
		return nil, unsupportedMediaType(mt)
	}
	if _, _, err := info.Serializer.Decode(data, &gvk, obj); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decode protobuf body: %v", err))
	}
	return json.Marshal(obj)
}

// defaultNamespaces exist in every cluster, as in Kubernetes.
var defaultNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// EnsureDefaults creates the namespaces every cluster has and the default
// service account of every namespace. It is idempotent.
func (s *Server) EnsureDefaults(ctx context.Context) error {
	res, ok := s.table.Lookup(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if !ok {
		return nil
	}
	for _, name := range defaultNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := s.create(ctx, res, "", ns, writeOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	if err := s.ensureDefaultServiceCIDR(ctx); err != nil {
		return err
	}
	if err := s.ensureLocalAPIServices(ctx); err != nil {
		return err
	}
	if err := s.ensureAuthenticationConfigMap(ctx); err != nil {
		return err
	}
	return s.ensureDefaultServiceAccounts(ctx)
}

// ensureLocalAPIServices publishes each built-in group version as a Local,
// Available APIService (v1., v1.apps, ...), as kube-apiserver does.
func (s *Server) ensureLocalAPIServices(ctx context.Context) error {
	res, ok := s.table.Lookup(apiregistrationv1.SchemeGroupVersion.WithResource("apiservices"))
	if !ok {
		return nil
	}
	for _, gv := range s.table.GroupVersions() {
		priority := int32(1000)
		if gv.Group == "" {
			priority = 18000
		}
		svc := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
			Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: priority, VersionPriority: 15},
			Status: apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{{
				Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue, Reason: "Local",
				Message: "Local APIServices are always available", LastTransitionTime: metav1.NewTime(s.now())}}}}
		if _, err := s.create(ctx, res, "", svc, writeOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create APIService %s: %w", svc.Name, err)
		}
	}
	return nil
}

// ensureDefaultServiceCIDR publishes the Service range as the ServiceCIDR
// "kubernetes", Ready, as kube-apiserver does from
// --service-cluster-ip-range.
func (s *Server) ensureDefaultServiceCIDR(ctx context.Context) error {
	res, ok := s.table.Lookup(networkingv1.SchemeGroupVersion.WithResource("servicecidrs"))
	if !ok {
		return nil
	}
	cidr := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{s.cfg.ServiceCIDR}}}
	if _, err := s.create(ctx, res, "", cidr, writeOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the default ServiceCIDR: %w", err)
	}
	_, err := s.update(ctx, res, "", "kubernetes", statusResource, func(current k8sruntime.Object) (k8sruntime.Object, error) {
		c := current.(*networkingv1.ServiceCIDR)
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue,
			Reason: "Ready", Message: "Kubernetes Service CIDR is ready", ObservedGeneration: c.Generation})
		return c, nil
	}, writeOptions{})
	return err
}

func goVersion() string { return runtime.Version() }
func platform() string  { return runtime.GOOS + "/" + runtime.GOARCH }
