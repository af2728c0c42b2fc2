package apiserver

import (
	"context"
	"net/http"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/apiserver/authz"
)

// reviewResources are the create-only "review" APIs Kubernetes serves
// without storing anything: who am I (authentication.k8s.io
// selfsubjectreviews) and may I / may they (authorization.k8s.io
// selfsubjectaccessreviews, subjectaccessreviews,
// localsubjectaccessreviews, selfsubjectrulesreviews). kubectl auth
// whoami and kubectl auth can-i use them.
var reviewResources = map[schema.GroupVersionResource]struct {
	kind       string
	namespaced bool
}{
	authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews"):       {"SelfSubjectReview", false},
	authenticationv1.SchemeGroupVersion.WithResource("tokenreviews"):             {"TokenReview", false},
	authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews"):  {"SelfSubjectAccessReview", false},
	authorizationv1.SchemeGroupVersion.WithResource("subjectaccessreviews"):      {"SubjectAccessReview", false},
	authorizationv1.SchemeGroupVersion.WithResource("localsubjectaccessreviews"): {"LocalSubjectAccessReview", true},
	authorizationv1.SchemeGroupVersion.WithResource("selfsubjectrulesreviews"):   {"SelfSubjectRulesReview", false},
}

// isReview says whether info addresses a review API.
func isReview(info requestInfo) bool {
	_, ok := reviewResources[schema.GroupVersionResource{Group: info.Group, Version: info.Version, Resource: info.Resource}]
	return ok
}

// serveReview answers a review: POST only, the object back with its status.
func (s *Server) serveReview(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	gvr := schema.GroupVersionResource{Group: info.Group, Version: info.Version, Resource: info.Resource}
	rr := reviewResources[gvr]
	if info.Verb != "create" || info.Name != "" || info.Subresource != "" || (rr.namespaced != (info.Namespace != "")) {
		return apierrors.NewMethodNotSupported(gvr.GroupResource(), info.Verb)
	}
	// A review is no list of objects: asking for it as a Table or as
	// metadata is 406, as upstream.
	if _, err := negotiate(withoutProtobuf{s.codecs}, r.Header.Get("Accept"), false); err != nil {
		return err
	}
	gvk := gvr.GroupVersion().WithKind(rr.kind)
	obj, err := s.scheme.New(gvk)
	if err != nil {
		return err
	}
	if _, err := s.decodeRequest(r, gvk, obj); err != nil {
		return err
	}
	u, _ := authn.UserFrom(r.Context())
	var me authz.User
	if u != nil {
		me = userOf(u)
	}
	ctx := r.Context()
	switch o := obj.(type) {
	case *authenticationv1.SelfSubjectReview:
		o.Status.UserInfo = userInfoOf(u)
	case *authenticationv1.TokenReview:
		o.Status = s.tokenReview(r.Context(), o.Spec)
	case *authorizationv1.SelfSubjectAccessReview:
		o.Status = s.review(ctx, me, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.SubjectAccessReview:
		o.Status = s.review(ctx, subjectOf(o.Spec), o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.LocalSubjectAccessReview:
		if o.Spec.ResourceAttributes == nil || (o.Spec.ResourceAttributes.Namespace != "" && o.Spec.ResourceAttributes.Namespace != info.Namespace) {
			return apierrors.NewBadRequest("spec.resourceAttributes.namespace must match the namespace of the request")
		}
		o.Spec.ResourceAttributes.Namespace = info.Namespace
		o.Namespace = info.Namespace
		o.Status = s.review(ctx, subjectOf(o.Spec), o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.SelfSubjectRulesReview:
		o.Status = s.rulesReview(ctx, me, o.Spec.Namespace)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	writeJSON(w, http.StatusCreated, obj)
	return nil
}

// tokenReview says who a bearer token belongs to, as the server's own
// authentication would (webhook token authenticators ask this).
func (s *Server) tokenReview(ctx context.Context, spec authenticationv1.TokenReviewSpec) authenticationv1.TokenReviewStatus {
	if spec.Token == "" {
		return authenticationv1.TokenReviewStatus{Error: "token is required"}
	}
	if s.cfg.Authenticator == nil {
		return authenticationv1.TokenReviewStatus{Error: "authentication is not configured"}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "Bearer "+spec.Token)
	u, ok, err := s.cfg.Authenticator.Authenticate(req)
	if err != nil || !ok || u == nil {
		msg := "the token is not valid"
		if err != nil {
			msg = err.Error()
		}
		return authenticationv1.TokenReviewStatus{Error: msg}
	}
	return authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: spec.Audiences, User: userInfoOf(u)}
}

// userInfoOf is u as authentication.k8s.io writes a user; nil is nobody.
func userInfoOf(u *authn.User) authenticationv1.UserInfo {
	if u == nil {
		return authenticationv1.UserInfo{}
	}
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
	for k, v := range u.Extra {
		if info.Extra == nil {
			info.Extra = map[string]authenticationv1.ExtraValue{}
		}
		info.Extra[k] = slices.Clone(v)
	}
	return info
}

func subjectOf(spec authorizationv1.SubjectAccessReviewSpec) authz.User {
	return authz.User{Name: spec.User, UID: spec.UID, Groups: slices.Clone(spec.Groups)}
}

// review asks the authorizer what a request of user would get.
func (s *Server) review(ctx context.Context, user authz.User, ra *authorizationv1.ResourceAttributes, na *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	if ra == nil && na == nil {
		return authorizationv1.SubjectAccessReviewStatus{EvaluationError: "spec.resourceAttributes or spec.nonResourceAttributes is required"}
	}
	if s.cfg.Authorizer == nil {
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true}
	}
	a := authz.Attributes{User: user}
	if ra != nil {
		a.IsResource, a.Verb, a.APIGroup, a.APIVersion = true, ra.Verb, ra.Group, ra.Version
		a.Namespace, a.Resource, a.Subresource, a.Name = ra.Namespace, ra.Resource, ra.Subresource, ra.Name
	} else {
		a.Verb, a.Path = na.Verb, na.Path
	}
	d, reason, err := s.cfg.Authorizer.Authorize(ctx, a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == authz.Allow, Denied: d == authz.Deny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

// rulesReview lists what user may do in namespace, from RBAC (and
// everything for system:masters), as SelfSubjectRulesReview does.
func (s *Server) rulesReview(ctx context.Context, user authz.User, namespace string) authorizationv1.SubjectRulesReviewStatus {
	if s.cfg.Authorizer == nil || slices.Contains(user.Groups, authz.MastersGroup) {
		return authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		}
	}
	if s.cfg.RulesFor == nil {
		return authorizationv1.SubjectRulesReviewStatus{Incomplete: true, EvaluationError: "rules are not available"}
	}
	rules, err := s.cfg.RulesFor(ctx, user, namespace)
	st := authorizationv1.SubjectRulesReviewStatus{
		// The Node authorizer's grants are not rules.
		Incomplete:       strings.HasPrefix(user.Name, authz.NodeUserPrefix),
		ResourceRules:    []authorizationv1.ResourceRule{},
		NonResourceRules: []authorizationv1.NonResourceRule{},
	}
	if err != nil {
		st.Incomplete, st.EvaluationError = true, err.Error()
	}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	return st
}

// addReviewAPIs puts the review resources in discovery, as Kubernetes
// lists them (create only).
func (d *discovery) addReviewAPIs() {
	byGV := map[schema.GroupVersion][]metav1.APIResource{}
	for gvr, rr := range reviewResources {
		byGV[gvr.GroupVersion()] = append(byGV[gvr.GroupVersion()], metav1.APIResource{
			Name: gvr.Resource, SingularName: strings.ToLower(rr.kind), Namespaced: rr.namespaced, Kind: rr.kind, Verbs: metav1.Verbs{"create"}})
	}
	for gv, resources := range byGV {
		slices.SortFunc(resources, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
		if _, ok := d.byGroup[gv.Group]; !ok {
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			d.byGroup[gv.Group] = &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: gv.Group,
				Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
		}
		if list, ok := d.resources[gv]; ok {
			list.APIResources = append(list.APIResources, resources...)
			continue
		}
		d.resources[gv] = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: gv.String(), APIResources: resources}
	}
	d.orderGroups()
}
