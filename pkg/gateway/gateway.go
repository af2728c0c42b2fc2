package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/hostservice"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/supervisor"
)

// Defaults and names.
const (
	// DefaultPort is where nginx listens on its host; pods reach it
	// through the gateway Service's port 80.
	DefaultPort = 10080
	// ServiceName is the gateway's Service in kube-system.
	ServiceName = "minik8s-gateway"
	ManagedBy   = "gateway.minik8s.io"
	// ConditionReady is the condition the gateway sets on DNSRecords.
	ConditionReady = "Ready"
)

// DNSRecords is the resource of minik8s.io/v1 DNSRecords.
var DNSRecords = minik8sv1.SchemeGroupVersion.WithResource("dnsrecords")

// Config describes the gateway.
type Config struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Dir holds nginx.conf, nginx's logs and temp files, and the hosts file
	// (required).
	Dir string
	// Port is nginx's port (default DefaultPort).
	Port int
	// NetNS is the node namespace nginx runs in; empty: ours.
	NetNS string
	// Address is where pods reach nginx; unset: the pod-bridge gateway of
	// NodeName (the node nginx runs on).
	Address  netip.Addr
	NodeName string
	// AllowNets are the only client networks nginx answers (none: all).
	AllowNets []string
	// Nginx is the nginx binary (default: nginx on PATH, else /usr/sbin/nginx).
	Nginx string
	// HostsFile is the hosts file CoreDNS serves (default Dir/hosts).
	HostsFile string
	// MinSyncPeriod coalesces changes (default 100ms).
	MinSyncPeriod time.Duration
	Logger        *slog.Logger
	// Ready, when set, is called once nginx runs on a configuration it
	// accepted.
	Ready func()
}

// Gateway runs nginx and keeps its routes in step with the cluster.
type Gateway struct {
	cfg      Config
	log      *slog.Logger
	confPath string
	nginx    *supervisor.Process
	// applied is what nginx.conf holds and refused the last configuration
	// nginx -t refused (not tested again), both rendered without an id;
	// id is the id of nginx.conf, made of run (this Gateway's, random)
	// and seq (one per configuration written). Only the sync loop uses
	// them.
	applied, refused string
	run              string
	seq              int
	id               string

	mu        sync.Mutex
	clusterIP string // the gateway Service's, once published
}

// FindNginx looks for the nginx binary.
func FindNginx() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", nil
	}
	return "", errors.New("nginx not found (apt-get install nginx; make deps does)")
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Gateway, error) {
	if cfg.Client == nil || cfg.Dynamic == nil {
		return nil, errors.New("gateway: clients are required")
	}
	if cfg.Dir == "" {
		return nil, errors.New("gateway: a directory is required")
	}
	if !cfg.Address.IsValid() && cfg.NodeName == "" {
		return nil, errors.New("gateway: an address or a node name is required")
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.Nginx == "" {
		p, err := FindNginx()
		if err != nil {
			return nil, err
		}
		cfg.Nginx = p
	}
	if cfg.HostsFile == "" {
		cfg.HostsFile = filepath.Join(cfg.Dir, "hosts")
	}
	if cfg.MinSyncPeriod <= 0 {
		cfg.MinSyncPeriod = 100 * time.Millisecond
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	run := make([]byte, 4)
	if _, err := rand.Read(run); err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, log: log.With("component", "gateway"), confPath: filepath.Join(cfg.Dir, "nginx.conf"), run: hex.EncodeToString(run)}
	var err error
	g.nginx, err = supervisor.New(supervisor.Config{
		Name: "nginx", Path: cfg.Nginx, Dir: cfg.Dir, LogPath: filepath.Join(cfg.Dir, "nginx.log"), NetNS: cfg.NetNS, Logger: log,
		PIDFile: filepath.Join(cfg.Dir, "nginx.supervisor.pid"),
		Args:    []string{"-p", cfg.Dir, "-c", g.confPath, "-e", filepath.Join(cfg.Dir, "error.log"), "-g", "daemon off;"},
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// HostsFile is the file to give CoreDNS (pkg/dns Config.HostsFile).
func (g *Gateway) HostsFile() string { return g.cfg.HostsFile }

// Start runs nginx, publishes the gateway Service and keeps routes, the
// hosts file and statuses in step until ctx ends. An nginx that refuses
// the gateway's first configuration fails it at once; one that does not
// serve yet (another server holds its port) is a warning, and it is
// restarted until it serves.
func (g *Gateway) Start(ctx context.Context) error {
	if err := g.prepare(); err != nil {
		return err
	}
	if err := g.testConfig(ctx, g.confPath); err != nil {
		return fmt.Errorf("nginx refused its configuration (see %s): %w", g.confPath, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	// What nginx's supervisor or the Service's publisher return before
	// ctx ends stops the gateway.
	failed := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := g.nginx.Start(ctx); err != nil {
			failed <- fmt.Errorf("nginx: %w", err)
		}
	}()

	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	go func() {
		defer wg.Done()
		err := hostservice.Publish(ctx, hostservice.PublishConfig{
			Client: g.cfg.Client, Address: g.cfg.Address, NodeName: g.cfg.NodeName, Logger: g.log,
			Service: hostservice.Service{
				Namespace: metav1.NamespaceSystem, Name: ServiceName, ManagedBy: ManagedBy,
				Labels: map[string]string{"app.kubernetes.io/name": ServiceName},
				Ports:  []hostservice.Port{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: int32(g.cfg.Port)}},
			},
			Published: func(svc *corev1.Service) {
				g.mu.Lock()
				moved := g.clusterIP != svc.Spec.ClusterIP
				g.clusterIP = svc.Spec.ClusterIP
				g.mu.Unlock()
				if moved {
					poke()
				}
			},
		})
		if err != nil {
			failed <- fmt.Errorf("gateway service: %w", err)
		}
	}()

	factory := informers.NewSharedInformerFactory(g.cfg.Client, 0)
	dynFactory := dynamicinformer.NewDynamicSharedInformerFactory(g.cfg.Dynamic, 0)
	services := factory.Core().V1().Services()
	ingresses := factory.Networking().V1().Ingresses()
	records := dynFactory.ForResource(DNSRecords)
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() },
	}
	for _, inf := range []cache.SharedIndexInformer{services.Informer(), ingresses.Informer(), records.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	dynFactory.Start(ctx.Done())
	defer factory.Shutdown()
	defer dynFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), services.Informer().HasSynced, ingresses.Informer().HasSynced, records.Informer().HasSynced) {
		return nil
	}
	select {
	case <-g.nginx.Started():
	case err := <-failed:
		return err
	case <-ctx.Done():
		return nil
	}
	if g.cfg.Ready != nil {
		g.cfg.Ready()
	}
	// A SIGHUP kills an nginx that has not set up its signals yet; one
	// that answers has (its master does so before it starts workers).
	if err := g.checkServing(ctx); err != nil && ctx.Err() == nil {
		g.log.Warn("nginx is not serving yet", "err", err)
	}
	g.log.Info("gateway started", "port", g.cfg.Port, "dir", g.cfg.Dir)
	resync := time.NewTicker(time.Minute)
	defer resync.Stop()
	for {
		start := time.Now()
		err := g.sync(ctx, services.Lister().List, ingresses.Lister().List, records.Lister().List)
		if err != nil && ctx.Err() == nil {
			g.log.Error("sync gateway", "err", err)
			go func() {
				select {
				case <-time.After(2 * time.Second):
					poke()
				case <-ctx.Done():
				}
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case <-changed:
		case <-resync.C:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(g.cfg.MinSyncPeriod - time.Since(start)):
		}
	}
}

// prepare writes a configuration without routes so nginx can start.
func (g *Gateway) prepare() error {
	if err := os.MkdirAll(filepath.Join(g.cfg.Dir, "tmp"), 0o755); err != nil {
		return fmt.Errorf("gateway dir: %w", err)
	}
	// nginx's workers run as nobody and buffer large bodies here.
	if err := os.Chmod(filepath.Join(g.cfg.Dir, "tmp"), 0o777); err != nil {
		return err
	}
	conf := nginxConfig(g.cfg.Dir, g.cfg.Port, g.cfg.AllowNets, "", routes{})
	id, full := g.nextConfig(routes{})
	if err := pki.WriteFileAtomic(g.confPath, []byte(full)); err != nil {
		return fmt.Errorf("nginx.conf: %w", err)
	}
	g.applied, g.id = conf, id
	if _, err := os.Stat(g.cfg.HostsFile); errors.Is(err, os.ErrNotExist) {
		if err := writeReadable(g.cfg.HostsFile, []byte(hostsFile("", nil))); err != nil {
			return err
		}
	}
	return nil
}

type (
	serviceLister  func(labels.Selector) ([]*corev1.Service, error)
	ingressLister  func(labels.Selector) ([]*networkingv1.Ingress, error)
	unstructLister func(labels.Selector) ([]runtime.Object, error)
)

// sync renders routes from the caches and applies them: nginx.conf (test,
// then reload), the hosts file, statuses.
func (g *Gateway) sync(ctx context.Context, listServices serviceLister, listIngresses ingressLister, listRecords unstructLister) error {
	svcs, err := listServices(labels.Everything())
	if err != nil {
		return err
	}
	byName := map[string]*corev1.Service{}
	for _, s := range svcs {
		byName[s.Namespace+"/"+s.Name] = s
	}
	ings, err := listIngresses(labels.Everything())
	if err != nil {
		return err
	}
	objs, err := listRecords(labels.Everything())
	if err != nil {
		return err
	}
	var recs []*minik8sv1.DNSRecord
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		rec := &minik8sv1.DNSRecord{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rec); err != nil {
			g.log.Warn("undecodable dnsrecord", "name", u.GetNamespace()+"/"+u.GetName(), "err", err)
			continue
		}
		recs = append(recs, rec)
	}
	r, problems := build(func(ns, name string) (*corev1.Service, bool) {
		s, ok := byName[ns+"/"+name]
		return s, ok
	}, recs, ings)

	// Until nginx answers with the configuration of these routes, no
	// record is reported routed.
	notServing := g.applyNginx(ctx, r)
	if notServing == nil {
		notServing = g.checkServing(ctx)
	}
	var errs []error
	if !errors.Is(notServing, errRefusedBefore) {
		errs = append(errs, notServing) // retried
	}
	g.mu.Lock()
	addr := g.clusterIP
	g.mu.Unlock()
	if err := writeIfChanged(g.cfg.HostsFile, []byte(hostsFile(addr, r.names()))); err != nil {
		errs = append(errs, err)
	}
	if addr != "" {
		for _, rec := range recs {
			errs = append(errs, g.recordStatus(ctx, rec, addr, problems[objectKey{"DNSRecord", rec.Namespace, rec.Name}], notServing))
		}
		for _, ing := range ings {
			errs = append(errs, g.ingressStatus(ctx, ing, addr))
		}
	}
	return errors.Join(errs...)
}

// nextConfig is nginx.conf for r with a new id.
func (g *Gateway) nextConfig(r routes) (id, full string) {
	g.seq++
	id = fmt.Sprintf("%s-%d", g.run, g.seq)
	return id, nginxConfig(g.cfg.Dir, g.cfg.Port, g.cfg.AllowNets, id, r)
}

// errRefusedBefore: the routes are those of a configuration nginx -t
// refused; a retry would not help, a change might.
var errRefusedBefore = errors.New("nginx refused the configuration of these routes (kept the old one; see nginx.conf.next)")

// applyNginx installs the configuration of r when it differs: nginx -t
// first, then SIGHUP. A configuration nginx refused is not tested again:
// that is errRefusedBefore.
func (g *Gateway) applyNginx(ctx context.Context, r routes) error {
	conf := nginxConfig(g.cfg.Dir, g.cfg.Port, g.cfg.AllowNets, "", r)
	switch conf {
	case g.applied:
		return nil
	case g.refused:
		return errRefusedBefore
	}
	id, full := g.nextConfig(r)
	next := g.confPath + ".next"
	if err := os.WriteFile(next, []byte(full), 0o644); err != nil {
		return err
	}
	if err := g.testConfig(ctx, next); err != nil {
		g.refused = conf
		return fmt.Errorf("nginx refused the new configuration (kept the old one; see %s): %w", next, err)
	}
	if err := os.Rename(next, g.confPath); err != nil {
		return err
	}
	g.applied, g.id = conf, id
	if err := g.nginx.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("reload nginx: %w", err)
	}
	g.log.Info("nginx reloaded", "conf", g.confPath)
	return nil
}

// testConfig has nginx test the configuration at path (nginx -t); a
// refusal is an error with nginx's words, on one line.
func (g *Gateway) testConfig(ctx context.Context, path string) error {
	out, err := exec.CommandContext(ctx, g.cfg.Nginx, "-t", "-q", "-p", g.cfg.Dir, "-c", path, "-e", filepath.Join(g.cfg.Dir, "error.log")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.Join(strings.Fields(string(out)), " "))
	}
	return nil
}

// recordStatus reports rec routed unless it has problems or nginx does
// not serve the routes (notServing).
func (g *Gateway) recordStatus(ctx context.Context, rec *minik8sv1.DNSRecord, addr string, probs []problem, notServing error) error {
	want := rec.Status.DeepCopy()
	want.Address = addr
	want.ObservedGeneration = rec.Generation
	cond := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: "Routed",
		Message: fmt.Sprintf("%s resolves to %s; every path is routed", rec.Spec.Host, addr), ObservedGeneration: rec.Generation}
	switch {
	case len(probs) > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, probs[0].reason, problemsMessage(probs)
	case notServing != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "NotServing", notServing.Error()
	}
	meta.SetStatusCondition(&want.Conditions, cond)
	if equality.Semantic.DeepEqual(*want, rec.Status) {
		return nil
	}
	next := rec.DeepCopy()
	next.Status = *want
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(next)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(minik8sv1.SchemeGroupVersion.String())
	u.SetKind("DNSRecord")
	_, err = g.cfg.Dynamic.Resource(DNSRecords).Namespace(rec.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // a newer version is on its way to the cache
	}
	if err != nil {
		return fmt.Errorf("status of dnsrecord %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	return nil
}

func problemsMessage(probs []problem) string {
	msgs := make([]string, len(probs))
	for i, p := range probs {
		msgs[i] = p.message
	}
	return strings.Join(msgs, "; ")
}

func (g *Gateway) ingressStatus(ctx context.Context, ing *networkingv1.Ingress, addr string) error {
	want := []networkingv1.IngressLoadBalancerIngress{{IP: addr}}
	if equality.Semantic.DeepEqual(ing.Status.LoadBalancer.Ingress, want) {
		return nil
	}
	next := ing.DeepCopy()
	next.Status.LoadBalancer.Ingress = want
	_, err := g.cfg.Client.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("status of ingress %s/%s: %w", ing.Namespace, ing.Name, err)
	}
	return nil
}

// writeIfChanged replaces path atomically when its content differs.
func writeIfChanged(path string, data []byte) error {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	return writeReadable(path, data)
}

// writeReadable writes path atomically, readable by all (CoreDNS may run
// as another user).
func writeReadable(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// checkServing asks nginx, for up to 3s (it may be starting or
// reloading), which configuration answers on its port: nil once it is
// nginx.conf's, an error when nothing answers or another configuration
// does (an nginx that is not ours holds the port).
func (g *Gateway) checkServing(ctx context.Context) error {
	deadline := time.Now().Add(3 * time.Second)
	for {
		got, err := g.servedID(ctx)
		if err == nil && got == g.id {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("port %d answers with configuration %q, not nginx.conf's %q: another nginx holds the port", g.cfg.Port, got, g.id)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nginx does not serve its configuration (see %s): %w", filepath.Join(g.cfg.Dir, "error.log"), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// servedID is the id of the configuration nginx serves, from its status
// server, asked on loopback in nginx's namespace.
func (g *Gateway) servedID(ctx context.Context) (string, error) {
	var conn net.Conn
	err := network.InNetNS(g.cfg.NetNS, func() (err error) {
		conn, err = (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(g.cfg.Port)))
		return err
	})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprintf(conn, "GET /config HTTP/1.0\r\nHost: %s\r\n\r\n", statusHost); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("port %d answers %s, not the gateway's status", g.cfg.Port, resp.Status)
	}
	return strings.TrimSpace(string(body)), nil
}
