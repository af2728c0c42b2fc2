package certificates

import (
	"time"

	certlisters "k8s.io/client-go/listers/certificates/v1"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Config is what both controllers share; the rest comes from the
// kit.Context.
type Config struct {
	// Now is the clock for condition timestamps; nil means kc's Clock.
	Now func() time.Time
}

// base is what both controllers share: the CSR lister, the client, and
// the loop around their Reconcile (which each sets).
type base struct {
	kit.Base
	lister certlisters.CertificateSigningRequestLister
	now    func() time.Time
}

// newBase is the base of the controller called name; an error names it.
func newBase(name string, kc *kit.Context, cfg Config) (*base, error) {
	inf := kc.Factory.Certificates().V1().CertificateSigningRequests()
	b := &base{Base: kc.NewBase(name, "csr", 2, ""), lister: inf.Lister(), now: cfg.Now}
	if b.now == nil {
		b.now = kc.Clock.Now
	}
	// A deleted CSR leaves nothing to do.
	handler := loop.KeyHandler(b.Queue)
	handler.DeleteFunc = nil
	return b, b.Loop.Watch(inf.Informer(), handler)
}
