package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/apiserver"
	"github.com/minik8s/minik8s/pkg/apiserver/audit"
	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/apiserver/authz"
	"github.com/minik8s/minik8s/pkg/clusterconfig"
	"github.com/minik8s/minik8s/pkg/component"
	"github.com/minik8s/minik8s/pkg/controllermanager"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/storage"
	"github.com/minik8s/minik8s/pkg/storage/etcd"
)

// Config is the control plane's configuration, from `minik8s server` flags.
type Config struct {
	// DataDir holds etcd's data, the PKI, admin.kubeconfig and node-token.
	DataDir string
	// BindAddress and Port are where the apiserver listens (Port 0: any free port).
	BindAddress string
	Port        int
	// EtcdServers, when set, replaces the embedded etcd.
	EtcdServers []string
	// Hosts are extra names and IPs for the serving certificate (which
	// always names the machine's addresses and BindAddress).
	Hosts []string
	// AdvertiseAddress, when valid, is published as default/kubernetes'
	// endpoint, as kube-apiserver publishes its own (minik8s server);
	// minik8s up publishes the node's pod gateway instead.
	AdvertiseAddress netip.Addr
	Logger           *slog.Logger
	// BookmarkInterval is how often watches that allow bookmarks get one
	// (0: the apiserver's default, a minute).
	BookmarkInterval time.Duration
	// ClusterCIDR is carved into the nodes' pod CIDRs (default 10.244.0.0/16).
	ClusterCIDR string
	// ServiceCIDR is where Service cluster IPs come from (default 10.96.0.0/12).
	ServiceCIDR string
	// ClusterDomain is the cluster's DNS domain (default cluster.local).
	// With the two ranges it is published for nodes (pkg/clusterconfig).
	ClusterDomain string
	// Registry is the cluster's image registry (host:port, plain HTTP) as
	// nodes reach it, published for them; empty: none.
	Registry string
	// AuditLogPath is the audit log (audit.k8s.io/v1 Event lines);
	// default <DataDir>/audit.log, "-": no audit log. AuditPolicyFile is
	// an audit.k8s.io/v1 Policy (default: audit.DefaultPolicy), and
	// AuditLogMaxSizeMB where the log rotates (default 100).
	AuditLogPath      string
	AuditPolicyFile   string
	AuditLogMaxSizeMB int
	// DisableControllers names built-in controllers not to run: the
	// scheduler, or controller-manager ones (controllermanager.Names).
	DisableControllers []string
	// Controllers tunes the controller manager's controllers.
	Controllers controllermanager.Options
	// Ready, when set, is called once the apiserver serves.
	Ready func(ControlPlane)
}

// ControlPlane describes a running control plane to its callers.
type ControlPlane struct {
	URL            string // https://127.0.0.1:<port>
	KubeconfigPath string
	EtcdEndpoint   string // empty for an external etcd
	Server         *apiserver.Server
	Bundle         *pki.Bundle
	// NodeToken is the join token for nodes ("K10<ca-hash>::<id>.<secret>"),
	// also in NodeTokenPath (<data-dir>/node-token).
	NodeToken     string
	NodeTokenPath string
}

// DefaultClusterCIDR is where pod IPs come from, as kubeadm's flannel setup.
const DefaultClusterCIDR = "10.244.0.0/16"

// DefaultClusterDomain is the cluster's DNS domain, as Kubernetes'.
const DefaultClusterDomain = "cluster.local"

// KubeconfigName is the admin kubeconfig's file name under the data dir.
const KubeconfigName = "admin.kubeconfig"

func (c *Config) complete() error {
	if c.DataDir == "" {
		return errors.New("a data dir is required (--data-dir)")
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("port %d out of range", c.Port)
	}
	if c.BindAddress == "" {
		c.BindAddress = "0.0.0.0"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = DefaultClusterCIDR
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = apiserver.DefaultServiceCIDR
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	return c.clusterSettings().Validate()
}

// clusterSettings are what nodes take from the cluster (pkg/clusterconfig).
func (c *Config) clusterSettings() clusterconfig.Settings {
	return clusterconfig.Settings{ClusterCIDR: c.ClusterCIDR, ServiceCIDR: c.ServiceCIDR, ClusterDomain: c.ClusterDomain, Registry: c.Registry}
}

// Run runs the control plane's parts (Parts) until ctx ends or one of
// them fails; the error names the part ("apiserver: listen tcp ...").
func Run(ctx context.Context, cfg Config) error {
	parts, err := Parts(cfg)
	if err != nil {
		return err
	}
	return component.Run(ctx, parts...)
}

// Parts are the control plane's parts in start order, each started once
// the one before it is ready: etcd (embedded, or the client of an
// external one), the apiserver (ready once it serves, with the node
// token and the cluster settings in place), the scheduler and the
// controller manager, and "ready", which calls cfg.Ready. Stopped in
// reverse order, the controllers stop while the apiserver still answers:
// the scheduler releases its lease, so a restarted server schedules at
// once instead of waiting for the old lease to expire.
func Parts(cfg Config) ([]component.Part, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	db := &etcdPart{cfg: &cfg, ready: make(chan struct{})}
	api := &apiserverPart{cfg: &cfg, db: db, ready: make(chan struct{})}
	controllers, err := controllerParts(cfg, api)
	if err != nil {
		return nil, err
	}
	parts := append([]component.Part{db, api}, controllers...)
	if cfg.AdvertiseAddress.IsValid() {
		parts = append(parts, component.Func("kubernetes service", func(ctx context.Context) error {
			return publishKubernetesService(ctx, &cfg, api.cp)
		}))
	}
	return append(parts, component.Do("ready", func(context.Context) error {
		if cfg.Ready != nil {
			cfg.Ready(api.cp)
		}
		return nil
	})), nil
}

// etcdPart is the cluster's store: an embedded etcd, or a client of the
// external one.
type etcdPart struct {
	cfg   *Config
	ready chan struct{}
	// Set before ready closes.
	store    storage.Store
	endpoint string // the embedded etcd's; empty for an external one
}

func (p *etcdPart) Name() string           { return "etcd" }
func (p *etcdPart) Ready() <-chan struct{} { return p.ready }

func (p *etcdPart) Start(ctx context.Context) error {
	log := p.cfg.Logger
	if len(p.cfg.EtcdServers) > 0 {
		s, err := etcd.Dial(ctx, p.cfg.EtcdServers, etcd.WithLogger(log))
		if err != nil {
			return err
		}
		defer s.Close()
		p.store = s
		close(p.ready)
		<-ctx.Done()
		return nil
	}
	e, err := etcd.StartEmbedded(ctx, etcd.EmbedConfig{Dir: filepath.Join(p.cfg.DataDir, "etcd"), Logger: log})
	if err != nil {
		return err
	}
	defer e.Close()
	s := etcd.New(e.Client, etcd.WithLogger(log))
	defer s.Close()
	p.store, p.endpoint = s, e.Endpoint
	close(p.ready)
	select {
	case err := <-e.Err():
		return err
	case <-ctx.Done():
		return nil
	}
}

// apiserverPart is the apiserver on its TLS port, with the cluster's
// certificates, admin.kubeconfig, the node token and the cluster
// settings: ready once all are in place.
type apiserverPart struct {
	cfg   *Config
	db    *etcdPart
	ready chan struct{}
	// authorizer and escalation are set once the apiserver serves: their
	// informers list through it.
	authorizer *authz.Deferred
	escalation atomic.Pointer[authz.Escalation]
	// cp describes the control plane, set before ready closes.
	cp ControlPlane
}

func (p *apiserverPart) Name() string           { return "apiserver" }
func (p *apiserverPart) Ready() <-chan struct{} { return p.ready }

func (p *apiserverPart) Start(ctx context.Context) error {
	cfg, log := p.cfg, p.cfg.Logger
	key, err := storage.LoadOrCreateKey(filepath.Join(cfg.DataDir, "pki", "encryption.key"))
	if err != nil {
		return err
	}
	bundle, err := pki.Ensure(pki.Config{Dir: filepath.Join(cfg.DataDir, "pki"), Hosts: servingHosts(*cfg)})
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	tokens, err := authn.NewTokenFile(bundle.TokenFile)
	if err != nil {
		return err
	}
	kubeletCert, err := bundle.KubeletClientCert()
	if err != nil {
		return err
	}
	// Bootstrap tokens are Secrets: the authenticator reads them through
	// the apiserver's storage path (decrypting), once the apiserver exists.
	auditLog, err := openAuditLog(*cfg)
	if err != nil {
		return err
	}
	if auditLog != nil {
		defer auditLog.Close()
	}
	secrets := &secretReader{}
	saSigner, saTokens, err := serviceAccountTokens(bundle, secrets)
	if err != nil {
		return err
	}
	p.authorizer = authz.NewDeferred()
	api, err := apiserver.New(apiserver.Config{
		Store: p.db.store, EncryptionKey: key, Logger: log, BookmarkInterval: cfg.BookmarkInterval, ServiceCIDR: cfg.ServiceCIDR,
		Authenticator: authn.Union(authn.NewX509(bundle.CAPool), tokens, authn.NewBootstrapToken(secrets.get, nil), saTokens),
		Authorizer:    authz.Union(authz.Masters, p.authorizer),
		Admit: func(ctx context.Context, u authz.User, obj k8sruntime.Object) error {
			if e := p.escalation.Load(); e != nil {
				return e.Admit(ctx, u, obj)
			}
			return nil
		},
		RulesFor: func(ctx context.Context, u authz.User, ns string) ([]rbacv1.PolicyRule, error) {
			if e := p.escalation.Load(); e != nil {
				return e.RBAC.RulesFor(ctx, u, ns)
			}
			return nil, errors.New("authorization is not ready")
		},
		KubeletClientCert:    kubeletCert,
		Audit:                auditLog,
		ServiceAccountTokens: saSigner,
		ClientCAPEM:          bundle.CAPEM,
		FrontProxy: &apiserver.FrontProxyConfig{CAPEM: bundle.FrontProxy.CAPEM, AllowedNames: []string{pki.FrontProxyClientUser},
			ClientCertPEM: bundle.FrontProxy.ClientCertPEM, ClientKeyPEM: bundle.FrontProxy.ClientKeyPEM},
	})
	if err != nil {
		return err
	}
	secrets.api = api
	if err := api.EnsureDefaults(ctx); err != nil {
		return err
	}
	if err := api.StartCustomResources(ctx); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	tlsConfig := &tls.Config{
		Certificates: []tls.Certificate{bundle.Serving},
		ClientAuth:   tls.RequestClientCert, // verified by authn, so a foreign cert gets a 401, not a TLS failure
		ClientCAs:    bundle.CAPool,
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
	}
	srv := &http.Server{Handler: api.Handler(), TLSConfig: tlsConfig, ReadHeaderTimeout: 30 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ServeTLS(ln, "", "") }()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		// Watches are long-lived; closing rather than waiting on them.
		if err := srv.Shutdown(shutdownCtx); err != nil {
			_ = srv.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	if err := p.serving(ctx, port, api, bundle); err != nil {
		return err
	}
	close(p.ready)
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
		return nil
	}
}

// serving writes admin.kubeconfig for the apiserver serving on port,
// ensures the node token and publishes the cluster settings; then p.cp
// describes the control plane.
func (p *apiserverPart) serving(ctx context.Context, port int, api *apiserver.Server, bundle *pki.Bundle) error {
	cfg, log := p.cfg, p.cfg.Logger
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	kubeconfig := filepath.Join(cfg.DataDir, KubeconfigName)
	if err := pki.WriteKubeconfig(kubeconfig, url, bundle); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	log.Info("apiserver serving", "url", url, "kubeconfig", kubeconfig)
	nodeTokenPath := filepath.Join(cfg.DataDir, NodeTokenName)
	admin, err := kubernetes.NewForConfig(loopbackConfig(url, bundle))
	if err != nil {
		return err
	}
	if err := p.startAuthorization(ctx, admin); err != nil {
		return err
	}
	if err := api.StartAggregation(ctx, loopbackConfig(url, bundle)); err != nil {
		return err
	}
	nodeToken, err := ensureNodeToken(ctx, admin, nodeTokenPath, bundle.CAPEM, time.Now(), log)
	if err != nil {
		return err
	}
	if err := clusterconfig.Publish(ctx, admin, cfg.clusterSettings()); err != nil {
		return err
	}
	if err := ensureDefaultStorageClass(ctx, admin); err != nil {
		return err
	}
	if err := ensureSystemPriorityClasses(ctx, admin); err != nil {
		return err
	}
	if err := ensureMandatoryFlowControl(ctx, admin); err != nil {
		return err
	}
	log.Info("nodes join with minik8s agent --server https://<address>:<port> --token <join token>",
		"port", port, "joinTokenFile", nodeTokenPath)
	p.cp = ControlPlane{URL: url, KubeconfigPath: kubeconfig, EtcdEndpoint: p.db.endpoint, Server: api, Bundle: bundle,
		NodeToken: nodeToken, NodeTokenPath: nodeTokenPath}
	return nil
}

// openAuditLog opens the audit log cfg asks for (nil for "-").
func openAuditLog(cfg Config) (*audit.Logger, error) {
	path := cfg.AuditLogPath
	switch path {
	case "-":
		return nil, nil
	case "":
		path = filepath.Join(cfg.DataDir, "audit.log")
	}
	policy := audit.DefaultPolicy()
	if cfg.AuditPolicyFile != "" {
		var err error
		if policy, err = audit.LoadPolicy(cfg.AuditPolicyFile); err != nil {
			return nil, err
		}
	}
	return audit.NewLogger(audit.Config{Path: path, Policy: policy, MaxSizeMB: cfg.AuditLogMaxSizeMB})
}

// startAuthorization starts the Node and RBAC authorizers on informers
// of this apiserver (as kube-apiserver's loopback client does) and
// reconciles the default roles and bindings. Until then, only
// system:masters is served.
func (p *apiserverPart) startAuthorization(ctx context.Context, admin kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactory(admin, 0)
	rbac := authz.NewRBAC(factory)
	node, err := authz.NewNode(factory, admin)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	context.AfterFunc(ctx, factory.Shutdown)
	if err := authz.Reconcile(ctx, admin); err != nil {
		return fmt.Errorf("default RBAC policy: %w", err)
	}
	p.escalation.Store(&authz.Escalation{RBAC: rbac, Authorizer: authz.Union(authz.Masters, node, rbac)})
	p.authorizer.Set(authz.Union(node, rbac))
	return nil
}

// secretReader reads kube-system's Secrets for the bootstrap token
// authenticator, through api (set once it is built; the server accepts no
// request before).
type secretReader struct{ api *apiserver.Server }

func (r *secretReader) get(ctx context.Context, name string) (*corev1.Secret, error) {
	if r.api == nil {
		return nil, errors.New("apiserver not ready")
	}
	obj, err := r.api.Get(ctx, corev1.SchemeGroupVersion.WithResource("secrets"), metav1.NamespaceSystem, name)
	if err != nil {
		return nil, err
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, fmt.Errorf("secret %s: got %T", name, obj)
	}
	return s, nil
}

// servingHosts are the names the serving certificate must carry: the
// configured ones, the address the apiserver binds to and every address of
// this machine, so that nodes (which verify the certificate, pkg/bootstrap)
// can reach it by any of them. The CA stays when the list grows, so join
// tokens stay valid.
func servingHosts(cfg Config) []string {
	hosts := slices.Clone(cfg.Hosts)
	// In-cluster clients reach the apiserver as the `kubernetes` Service.
	hosts = append(hosts, "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if ip, err := KubernetesServiceIP(cfg.ServiceCIDR); err == nil {
		hosts = append(hosts, ip.String())
	}
	if ip := net.ParseIP(cfg.BindAddress); ip != nil && !ip.IsUnspecified() {
		hosts = append(hosts, ip.String())
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return hosts
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && (n.IP.To4() != nil || n.IP.IsGlobalUnicast()) {
			hosts = append(hosts, n.IP.String())
		}
	}
	return hosts
}
