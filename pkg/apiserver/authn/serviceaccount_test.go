package authn_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"maps"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/serviceaccount"
)

// objectStore is an ObjectGetter over a map keyed resource/ns/name.
type objectStore map[string]runtime.Object

func (s objectStore) get(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	if ns == "broken" {
		return nil, errors.New("etcd is down")
	}
	if o, ok := s[gvr.Resource+"/"+ns+"/"+name]; ok {
		return o.DeepCopyObject(), nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func meta(ns, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
}

func TestServiceAccountToken(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := serviceaccount.NewSigner(serviceaccount.DefaultIssuer, key)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := serviceaccount.NewVerifier(serviceaccount.DefaultIssuer, nil, clock, key.Public())
	if err != nil {
		t.Fatal(err)
	}
	long := metav1.NewTime(now.Add(-2 * time.Minute))
	recent := metav1.NewTime(now.Add(-10 * time.Second))
	store := objectStore{
		"serviceaccounts/ns/default":     &corev1.ServiceAccount{ObjectMeta: meta("ns", "default", "sa-uid")},
		"serviceaccounts/ns/builder":     &corev1.ServiceAccount{ObjectMeta: meta("ns", "builder", "builder-uid-2")}, // re-created
		"pods/ns/web":                    &corev1.Pod{ObjectMeta: meta("ns", "web", "pod-uid")},
		"pods/ns/recreated":              &corev1.Pod{ObjectMeta: meta("ns", "recreated", "new-uid")},
		"pods/ns/leaving":                &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "leaving", UID: "leaving-uid", DeletionTimestamp: &long}},
		"pods/ns/terminating":            &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "terminating", UID: "term-uid", DeletionTimestamp: &recent}},
		"secrets/ns/bound":               &corev1.Secret{ObjectMeta: meta("ns", "bound", "secret-uid")},
		"nodes//n1":                      &corev1.Node{ObjectMeta: meta("", "n1", "node-uid")},
		"serviceaccounts/broken/default": &corev1.ServiceAccount{ObjectMeta: meta("broken", "default", "b-uid")},
	}
	a := authn.NewServiceAccountToken(verifier, store.get, clock)
	tok := func(b serviceaccount.Bound, aud ...string) string {
		if len(aud) == 0 {
			aud = []string{serviceaccount.DefaultIssuer}
		}
		c, err := serviceaccount.NewClaims(b, aud, now.Add(-time.Minute), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		s, err := signer.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	def := serviceaccount.Bound{Namespace: "ns", Name: "default", UID: "sa-uid"}
	withPod := func(name, uid string) serviceaccount.Bound {
		b := def
		b.Pod = &serviceaccount.Ref{Name: name, UID: uid}
		b.Node = &serviceaccount.Ref{Name: "n1", UID: "node-uid"}
		return b
	}
	withSecret := func(name, uid string) serviceaccount.Bound {
		b := def
		b.Secret = &serviceaccount.Ref{Name: name, UID: uid}
		return b
	}
	withNode := func(name, uid string) serviceaccount.Bound {
		b := def
		b.Node = &serviceaccount.Ref{Name: name, UID: uid}
		return b
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherSigner, _ := serviceaccount.NewSigner(serviceaccount.DefaultIssuer, other)
	otherClaims, _ := serviceaccount.NewClaims(def, []string{serviceaccount.DefaultIssuer}, now, time.Hour)
	wrongKey, _ := otherSigner.Sign(otherClaims)
	expiredClaims, _ := serviceaccount.NewClaims(def, []string{serviceaccount.DefaultIssuer}, now.Add(-3*time.Hour), time.Hour)
	expired, _ := signer.Sign(expiredClaims)

	groups := []string{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"}
	tests := []struct {
		name      string
		header    string
		wantOK    bool
		wantErr   string
		wantUser  string
		wantUID   string
		wantExtra map[string][]string
	}{
		{name: "no credentials"},
		{name: "a token of another kind", header: "Bearer abcdef.0123456789abcdef"},
		{name: "unbound token", header: "Bearer " + tok(def), wantOK: true, wantUser: "system:serviceaccount:ns:default", wantUID: "sa-uid"},
		{name: "pod-bound token", header: "Bearer " + tok(withPod("web", "pod-uid")), wantOK: true,
			wantUser: "system:serviceaccount:ns:default", wantUID: "sa-uid",
			wantExtra: map[string][]string{
				serviceaccount.PodNameKey: {"web"}, serviceaccount.PodUIDKey: {"pod-uid"},
				serviceaccount.NodeNameKey: {"n1"}, serviceaccount.NodeUIDKey: {"node-uid"},
			}},
		{name: "pod being deleted, within a minute", header: "Bearer " + tok(withPod("terminating", "term-uid")), wantOK: true,
			wantUser: "system:serviceaccount:ns:default", wantUID: "sa-uid"},
		{name: "pod deleted", header: "Bearer " + tok(withPod("gone", "gone-uid")), wantErr: "invalidated"},
		{name: "pod deleted over a minute ago", header: "Bearer " + tok(withPod("leaving", "leaving-uid")), wantErr: "invalidated"},
		{name: "pod re-created", header: "Bearer " + tok(withPod("recreated", "old-uid")), wantErr: "pod UID (new-uid) does not match"},
		{name: "secret-bound", header: "Bearer " + tok(withSecret("bound", "secret-uid")), wantOK: true,
			wantUser: "system:serviceaccount:ns:default", wantUID: "sa-uid"},
		{name: "secret deleted", header: "Bearer " + tok(withSecret("gone", "x")), wantErr: "invalidated"},
		{name: "secret re-created", header: "Bearer " + tok(withSecret("bound", "old")), wantErr: "secret UID (secret-uid) does not match"},
		{name: "node-bound", header: "Bearer " + tok(withNode("n1", "node-uid")), wantOK: true,
			wantUser: "system:serviceaccount:ns:default", wantUID: "sa-uid",
			wantExtra: map[string][]string{serviceaccount.NodeNameKey: {"n1"}, serviceaccount.NodeUIDKey: {"node-uid"}}},
		{name: "node deleted", header: "Bearer " + tok(withNode("n2", "x")), wantErr: "invalidated"},
		{name: "service account deleted", header: "Bearer " + tok(serviceaccount.Bound{Namespace: "ns", Name: "gone", UID: "u"}),
			wantErr: "service account ns/gone has been deleted"},
		{name: "service account re-created", header: "Bearer " + tok(serviceaccount.Bound{Namespace: "ns", Name: "builder", UID: "builder-uid-1"}),
			wantErr: "service account UID (builder-uid-2) does not match claim (builder-uid-1)"},
		{name: "store fails", header: "Bearer " + tok(serviceaccount.Bound{Namespace: "broken", Name: "default", UID: "b-uid"}), wantErr: "etcd is down"},
		{name: "another audience", header: "Bearer " + tok(def, "vault"), wantErr: "token audiences"},
		{name: "expired", header: "Bearer " + expired, wantErr: "expired"},
		{name: "wrong signature", header: "Bearer " + wrongKey, wantErr: "signature is invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			u, ok, err := a.Authenticate(r)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v (user %+v, err %v), want %v", ok, u, err, tc.wantOK)
			}
			if tc.wantErr == "" && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want one with %q", err, tc.wantErr)
			}
			if !ok {
				if u != nil {
					t.Fatalf("a user without ok: %+v", u)
				}
				return
			}
			if !sameUser(u, tc.wantUser, tc.wantUID, groups...) {
				t.Errorf("user %+v, want %s %s %v", u, tc.wantUser, tc.wantUID, groups)
			}
			if cred := u.Extra[serviceaccount.CredentialIDKey]; len(cred) != 1 || !strings.HasPrefix(cred[0], "JTI=") {
				t.Errorf("credential id = %v", cred)
			}
			extra := maps.Clone(u.Extra)
			delete(extra, serviceaccount.CredentialIDKey)
			if tc.wantExtra != nil && !maps.EqualFunc(extra, tc.wantExtra, func(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }) {
				t.Errorf("extra = %v, want %v", extra, tc.wantExtra)
			}
			if r.Header.Get("Authorization") != "" {
				t.Error("the token stayed in the request")
			}
		})
	}

}
