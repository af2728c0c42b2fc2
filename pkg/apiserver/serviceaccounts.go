package apiserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/serviceaccount"
)

// Service accounts, as kube-apiserver serves them: the TokenRequest API
// (POST .../serviceaccounts/<name>/token), the ServiceAccount admission
// of new pods, and the default account of every namespace.

var serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")

func isServiceAccounts(res *registry.Resource) bool {
	return res.GroupVersionResource == serviceAccountsGVR
}

// getCore reads core/v1 resource ns/name as a T (NotFound when absent).
func getCore[T runtime.Object](ctx context.Context, s *Server, resource, ns, name string) (T, error) {
	var zero T
	res, ok := s.table.Lookup(corev1.SchemeGroupVersion.WithResource(resource))
	if !ok {
		return zero, apierrors.NewNotFound(corev1.Resource(resource), name)
	}
	obj, _, err := s.get(ctx, res, ns, name)
	if err != nil {
		return zero, err
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("%s %s/%s: got %T", resource, ns, name, obj)
	}
	return t, nil
}

// serveToken answers a TokenRequest with a token of the service
// account, as Kubernetes' TokenREST: the account must exist; the token is
// for spec.audiences (default the apiserver's, the issuer), lives
// spec.expirationSeconds (default an hour, at least ten minutes, at most
// serviceaccount.MaxExpirationSeconds: longer asks are shortened with a
// warning) and, with spec.boundObjectRef, is bound to a Pod (and the node
// it runs on), a Secret or a Node, which must exist with the UID given.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	signer := s.cfg.ServiceAccountTokens
	if !isServiceAccounts(res) || signer == nil {
		return pathNotFound()
	}
	if info.Verb != "create" {
		return methodNotAllowed(info)
	}
	out, err := negotiate(s.codecs, r.Header.Get("Accept"), false)
	if err != nil {
		return err
	}
	gvk := authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")
	req := &authenticationv1.TokenRequest{}
	warnings, err := s.decodeRequest(r, gvk, req)
	if err != nil {
		return err
	}
	if _, err := writeOptionsFrom(r); err != nil {
		return err
	}
	ns, name := info.Namespace, info.Name
	if req.Name != "" && req.Name != name {
		return apierrors.NewInvalid(gvk.GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != ns {
		return apierrors.NewInvalid(gvk.GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	ctx := r.Context()
	sa, err := getCore[*corev1.ServiceAccount](ctx, s, "serviceaccounts", ns, name)
	if err != nil {
		return err
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = []string{signer.Issuer()}
	}
	if req.Spec.ExpirationSeconds == nil {
		req.Spec.ExpirationSeconds = ptr.To[int64](serviceaccount.DefaultExpirationSeconds)
	}
	req.Name, req.Namespace = sa.Name, sa.Namespace
	now := s.now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}
	expPath := field.NewPath("spec", "expirationSeconds")
	switch exp := *req.Spec.ExpirationSeconds; {
	case exp < serviceaccount.MinExpirationSeconds:
		return apierrors.NewInvalid(gvk.GroupKind(), "", field.ErrorList{field.Invalid(expPath, exp, "may not specify a duration less than 10 minutes")})
	case exp > 1<<32:
		return apierrors.NewInvalid(gvk.GroupKind(), "", field.ErrorList{field.Invalid(expPath, exp, "may not specify a duration larger than 2^32 seconds")})
	case exp > serviceaccount.MaxExpirationSeconds:
		warnings = append(warnings, fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", exp, serviceaccount.MaxExpirationSeconds))
		req.Spec.ExpirationSeconds = ptr.To[int64](serviceaccount.MaxExpirationSeconds)
	}
	bound := serviceaccount.Bound{Namespace: sa.Namespace, Name: sa.Name, UID: string(sa.UID)}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if err := s.bindToken(ctx, &bound, ref, name); err != nil {
			return err
		}
	}
	claims, err := serviceaccount.NewClaims(bound, req.Spec.Audiences, now, time.Duration(*req.Spec.ExpirationSeconds)*time.Second)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	token, err := signer.Sign(claims)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err))
	}
	req.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(claims.ExpiresAt.Time)}
	req.SetGroupVersionKind(gvk)
	addWarnings(w, warnings)
	encode(w, http.StatusCreated, out, req)
	return nil
}

// bindToken fills in what b is bound to from ref: a Pod (running as the
// service account saName; with its node, when it has one that exists), a
// Secret or a Node of the token's namespace, with ref.UID when given.
func (s *Server) bindToken(ctx context.Context, b *serviceaccount.Bound, ref *authenticationv1.BoundObjectReference, saName string) error {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	gvk := gv.WithKind(ref.Kind)
	var uid types.UID
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		pod, err := getCore[*corev1.Pod](ctx, s, "pods", b.Namespace, ref.Name)
		if err != nil {
			return err
		}
		if saName != pod.Spec.ServiceAccountName {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", saName))
		}
		uid = pod.UID
		b.Pod = &serviceaccount.Ref{Name: pod.Name, UID: string(pod.UID)}
		if pod.Spec.NodeName != "" {
			// The node is optional: a token is not refused for its lack.
			if node, err := getCore[*corev1.Node](ctx, s, "nodes", "", pod.Spec.NodeName); err == nil {
				b.Node = &serviceaccount.Ref{Name: node.Name, UID: string(node.UID)}
			}
		}
	case gvk.Group == "" && gvk.Kind == "Node":
		node, err := getCore[*corev1.Node](ctx, s, "nodes", "", ref.Name)
		if err != nil {
			return err
		}
		uid = node.UID
		b.Node = &serviceaccount.Ref{Name: node.Name, UID: string(node.UID)}
	case gvk.Group == "" && gvk.Kind == "Secret":
		secret, err := getCore[*corev1.Secret](ctx, s, "secrets", b.Namespace, ref.Name)
		if err != nil {
			return err
		}
		uid = secret.UID
		b.Secret = &serviceaccount.Ref{Name: secret.Name, UID: string(secret.UID)}
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	if ref.UID != "" && uid != ref.UID {
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return nil
}

// mirrorPodAnnotation marks a static pod's mirror, which the
// ServiceAccount admission leaves alone.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// admitServiceAccount is Kubernetes' ServiceAccount admission on a new
// pod (obj of res): the service account it runs as (spec.serviceAccountName,
// defaulted to "default") must exist; unless the pod or the account sets
// automountServiceAccountToken false, the pod gets the projected volume
// kube-api-access-<random> (a token of the account, the cluster CA from
// the kube-root-ca.crt ConfigMap and the namespace), mounted read-only at
// /var/run/secrets/kubernetes.io/serviceaccount in every container and
// init container that mounts nothing there; and a pod without
// imagePullSecrets gets the account's.
func (s *Server) admitServiceAccount(ctx context.Context, res *registry.Resource, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok || res.GroupVersionResource != corev1.SchemeGroupVersion.WithResource("pods") {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = serviceaccount.DefaultServiceAccountName
		pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	}
	sa, err := s.lookUpServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name,
			fmt.Errorf("error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		mountServiceAccountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 {
		for _, ref := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: ref.Name})
		}
	}
	return nil
}

// lookUpServiceAccount reads ns/name; the default account, which a new
// namespace gets at once (ensureDefaultServiceAccount) and the
// serviceaccount controller re-creates, is waited for a little, as
// Kubernetes' admission does.
func (s *Server) lookUpServiceAccount(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	attempts := 1
	if name == serviceaccount.DefaultServiceAccountName {
		attempts = 10
	}
	interval := time.Duration(100+rand.IntN(100)) * time.Millisecond
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(interval):
			}
		}
		sa, err := getCore[*corev1.ServiceAccount](ctx, s, "serviceaccounts", ns, name)
		if !apierrors.IsNotFound(err) {
			return sa, err
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
}

// automount: the pod's automountServiceAccountToken, else the account's,
// else true.
func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountServiceAccountToken mounts the kube-api-access volume (added when
// missing) in the containers that have no mount at its path.
func mountServiceAccountToken(pod *corev1.Pod) {
	volumeName := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, serviceaccount.VolumeNamePrefix) {
			volumeName = v.Name
			break
		}
	}
	hasVolume := volumeName != ""
	if !hasVolume {
		volumeName = serviceaccount.VolumeNamePrefix + randomSuffix()
	}
	mount := corev1.VolumeMount{Name: volumeName, ReadOnly: true, MountPath: serviceaccount.MountPath}
	needed := false
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			mounted := false
			for _, m := range c.VolumeMounts {
				if m.MountPath == serviceaccount.MountPath {
					mounted = true
					break
				}
			}
			if !mounted {
				c.VolumeMounts = append(c.VolumeMounts, mount)
				needed = true
			}
		}
	}
	if needed && !hasVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: volumeName, VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()}})
	}
}

// TokenVolumeSource is the projected volume the ServiceAccount admission
// adds, exactly as Kubernetes': token (3607s), ca.crt, namespace.
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To(corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Path: "token", ExpirationSeconds: ptr.To[int64](serviceaccount.VolumeExpirationSeconds),
			}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: serviceaccount.RootCAConfigMapName},
				Items:                []corev1.KeyToPath{{Key: serviceaccount.RootCAConfigMapKey, Path: serviceaccount.RootCAConfigMapKey}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{
				Items: []corev1.DownwardAPIVolumeFile{{
					Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
				}},
			}},
		},
	}
}

// ensureDefaultServiceAccount creates the default service account of
// namespace ns unless it exists. A new namespace gets it at once, in the
// request that creates the namespace, so that pods can be created in it
// right away; Kubernetes' serviceaccount controller (which minik8s runs
// too, for the accounts deleted later) would take a moment.
func (s *Server) ensureDefaultServiceAccount(ctx context.Context, ns string) error {
	res, ok := s.table.Lookup(serviceAccountsGVR)
	if !ok {
		return nil
	}
	// The control plane creates it, not the caller (whose admission must
	// not apply to it).
	ctx = authn.WithUser(ctx, nil)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceaccount.DefaultServiceAccountName, Namespace: ns}}
	_, err := s.create(ctx, res, ns, sa, writeOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// namespaceCreated follows the creation of a namespace (obj of res).
func (s *Server) namespaceCreated(ctx context.Context, res *registry.Resource, obj runtime.Object) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || res.GroupVersionResource != corev1.SchemeGroupVersion.WithResource("namespaces") {
		return
	}
	if err := s.ensureDefaultServiceAccount(context.WithoutCancel(ctx), ns.Name); err != nil {
		s.log.Warn("create the default service account", "namespace", ns.Name, "err", err)
	}
}

// ensureDefaultServiceAccounts gives every active namespace its default
// service account (those of a data dir older than service accounts).
func (s *Server) ensureDefaultServiceAccounts(ctx context.Context) error {
	res, ok := s.table.Lookup(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if !ok {
		return nil
	}
	lr, err := s.list(ctx, res, "", &metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range lr.items {
		if ns, ok := it.(*corev1.Namespace); ok && ns.Status.Phase != corev1.NamespaceTerminating {
			errs = append(errs, s.ensureDefaultServiceAccount(ctx, ns.Name))
		}
	}
	return errors.Join(errs...)
}
