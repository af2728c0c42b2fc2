package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/apiserver/audit"
	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/apiserver/authz"
	"github.com/minik8s/minik8s/pkg/registry"
)

// authorize answers 403 to an authenticated request its user may not
// make. Requests without a user reached here only for the public paths.
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := authn.UserFrom(r.Context())
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		info := parseRequestInfo(r)
		a := attributesOf(r, info, u)
		describeForAudit(r.Context(), a, info)
		d, reason, err := s.cfg.Authorizer.Authorize(r.Context(), a)
		if d == authz.Allow {
			audit.Annotate(r.Context(), audit.AnnDecision, "allow")
			next.ServeHTTP(w, r)
			return
		}
		audit.Annotate(r.Context(), audit.AnnDecision, "forbid")
		if reason != "" {
			audit.Annotate(r.Context(), audit.AnnReason, reason)
		}
		if err != nil {
			s.log.Warn("authorization error", "user", u.Name, "verb", a.Verb, "resource", a.Resource, "path", a.Path, "err", err)
		}
		writeError(w, forbidden(a, reason))
	})
}

// describeForAudit tells the audit log who asked what.
func describeForAudit(ctx context.Context, a authz.Attributes, info requestInfo) {
	req := audit.Request{Verb: a.Verb, IsResource: a.IsResource, APIGroup: a.APIGroup, Resource: a.Resource,
		Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name, Path: a.Path}
	var ref *audit.ObjectReference
	if a.IsResource {
		ref = &audit.ObjectReference{Resource: a.Resource, Namespace: a.Namespace, Name: a.Name, APIGroup: a.APIGroup,
			APIVersion: info.Version, Subresource: a.Subresource}
	}
	audit.Describe(ctx, a.User.Name, a.User.UID, a.User.Groups, req, ref)
}

// attributesOf describes request r of user u for the authorizer.
func attributesOf(r *http.Request, info requestInfo, u *authn.User) authz.Attributes {
	a := authz.Attributes{User: userOf(u), Path: r.URL.Path}
	if !info.IsResource {
		a.Verb = strings.ToLower(r.Method)
		return a
	}
	a.IsResource, a.Verb = true, info.Verb
	a.APIGroup, a.APIVersion, a.Namespace = info.Group, info.Version, info.Namespace
	a.Resource, a.Subresource, a.Name = info.Resource, info.Subresource, info.Name
	if a.Name == "" && (a.Verb == "list" || a.Verb == "watch") {
		// A list or watch of one object by name is authorized as that
		// object, as Kubernetes does: a role limited to resourceNames
		// lets its holder watch just that object (an extension API
		// server watches extension-apiserver-authentication so).
		if sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector")); err == nil {
			if name, ok := sel.RequiresExactMatch("metadata.name"); ok {
				a.Name = name
			}
		}
	}
	return a
}

func userOf(u *authn.User) authz.User {
	return authz.User{Name: u.Name, UID: u.UID, Groups: u.Groups}
}

// forbidden is kube-apiserver's 403 for a.
func forbidden(a authz.Attributes, reason string) error {
	msg := authz.ForbiddenMessage(a)
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{}
	if a.IsResource {
		gr = schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	}
	return apierrors.NewForbidden(gr, a.Name, errors.New(msg))
}

// admit runs the configured admission on what an authenticated user
// writes.
func (s *Server) admit(ctx context.Context, obj runtime.Object) error {
	if s.cfg.Admit == nil {
		return nil
	}
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return nil
	}
	return s.cfg.Admit(ctx, userOf(u), obj)
}

// checkApprove is Kubernetes' certificate approval admission: approving
// or denying a CSR takes the approve verb on its signer
// (certificates.k8s.io signers, named by signerName or "<domain>/*"), so
// that no requester approves its own request by holding update on
// certificatesigningrequests/approval alone.
func (s *Server) checkApprove(ctx context.Context, res *registry.Resource, info requestInfo) error {
	if info.Verb != "update" && info.Verb != "patch" {
		return nil
	}
	obj, _, err := s.get(ctx, res, info.Namespace, info.Name)
	if err != nil {
		return err
	}
	csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return nil
	}
	return s.checkSigner(ctx, res, "approve", csr.Spec.SignerName, info.Name)
}

// checkSigner asks the authorizer whether the request's user may verb
// (approve, sign) for signer, by its name or "<domain>/*", as Kubernetes'
// certauthorization does; an empty signer needs nothing.
func (s *Server) checkSigner(ctx context.Context, res *registry.Resource, verb, signer, name string) error {
	if s.cfg.Authorizer == nil || signer == "" {
		return nil
	}
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return nil
	}
	names := []string{signer}
	if domain, _, ok := strings.Cut(signer, "/"); ok {
		names = append(names, domain+"/*")
	}
	for _, n := range names {
		d, _, _ := s.cfg.Authorizer.Authorize(ctx, authz.Attributes{User: userOf(u), Verb: verb, IsResource: true,
			APIGroup: certificatesv1.GroupName, APIVersion: "v1", Resource: "signers", Name: n})
		if d == authz.Allow {
			return nil
		}
	}
	if verb == "approve" {
		return apierrors.NewForbidden(res.GroupResource(), name, fmt.Errorf("user not permitted to approve requests with signerName %q", signer))
	}
	// Kubernetes' PodCertificateRequest status strategy refuses this in
	// validation: a 422 on spec.signerName.
	return apierrors.NewInvalid(res.GroupVersionKind().GroupKind(), name, field.ErrorList{
		field.Forbidden(field.NewPath("spec", "signerName"), fmt.Sprintf("User %q is not permitted to %q for signer %q", u.Name, verb, signer))})
}
