package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationhelper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	apiservicelisters "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"
	availabilitymetrics "k8s.io/kube-aggregator/pkg/controllers/status/metrics"
	"k8s.io/kube-aggregator/pkg/controllers/status/remote"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/apiserver/authn"
)

// The aggregation layer, as kube-aggregator: an APIService that names a
// Service (spec.service) makes /apis/<group>/<version>/... a proxy to
// that Service's ready endpoints, over TLS verified with spec.caBundle
// (for the name <service>.<namespace>.svc) unless insecureSkipTLSVerify.
// The caller is named to the backend in the front proxy's headers
// (X-Remote-User, X-Remote-Uid, X-Remote-Group, X-Remote-Extra-*), sent
// with the front proxy's client certificate; the ConfigMap
// kube-system/extension-apiserver-authentication tells extension servers
// which CA and names to trust for that. Its own credentials (Authorization,
// Impersonate-*) never travel on.
//
// kube-aggregator's remote availability controller keeps each APIService's
// Available condition (ServiceNotFound, ServicePortError, MissingEndpoints,
// FailedDiscoveryCheck, or Passed: "all checks passed"); an APIService that
// is not Available answers 503. Discovery lists the aggregated group
// versions in /apis and /apis/<group>, and aggregated discovery adds the
// resources each available backend lists at /apis/<group>/<version>.

// FrontProxyConfig is the front proxy's trust: the CA extension servers
// verify its client certificate with, the names they allow, and the
// certificate itself.
type FrontProxyConfig struct {
	CAPEM                       []byte
	AllowedNames                []string
	ClientCertPEM, ClientKeyPEM []byte
}

// AuthenticationConfigMap is the ConfigMap in kube-system that extension
// API servers (k8s.io/apiserver's delegated authentication) read.
const AuthenticationConfigMap = "extension-apiserver-authentication"

// The front proxy's headers, as kube-apiserver's defaults.
var (
	remoteUserHeaders   = []string{"X-Remote-User"}
	remoteUIDHeaders    = []string{"X-Remote-Uid"}
	remoteGroupHeaders  = []string{"X-Remote-Group"}
	remoteExtraPrefixes = []string{"X-Remote-Extra-"}
)

// aggregatedDiscoveryTimeout bounds a backend's discovery answer, as
// kube-aggregator's.
const aggregatedDiscoveryTimeout = 5 * time.Second

// aggregator holds the APIServices that name a Service.
type aggregator struct {
	certPEM, keyPEM []byte
	targets         atomic.Pointer[map[schema.GroupVersion]*apiServiceTarget]
	// resources is what each available backend lists at
	// /apis/<group>/<version>, for aggregated discovery.
	mu        sync.Mutex
	resources map[schema.GroupVersion]*metav1.APIResourceList
}

// apiServiceTarget is one APIService with a Service, and the transport to it.
type apiServiceTarget struct {
	svc       *apiregistrationv1.APIService
	transport http.RoundTripper
	err       error
}

func newAggregator(fp *FrontProxyConfig) *aggregator {
	a := &aggregator{resources: map[schema.GroupVersion]*metav1.APIResourceList{}}
	if fp != nil {
		a.certPEM, a.keyPEM = fp.ClientCertPEM, fp.ClientKeyPEM
	}
	return a
}

// target is the APIService serving path, nil when none does (the path is
// not under /apis/<group>/<version>, or that group version is local).
func (a *aggregator) target(path string) *apiServiceTarget {
	parts := splitPath(path)
	if len(parts) < 3 || parts[0] != "apis" {
		return nil
	}
	m := a.targets.Load()
	if m == nil {
		return nil
	}
	return (*m)[schema.GroupVersion{Group: parts[1], Version: parts[2]}]
}

// StartAggregation starts the aggregation layer on informers of this
// apiserver reached through loopback (as kube-aggregator runs beside
// kube-apiserver): the availability controller and the proxy table. It
// returns once the informers have synced.
func (s *Server) StartAggregation(ctx context.Context, loopback *rest.Config) error {
	kube, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return err
	}
	agg, err := aggregatorclient.NewForConfig(loopback)
	if err != nil {
		return err
	}
	kubeFactory := kubeinformers.NewSharedInformerFactory(kube, 0)
	// A resync period, so that the handlers below may resync.
	aggFactory := aggregatorinformers.NewSharedInformerFactory(agg, 5*time.Minute)
	apiServices := aggFactory.Apiregistration().V1().APIServices()
	a := s.aggregator
	available, err := remote.New(apiServices, kubeFactory.Core().V1().Services(), kubeFactory.Discovery().V1().EndpointSlices(),
		agg.ApiregistrationV1(), nil, func() ([]byte, []byte) { return a.certPEM, a.keyPEM }, serviceResolver{s}, availabilitymetrics.New())
	if err != nil {
		return fmt.Errorf("aggregation: availability controller: %w", err)
	}
	kick := make(chan struct{}, 1)
	enqueue := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	// Resynced as the availability controller's: a backend's discovery
	// is fetched again every 30s.
	if _, err := apiServices.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	}, 30*time.Second); err != nil {
		return err
	}
	kubeFactory.Start(ctx.Done())
	aggFactory.Start(ctx.Done())
	context.AfterFunc(ctx, kubeFactory.Shutdown)
	context.AfterFunc(ctx, aggFactory.Shutdown)
	for typ, ok := range kubeFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("aggregation: %v informer did not sync", typ)
		}
	}
	for typ, ok := range aggFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("aggregation: %v informer did not sync", typ)
		}
	}
	s.syncAggregation(ctx, apiServices.Lister())
	go available.Run(1, ctx.Done())
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
				s.syncAggregation(ctx, apiServices.Lister())
			}
		}
	}()
	return nil
}

// syncAggregation rebuilds the proxy table from the APIServices, fetches
// the available backends' discovery and rebuilds discovery.
func (s *Server) syncAggregation(ctx context.Context, lister apiservicelisters.APIServiceLister) {
	a := s.aggregator
	list, err := lister.List(labels.Everything())
	if err != nil {
		s.log.Error("aggregation: list APIServices", "err", err)
		return
	}
	targets := map[schema.GroupVersion]*apiServiceTarget{}
	for _, svc := range list {
		if svc.Spec.Service == nil || svc.Spec.Group == "" {
			continue
		}
		t := &apiServiceTarget{svc: svc}
		// client-go caches transports by their TLS config.
		t.transport, t.err = transport.New(remote.BuildTransportConfig(nil, a.certPEM, a.keyPEM, svc))
		targets[schema.GroupVersion{Group: svc.Spec.Group, Version: svc.Spec.Version}] = t
	}
	a.targets.Store(&targets)
	s.refreshDiscovery() // at once for the group versions added or gone

	fetched := map[schema.GroupVersion]*metav1.APIResourceList{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for gv, t := range targets {
		if t.err != nil || !apiregistrationhelper.IsAPIServiceConditionTrue(t.svc, apiregistrationv1.Available) {
			continue
		}
		wg.Go(func() {
			list, err := s.backendDiscovery(ctx, t)
			if err != nil {
				s.log.Debug("aggregation: discovery", "apiservice", t.svc.Name, "err", err)
				return
			}
			mu.Lock()
			fetched[gv] = list
			mu.Unlock()
		})
	}
	wg.Wait()
	a.mu.Lock()
	a.resources = fetched
	a.mu.Unlock()
	s.refreshDiscovery()
}

// backendDiscovery is what t's backend lists at /apis/<group>/<version>,
// asked as kube-aggregator asks it (system:kube-aggregator in
// system:masters).
func (s *Server) backendDiscovery(ctx context.Context, t *apiServiceTarget) (*metav1.APIResourceList, error) {
	ref := t.svc.Spec.Service
	loc, err := serviceResolver{s}.ResolveEndpoint(ref.Namespace, ref.Name, ptr.Deref(ref.Port, 443))
	if err != nil {
		return nil, err
	}
	loc.Path = "/apis/" + t.svc.Spec.Group + "/" + t.svc.Spec.Version
	ctx, cancel := context.WithTimeout(ctx, aggregatedDiscoveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	transport.SetAuthProxyHeaders(req, "system:kube-aggregator", "", []string{"system:masters"}, nil)
	resp, err := (&http.Client{Transport: t.transport}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", loc.Path, resp.Status)
	}
	var list metav1.APIResourceList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET %s: %w", loc.Path, err)
	}
	list.GroupVersion = t.svc.Spec.Group + "/" + t.svc.Spec.Version
	return &list, nil
}

// addAggregated adds the aggregated group versions to d: each group with
// its versions by versionPriority (the first preferred), in /apis and
// /apis/<group>; the resources of those whose backend answered, for
// aggregated discovery.
func (a *aggregator) addAggregated(d *discovery) {
	m := a.targets.Load()
	if m == nil || len(*m) == 0 {
		return
	}
	var svcs []*apiregistrationv1.APIService
	for _, t := range *m {
		svcs = append(svcs, t.svc)
	}
	a.mu.Lock()
	resources := a.resources
	a.mu.Unlock()
	for _, group := range apiregistrationhelper.SortedByGroupAndVersion(svcs) {
		name := group[0].Spec.Group
		g, ok := d.byGroup[name]
		if !ok {
			g = &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: name}
			d.byGroup[name] = g
		}
		for _, svc := range group {
			v := metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + svc.Spec.Version, Version: svc.Spec.Version}
			if !slices.Contains(g.Versions, v) {
				g.Versions = append(g.Versions, v)
			}
			if !ok && g.PreferredVersion.Version == "" {
				g.PreferredVersion = v
			}
			gv := schema.GroupVersion{Group: name, Version: svc.Spec.Version}
			if list, found := resources[gv]; found {
				d.resources[gv] = list
			} else {
				delete(d.resources, gv) // served by the backend, not here
			}
		}
	}
	d.orderGroups()
}

// proxyToAPIService passes r on to t's backend as the authenticated user.
func (s *Server) proxyToAPIService(w http.ResponseWriter, r *http.Request, t *apiServiceTarget) {
	if !apiregistrationhelper.IsAPIServiceConditionTrue(t.svc, apiregistrationv1.Available) {
		writeError(w, apierrors.NewServiceUnavailable("service unavailable"))
		return
	}
	if t.err != nil {
		writeError(w, apierrors.NewInternalError(t.err))
		return
	}
	u, ok := authn.UserFrom(r.Context())
	if !ok { // no authenticator: in-process tests only
		u = &authn.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
	}
	ref := t.svc.Spec.Service
	loc, err := serviceResolver{s}.ResolveEndpoint(ref.Namespace, ref.Name, ptr.Deref(ref.Port, 443))
	if err != nil {
		s.log.Debug("aggregation: resolve", "apiservice", t.svc.Name, "err", err)
		writeError(w, apierrors.NewServiceUnavailable("service unavailable"))
		return
	}
	location := &url.URL{Scheme: "https", Host: loc.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
	ctx := r.Context()
	if len(splitPath(r.URL.Path)) == 3 { // discovery: quick, or not at all
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, aggregatedDiscoveryTimeout)
		defer cancel()
	}
	out := r.WithContext(ctx)
	out.Header = r.Header.Clone()
	out.URL, out.Host = location, location.Host
	// The caller's credentials are for us; who they are travels in the
	// front proxy's headers.
	for h := range out.Header {
		if h == "Authorization" || strings.HasPrefix(h, "Impersonate-") {
			out.Header.Del(h)
		}
	}
	upgrade := httpstream.IsUpgradeRequest(r)
	rt := transport.NewAuthProxyRoundTripper(u.Name, u.UID, u.Groups, u.Extra, t.transport)
	if upgrade {
		// An upgrade dials the backend itself, past rt: the headers go on
		// the request ahead, as kube-aggregator does.
		transport.SetAuthProxyHeaders(out, u.Name, u.UID, u.Groups, u.Extra)
	}
	h := utilproxy.NewUpgradeAwareHandler(location, rt, true, upgrade, proxyResponder{s})
	h.ServeHTTP(w, out)
}

// proxyResponder answers a failed proxy as kube-aggregator: 503.
type proxyResponder struct{ s *Server }

func (p proxyResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	p.s.log.Debug("aggregation: proxy", "path", r.URL.Path, "err", err)
	writeError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err)))
}

// ensureAuthenticationConfigMap publishes how extension API servers
// authenticate this apiserver's callers (client-ca-file) and its front
// proxy (requestheader-*), as kube-apiserver's cluster authentication
// trust controller does, in kube-system/extension-apiserver-authentication.
func (s *Server) ensureAuthenticationConfigMap(ctx context.Context) error {
	res, ok := s.table.Lookup(corev1.SchemeGroupVersion.WithResource("configmaps"))
	if !ok || len(s.cfg.ClientCAPEM) == 0 && s.cfg.FrontProxy == nil {
		return nil
	}
	data := map[string]string{}
	if len(s.cfg.ClientCAPEM) > 0 {
		data["client-ca-file"] = string(s.cfg.ClientCAPEM)
	}
	if fp := s.cfg.FrontProxy; fp != nil {
		jsonList := func(l []string) string {
			b, _ := json.Marshal(l)
			return string(b)
		}
		data["requestheader-client-ca-file"] = string(fp.CAPEM)
		data["requestheader-allowed-names"] = jsonList(fp.AllowedNames)
		data["requestheader-username-headers"] = jsonList(remoteUserHeaders)
		data["requestheader-uid-headers"] = jsonList(remoteUIDHeaders)
		data["requestheader-group-headers"] = jsonList(remoteGroupHeaders)
		data["requestheader-extra-headers-prefix"] = jsonList(remoteExtraPrefixes)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: AuthenticationConfigMap, Namespace: metav1.NamespaceSystem}, Data: data}
	_, err := s.create(ctx, res, metav1.NamespaceSystem, cm, writeOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = s.update(ctx, res, metav1.NamespaceSystem, AuthenticationConfigMap, mainResource, func(current k8sruntime.Object) (k8sruntime.Object, error) {
			c := current.(*corev1.ConfigMap)
			c.Data = data
			return c, nil
		}, writeOptions{})
	}
	if err != nil {
		return fmt.Errorf("publish %s/%s: %w", metav1.NamespaceSystem, AuthenticationConfigMap, err)
	}
	return nil
}
