package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Operation names, as in the report.
const (
	OpEtcdPut = "etcd put"
	OpCreate  = "create"
	OpGet     = "get"
	OpList    = "list"
	OpUpdate  = "update"
)

// envConfig is what the fixtures of a run need.
type envConfig struct {
	rest         *rest.Config
	etcd         []string
	listObjects  int
	payloadBytes int
}

// env is a run's fixtures: two namespaces of its own on the apiserver (one
// holding the listed ConfigMaps, one taking the writes) and a key prefix of
// its own in etcd.
type env struct {
	rest        *rest.Config
	etcd        []string
	admin       kubernetes.Interface
	id          string
	listNS      string
	writeNS     string
	listObjects int
	payload     string
	// storedValue is as large as a ConfigMap of the run once stored: what
	// an etcd put writes.
	storedValue []byte
	etcdPrefix  string
	pools       atomic.Int64
}

// clientConfig is cfg without client-side rate limiting.
func clientConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = -1, 0 // QPS < 0: no token bucket at all
	c.RateLimiter = nil
	c.UserAgent = "minik8s-bench"
	return c
}

func newEnv(ctx context.Context, cfg envConfig) (*env, error) {
	rc := clientConfig(cfg.rest)
	admin, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(b[:])
	e := &env{
		rest: rc, etcd: cfg.etcd, admin: admin, id: id,
		listNS: "minik8s-bench-" + id + "-list", writeNS: "minik8s-bench-" + id + "-write",
		listObjects: cfg.listObjects,
		payload:     strings.Repeat("x", cfg.payloadBytes),
		etcdPrefix:  "/minik8s-bench/" + id + "/",
	}
	for _, ns := range []string{e.listNS, e.writeNS} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	// The listed objects, created concurrently: a few hundred requests.
	errs := make(chan error, cfg.listObjects)
	sem := make(chan struct{}, 16)
	for i := range cfg.listObjects {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			_, err := admin.CoreV1().ConfigMaps(e.listNS).Create(ctx, e.configMap(listName(i)), metav1.CreateOptions{})
			errs <- err
		}()
	}
	for range cfg.listObjects {
		if err := <-errs; err != nil {
			return nil, fmt.Errorf("create the listed ConfigMaps: %w", err)
		}
	}
	// Warm the connection up and size etcd's value on a real stored object.
	got, err := admin.CoreV1().ConfigMaps(e.listNS).Get(ctx, listName(0), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	got.ResourceVersion = "" // not stored: it is etcd's ModRevision
	e.storedValue, err = json.Marshal(got)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func listName(i int) string { return fmt.Sprintf("item-%04d", i) }

func (e *env) configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "minik8s-bench"}},
		Data:       map[string]string{"payload": e.payload},
	}
}

// worker issues one request per call; each worker of a pool has its own.
type worker func(ctx context.Context) error

// operation prepares a pool of workers; release frees what the pool holds
// (its client), not what it wrote.
type operation struct {
	name    string
	prepare func(ctx context.Context, clients int) (workers []worker, release func(), err error)
}

// operations lists what a run measures, in report order: etcd first, the
// physical limit, when there is an etcd to measure.
func (e *env) operations() []operation {
	var ops []operation
	if len(e.etcd) > 0 {
		ops = append(ops, operation{OpEtcdPut, e.etcdPut})
	}
	return append(ops,
		operation{OpCreate, e.create},
		operation{OpGet, e.get},
		operation{OpList, e.list},
		operation{OpUpdate, e.update},
	)
}

func (e *env) operation(name string) (operation, bool) {
	for _, op := range e.operations() {
		if op.name == name {
			return op, true
		}
	}
	return operation{}, false
}

// clientset is one pool's clientset, shared by its workers.
func (e *env) clientset() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(e.rest)
}

func (e *env) create(_ context.Context, clients int) ([]worker, func(), error) {
	cs, err := e.clientset()
	if err != nil {
		return nil, nil, err
	}
	pool := e.pools.Add(1)
	workers := make([]worker, clients)
	for w := range workers {
		seq := 0
		prefix := fmt.Sprintf("p%d-w%d-", pool, w)
		workers[w] = func(ctx context.Context) error {
			seq++
			_, err := cs.CoreV1().ConfigMaps(e.writeNS).Create(ctx, e.configMap(prefix+strconv.Itoa(seq)), metav1.CreateOptions{})
			return err
		}
	}
	return workers, func() {}, nil
}

func (e *env) get(_ context.Context, clients int) ([]worker, func(), error) {
	cs, err := e.clientset()
	if err != nil {
		return nil, nil, err
	}
	workers := make([]worker, clients)
	for w := range workers {
		next := w * 7 // spread the workers over the objects
		workers[w] = func(ctx context.Context) error {
			name := listName(next % e.listObjects)
			next++
			_, err := cs.CoreV1().ConfigMaps(e.listNS).Get(ctx, name, metav1.GetOptions{})
			return err
		}
	}
	return workers, func() {}, nil
}

func (e *env) list(_ context.Context, clients int) ([]worker, func(), error) {
	cs, err := e.clientset()
	if err != nil {
		return nil, nil, err
	}
	workers := make([]worker, clients)
	for w := range workers {
		workers[w] = func(ctx context.Context) error {
			l, err := cs.CoreV1().ConfigMaps(e.listNS).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			// The namespace also holds its kube-root-ca.crt (the
			// root-ca-cert-publisher's), as in Kubernetes.
			ours := 0
			for i := range l.Items {
				if l.Items[i].Labels["app.kubernetes.io/name"] == "minik8s-bench" {
					ours++
				}
			}
			if ours != e.listObjects {
				return fmt.Errorf("listed %d ConfigMaps of the benchmark, want %d", ours, e.listObjects)
			}
			return nil
		}
	}
	return workers, func() {}, nil
}

// update gives each worker a ConfigMap of its own, replaced (PUT) with the
// resourceVersion of the worker's previous write, so there are no conflicts.
func (e *env) update(ctx context.Context, clients int) ([]worker, func(), error) {
	cs, err := e.clientset()
	if err != nil {
		return nil, nil, err
	}
	pool := e.pools.Add(1)
	workers := make([]worker, clients)
	for w := range workers {
		cm, err := cs.CoreV1().ConfigMaps(e.writeNS).Create(ctx, e.configMap(fmt.Sprintf("p%d-upd-w%d", pool, w)), metav1.CreateOptions{})
		if err != nil {
			return nil, nil, err
		}
		seq := 0
		workers[w] = func(ctx context.Context) error {
			seq++
			next := cm.DeepCopy()
			next.Data["seq"] = strconv.Itoa(seq)
			out, err := cs.CoreV1().ConfigMaps(e.writeNS).Update(ctx, next, metav1.UpdateOptions{})
			if err != nil {
				return err
			}
			cm = out
			return nil
		}
	}
	return workers, func() {}, nil
}

// etcdPut gives the pool one etcd client (one gRPC connection); each put
// writes a fresh key, as a create does.
func (e *env) etcdPut(_ context.Context, clients int) ([]worker, func(), error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints: e.etcd, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("etcd client: %w", err)
	}
	pool := e.pools.Add(1)
	value := string(e.storedValue)
	workers := make([]worker, clients)
	for w := range workers {
		seq := 0
		prefix := fmt.Sprintf("%sp%d/w%d/", e.etcdPrefix, pool, w)
		workers[w] = func(ctx context.Context) error {
			seq++
			_, err := c.Put(ctx, prefix+strconv.Itoa(seq), value)
			return err
		}
	}
	return workers, func() { _ = c.Close() }, nil
}

// cleanup deletes what the run wrote: its namespaces (the namespace
// controller removes their ConfigMaps) and its etcd keys.
func (e *env) cleanup(ctx context.Context) error {
	var errs []error
	for _, ns := range []string{e.listNS, e.writeNS} {
		err := e.admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete namespace %s: %w", ns, err))
		}
	}
	if len(e.etcd) > 0 {
		c, err := clientv3.New(clientv3.Config{Endpoints: e.etcd, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			errs = append(errs, fmt.Errorf("etcd client: %w", err))
		} else {
			if _, err := c.Delete(ctx, e.etcdPrefix, clientv3.WithPrefix()); err != nil {
				errs = append(errs, fmt.Errorf("delete etcd keys %s: %w", e.etcdPrefix, err))
			}
			_ = c.Close()
		}
	}
	return errors.Join(errs...)
}
