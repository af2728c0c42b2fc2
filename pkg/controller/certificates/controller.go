package certificates

import (
	"cmp"
	"log/slog"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Config is what both controllers share.
type Config struct {
	Logger *slog.Logger
	// Now is the clock for condition timestamps; nil means time.Now.
	Now func() time.Time
}

func (c *Config) complete() {
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Now == nil {
		c.Now = time.Now
	}
}

// base is what both controllers share: the CSR lister, the client, and
// the loop around their Reconcile (which each sets).
type base struct {
	client kubernetes.Interface
	lister certlisters.CertificateSigningRequestLister
	log    *slog.Logger
	now    func() time.Time
	loop   *loop.Loop[string]
}

func newBase(name string, client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config) (*base, error) {
	cfg.complete()
	inf := factory.Certificates().V1().CertificateSigningRequests()
	b := &base{
		client: client, lister: inf.Lister(),
		log: cfg.Logger.With("controller", name),
		now: cfg.Now,
	}
	queue := loop.NewQueue[string](name, nil)
	b.loop = &loop.Loop[string]{
		Queue: queue, Workers: 2,
		Synced: []cache.InformerSynced{inf.Informer().HasSynced},
		Logger: b.log, KeyAttr: "csr",
	}
	// A deleted CSR leaves nothing to do.
	handler := loop.KeyHandler(queue)
	handler.DeleteFunc = nil
	if _, err := inf.Informer().AddEventHandler(handler); err != nil {
		return nil, err
	}
	return b, nil
}
