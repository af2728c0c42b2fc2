package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
)

// Volume plugin directories, named as in Kubernetes.
const (
	pluginEmptyDir    = "kubernetes.io~empty-dir"
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
	pluginProjected   = "kubernetes.io~projected"
)

var metaGet = metav1.GetOptions{}

// volumeDir is where a pod's volume of a plugin lives.
func (p *Provider) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(p.podDir(uid), "volumes", plugin, name)
}

// setupVolumes makes every volume of the pod ready to mount: emptyDirs
// created, hostPaths checked (or created), configMap, secret, downwardAPI
// and projected volumes written.
func (p *Provider) setupVolumes(ctx context.Context, pod *corev1.Pod) error {
	objs := podenv.NewObjects(ctx, p.cfg.Client, pod.Namespace)
	var gid *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		gid = sc.FSGroup
	}
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if err := p.setupVolume(ctx, pod, v, objs, gid); err != nil {
			errs = append(errs, fmt.Errorf("volume %q: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (p *Provider) setupVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, objs *podenv.Objects, gid *int64) error {
	switch src := v.VolumeSource; {
	case src.EmptyDir != nil:
		return p.setupEmptyDir(pod, v, gid)
	case src.HostPath != nil:
		return checkHostPath(src.HostPath)
	case src.ConfigMap != nil:
		payload, err := podenv.ConfigMapPayload(objs, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.DefaultMode, podenv.Optional(src.ConfigMap.Optional))
		if err != nil {
			return err
		}
		return writeVolumeFiles(p.volumeDir(pod.UID, pluginConfigMap, v.Name), payload, gid)
	case src.Secret != nil:
		payload, err := podenv.SecretPayload(objs, src.Secret.SecretName, src.Secret.Items, src.Secret.DefaultMode, podenv.Optional(src.Secret.Optional))
		if err != nil {
			return err
		}
		return writeVolumeFiles(p.volumeDir(pod.UID, pluginSecret, v.Name), payload, gid)
	case src.DownwardAPI != nil:
		payload, err := podenv.DownwardPayload(pod, src.DownwardAPI.Items, src.DownwardAPI.DefaultMode, p.allocatable())
		if err != nil {
			return err
		}
		return writeVolumeFiles(p.volumeDir(pod.UID, pluginDownwardAPI, v.Name), payload, gid)
	case src.Projected != nil:
		payload, err := p.projectedPayload(ctx, pod, v.Name, src.Projected, objs)
		if err != nil {
			return err
		}
		return writeVolumeFiles(p.volumeDir(pod.UID, pluginProjected, v.Name), payload, gid)
	case src.PersistentVolumeClaim != nil:
		path, err := p.claimPath(ctx, pod, src.PersistentVolumeClaim.ClaimName)
		if err != nil || gid == nil || src.PersistentVolumeClaim.ReadOnly {
			return err
		}
		return p.claimOwnership(ctx, pod, v, path, *gid)
	case src.Image != nil:
		// Pulled and mounted as the containers that mount it start
		// (imagevolume.go), as the kubelet pulls container images.
		return nil
	}
	return errors.New("unsupported volume type on this node (emptyDir, hostPath, configMap, secret, downwardAPI, projected, image and persistentVolumeClaim of hostPath, local or glusterfs volumes are)")
}

// writeVolumeFiles writes a configMap, secret, downwardAPI or projected
// volume. With an fsGroup, as Kubernetes' SetVolumeOwnership leaves these
// read-only volumes, its files belong to the group and are readable by
// it, and its directories belong to the group with the setgid bit.
func writeVolumeFiles(dir string, payload map[string]podenv.File, gid *int64) error {
	if gid != nil {
		for k, f := range payload {
			f.Mode |= 0o440
			payload[k] = f
		}
	}
	if err := writeAtomic(dir, payload, gid); err != nil || gid == nil {
		return err
	}
	// writeAtomic gave the files their group; symlinks are left as they are.
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(*gid)); err != nil {
			return err
		}
		return os.Chmod(path, info.Mode()|fs.ModeSetgid|0o550)
	})
}

// fsGroupDir holds a mark per persistent volume of the pod whose
// ownership was set for its fsGroup: it is done once per pod.
const fsGroupDir = "fsgroup-applied"

// claimOwnership gives a local persistent volume to the pod's fsGroup
// the first time the pod mounts it, as Kubernetes' local volume plugin
// does: everything in it becomes the group's, group-writable,
// directories setgid; with fsGroupChangePolicy OnRootMismatch nothing
// changes when the root already has that group and those modes.
// Kubernetes leaves hostPath volumes alone, and so does this.
func (p *Provider) claimOwnership(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, path string, gid int64) error {
	mark := filepath.Join(p.podDir(pod.UID), fsGroupDir, v.Name)
	if _, err := os.Stat(mark); err == nil {
		return nil
	}
	pvc, err := p.cfg.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metaGet)
	if err != nil {
		return fmt.Errorf("persistentvolumeclaim %q: %w", v.PersistentVolumeClaim.ClaimName, err)
	}
	pv, err := p.cfg.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metaGet)
	if err != nil {
		return fmt.Errorf("persistentvolume %q: %w", pvc.Spec.VolumeName, err)
	}
	if pv.Spec.Local != nil {
		if err := setVolumeOwnership(path, gid, pod.Spec.SecurityContext.FSGroupChangePolicy); err != nil {
			return fmt.Errorf("set the ownership of %s for fsGroup %d: %w", path, gid, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(mark), 0o755); err != nil {
		return err
	}
	return os.WriteFile(mark, []byte(strconv.FormatInt(gid, 10)), 0o644)
}

// setVolumeOwnership makes everything under dir the group gid's, with
// group read and write, directories also group-searchable and setgid (so
// what is made in them gets the group), as Kubernetes does for a
// writable volume. With policy OnRootMismatch it stops when dir already
// looks done.
func setVolumeOwnership(dir string, gid int64, policy *corev1.PodFSGroupChangePolicy) error {
	const rw = 0o660
	if policy != nil && *policy == corev1.FSGroupChangeOnRootMismatch {
		info, err := os.Stat(dir)
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if ok && int64(st.Gid) == gid && info.Mode()&rw == rw && info.Mode()&fs.ModeSetgid != 0 {
			return nil
		}
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(gid)); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mask := fs.FileMode(rw)
		if d.IsDir() {
			mask |= fs.ModeSetgid | 0o110
		}
		return os.Chmod(path, info.Mode()|mask)
	})
}

// volumeSource is the host path a volume mounts from, and whether it is
// read-only whatever the mount says.
func (p *Provider) volumeSource(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (string, bool, error) {
	switch src := v.VolumeSource; {
	case src.EmptyDir != nil:
		return p.volumeDir(pod.UID, pluginEmptyDir, v.Name), false, nil
	case src.HostPath != nil:
		return src.HostPath.Path, false, nil
	case src.ConfigMap != nil:
		return p.volumeDir(pod.UID, pluginConfigMap, v.Name), true, nil
	case src.Secret != nil:
		return p.volumeDir(pod.UID, pluginSecret, v.Name), true, nil
	case src.DownwardAPI != nil:
		return p.volumeDir(pod.UID, pluginDownwardAPI, v.Name), true, nil
	case src.Projected != nil:
		return p.volumeDir(pod.UID, pluginProjected, v.Name), true, nil
	case src.PersistentVolumeClaim != nil:
		path, err := p.claimPath(ctx, pod, src.PersistentVolumeClaim.ClaimName)
		return path, src.PersistentVolumeClaim.ReadOnly, err
	case src.Image != nil:
		return p.volumeDir(pod.UID, pluginImage, v.Name), true, nil
	}
	return "", false, fmt.Errorf("volume %q: unsupported volume type", v.Name)
}

// claimPath is the host path of a claim bound to a hostPath, local or
// glusterfs PersistentVolume (a glusterfs one mounted on this node for
// the pod).
func (p *Provider) claimPath(ctx context.Context, pod *corev1.Pod, claim string) (string, error) {
	if p.cfg.Client == nil {
		return "", errors.New("no API client to read persistent volume claims")
	}
	pvc, err := p.cfg.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, claim, metaGet)
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q: %w", claim, err)
	}
	if pvc.DeletionTimestamp != nil {
		// As Kubernetes' kubelet: a claim on its way out is not mounted
		// anew (its protection holds it only for pods already using it).
		return "", fmt.Errorf("persistentvolumeclaim %q is being deleted", claim)
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		// The pod waits (Pending, with this as a FailedMount event) for
		// the binder or the provisioner; the next sync looks again.
		return "", fmt.Errorf("persistentvolumeclaim %q is not bound", claim)
	}
	pv, err := p.cfg.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metaGet)
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q: %w", pvc.Spec.VolumeName, err)
	}
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path, checkHostPath(pv.Spec.HostPath)
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path, checkLocal(pv)
	case pv.Spec.Glusterfs != nil:
		return p.mountGlusterfs(ctx, pod, pv)
	}
	return "", fmt.Errorf("persistentvolume %q: only hostPath, local and glusterfs volumes can be mounted on this node", pv.Name)
}

// checkLocal makes sure a local volume's directory is there. The
// local-path provisioner only names it (the control plane cannot reach
// this disk): it is made here, on first mount, open to every user as
// rancher's provisioner makes it, so that pods running as non-root can
// write. A local volume an administrator made must exist already, as in
// Kubernetes.
func checkLocal(pv *corev1.PersistentVolume) error {
	path := pv.Spec.Local.Path
	info, err := os.Stat(path)
	switch {
	case err == nil && !info.IsDir():
		return fmt.Errorf("local volume %q: %s is not a directory", pv.Name, path)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("local volume %q: %w", pv.Name, err)
	case pv.Annotations[annProvisionedBy] != localPathProvisioner:
		return fmt.Errorf("local volume %q: path %s does not exist", pv.Name, path)
	}
	if err := os.MkdirAll(path, 0o777); err != nil {
		return fmt.Errorf("local volume %q: %w", pv.Name, err)
	}
	// MkdirAll's mode is cut by the umask.
	return os.Chmod(path, 0o777)
}

// annProvisionedBy names a PV's provisioner; localPathProvisioner is
// minik8s' own (pkg/controller/volume/localpath), and annLocalPathRoot
// the Node annotation it reads a node's root from.
const (
	annProvisionedBy     = "pv.kubernetes.io/provisioned-by"
	localPathProvisioner = "minik8s.io/local-path"
	annLocalPathRoot     = "minik8s.io/local-path-root"
)

// checkHostPath checks a hostPath against its type, creating what the
// ...OrCreate types ask for.
func checkHostPath(h *corev1.HostPathVolumeSource) error {
	path := h.Path
	typ := corev1.HostPathUnset
	if h.Type != nil {
		typ = *h.Type
	}
	info, err := os.Stat(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	fail := func(what string) error { return fmt.Errorf("hostPath type check failed: %s is not a %s", path, what) }
	switch typ {
	case corev1.HostPathUnset:
		return nil
	case corev1.HostPathDirectoryOrCreate:
		if !exists {
			return os.MkdirAll(path, 0o755)
		}
		if !info.IsDir() {
			return fail("directory")
		}
	case corev1.HostPathDirectory:
		if !exists || !info.IsDir() {
			return fail("directory")
		}
	case corev1.HostPathFileOrCreate:
		if !exists {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if !info.Mode().IsRegular() {
			return fail("file")
		}
	case corev1.HostPathFile:
		if !exists || !info.Mode().IsRegular() {
			return fail("file")
		}
	case corev1.HostPathSocket:
		if !exists || info.Mode()&fs.ModeSocket == 0 {
			return fail("socket file")
		}
	case corev1.HostPathCharDev:
		if !exists || info.Mode()&fs.ModeCharDevice == 0 {
			return fail("character device")
		}
	case corev1.HostPathBlockDev:
		if !exists || info.Mode()&fs.ModeDevice == 0 || info.Mode()&fs.ModeCharDevice != 0 {
			return fail("block device")
		}
	default:
		return fmt.Errorf("hostPath type %q is not supported", typ)
	}
	return nil
}

// projectedPayload merges a projected volume's sources. Every source is
// tried, so that all of a volume's podCertificate sources are asked for
// at once.
func (p *Provider) projectedPayload(ctx context.Context, pod *corev1.Pod, volume string, src *corev1.ProjectedVolumeSource, objs *podenv.Objects) (map[string]podenv.File, error) {
	mode := podenv.ModeOr(src.DefaultMode, podenv.DefaultFileMode)
	out := map[string]podenv.File{}
	var errs []error
	merge := func(m map[string]podenv.File, err error) {
		if err != nil {
			errs = append(errs, err)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	for i, s := range src.Sources {
		switch {
		case s.ConfigMap != nil:
			merge(podenv.ConfigMapPayload(objs, s.ConfigMap.Name, s.ConfigMap.Items, &mode, podenv.Optional(s.ConfigMap.Optional)))
		case s.Secret != nil:
			merge(podenv.SecretPayload(objs, s.Secret.Name, s.Secret.Items, &mode, podenv.Optional(s.Secret.Optional)))
		case s.DownwardAPI != nil:
			merge(podenv.DownwardPayload(pod, s.DownwardAPI.Items, &mode, p.allocatable()))
		case s.ServiceAccountToken != nil:
			token, err := p.serviceAccountToken(ctx, pod, s.ServiceAccountToken)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out[s.ServiceAccountToken.Path] = podenv.File{Data: []byte(token), Mode: mode}
		case s.ClusterTrustBundle != nil:
			anchors, err := p.trustAnchors(ctx, s.ClusterTrustBundle)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out[s.ClusterTrustBundle.Path] = podenv.File{Data: anchors, Mode: mode}
		case s.PodCertificate != nil:
			merge(p.podCertificateFiles(ctx, pod, volume, i, s.PodCertificate, mode))
		default:
			errs = append(errs, errors.New("unsupported projected volume source (configMap, secret, downwardAPI, serviceAccountToken, clusterTrustBundle and podCertificate are supported)"))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// podCertificateFiles are the files of a podCertificate source, as
// Kubernetes' projected volume writes them: the credential bundle (the
// PEM private key, then the certificate chain), the key alone, the chain
// alone, at whichever of the three paths the source names. With an
// fsGroup they are 0600 (then readable by the group) whatever the
// volume's defaultMode, as upstream.
func (p *Provider) podCertificateFiles(ctx context.Context, pod *corev1.Pod, volume string, index int, src *corev1.PodCertificateProjection, mode int32) (map[string]podenv.File, error) {
	if p.certs == nil {
		return nil, errors.New("no API client to request pod certificates")
	}
	key, chain, err := p.certs.Credentials(ctx, pod, volume, index, src)
	if err != nil {
		return nil, err
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		mode = 0o600
	}
	out := map[string]podenv.File{}
	if src.CredentialBundlePath != "" {
		out[src.CredentialBundlePath] = podenv.File{Data: append(slices.Clip(key), chain...), Mode: mode}
	}
	if src.KeyPath != "" {
		out[src.KeyPath] = podenv.File{Data: key, Mode: mode}
	}
	if src.CertificateChainPath != "" {
		out[src.CertificateChainPath] = podenv.File{Data: chain, Mode: mode}
	}
	return out, nil
}

// tokenCache keeps service account tokens until 80% of their life, as
// Kubernetes' token manager.
type tokenCache struct {
	mu     sync.Mutex
	tokens map[string]cachedToken
}

type cachedToken struct {
	token   string
	refresh time.Time
}

// serviceAccountToken asks the API for a token of the pod's service
// account, bound to the pod.
func (p *Provider) serviceAccountToken(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection) (string, error) {
	if p.cfg.Client == nil {
		return "", errors.New("no API client to request service account tokens")
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	key := string(pod.UID) + "/" + src.Path + "/" + src.Audience
	c := &p.files.tokens
	c.mu.Lock()
	cached, ok := c.tokens[key]
	c.mu.Unlock()
	if ok && p.clock.Now().Before(cached.refresh) {
		return cached.token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(max(ptr.Deref(src.ExpirationSeconds, 3607), 600)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := p.cfg.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("serviceaccount %q not found", sa)
		}
		return "", fmt.Errorf("request a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	now := p.clock.Now()
	life := tr.Status.ExpirationTimestamp.Sub(now)
	if life <= 0 {
		life = time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	}
	c.mu.Lock()
	if c.tokens == nil {
		c.tokens = map[string]cachedToken{}
	}
	c.tokens[key] = cachedToken{token: tr.Status.Token, refresh: now.Add(life * 8 / 10)}
	c.mu.Unlock()
	return tr.Status.Token, nil
}

// forget drops a deleted pod's tokens.
func (c *tokenCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.tokens {
		if strings.HasPrefix(k, string(uid)+"/") {
			delete(c.tokens, k)
		}
	}
}

// fileCache holds what the provider keeps about pods' files.
type fileCache struct {
	tokens tokenCache
}
