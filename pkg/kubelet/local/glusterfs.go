package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/glusterfs"
	"github.com/minik8s/minik8s/pkg/pki"
)

// pluginGlusterfs holds the node's GlusterFS mounts, one per
// PersistentVolume, shared by the pods that use it:
// <root>/plugins/kubernetes.io~glusterfs/<pv>. Not under a pod's
// directory, which is removed with the pod.
const pluginGlusterfs = "kubernetes.io~glusterfs"

// sweepGrace is how long a mount nobody has claimed since this provider
// started is left alone: a restarted kubelet's pods claim theirs again on
// their first sync.
const sweepGrace = 2 * time.Minute

// sharedMounts counts which pods use which of the node's GlusterFS
// mounts; a mount goes when its last pod stops.
type sharedMounts struct {
	mu    sync.Mutex
	users map[string]map[types.UID]bool // PV name → pods
}

func (p *Provider) glusterfsDir() string {
	return filepath.Join(p.cfg.RootDir, "plugins", pluginGlusterfs)
}

// mountGlusterfs makes sure pv is mounted on this node for pod and
// returns the mount point. The server is the first address of the PV's
// Endpoints that mounts; the node presents its client certificate.
func (p *Provider) mountGlusterfs(ctx context.Context, pod *corev1.Pod, pv *corev1.PersistentVolume) (string, error) {
	src := pv.Spec.Glusterfs
	path, err := glusterfs.ParsePath(src.Path)
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q: %w", pv.Name, err)
	}
	target := filepath.Join(p.glusterfsDir(), pv.Name)
	m := &p.shared
	m.mu.Lock()
	defer m.mu.Unlock()
	if ok, _ := glusterfs.IsMounted(target); ok {
		check, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := glusterfs.Check(check, target)
		cancel()
		if err == nil {
			m.use(pv.Name, pod.UID)
			return target, nil
		}
		// Its client died or lost the server: mounted again below.
		p.log.Warn("glusterfs mount does not answer; mounting again", "volume", pv.Name, "err", err)
		if err := glusterfs.Unmount(target); err != nil {
			return "", err
		}
	}
	servers, err := p.glusterfsServers(ctx, pod, src)
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q: %w", pv.Name, err)
	}
	tls, err := p.glusterfsTLS()
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q: %w", pv.Name, err)
	}
	var errs []error
	for _, s := range servers {
		err := glusterfs.Mount(ctx, glusterfs.MountConfig{Server: s, Path: path, TLS: tls, ReadOnly: src.ReadOnly, Target: target})
		if err == nil {
			p.log.Info("mounted glusterfs volume", "volume", pv.Name, "path", path, "server", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)))
			m.use(pv.Name, pod.UID)
			return target, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

func (m *sharedMounts) use(pv string, uid types.UID) {
	if m.users == nil {
		m.users = map[string]map[types.UID]bool{}
	}
	if m.users[pv] == nil {
		m.users[pv] = map[types.UID]bool{}
	}
	m.users[pv][uid] = true
}

// releaseGlusterfs forgets pod uid's use of the node's mounts and
// unmounts those no pod uses any more. Called once the pod's containers
// have stopped.
func (p *Provider) releaseGlusterfs(uid types.UID) {
	m := &p.shared
	m.mu.Lock()
	defer m.mu.Unlock()
	for pv, users := range m.users {
		if !users[uid] {
			continue
		}
		delete(users, uid)
		if len(users) > 0 {
			continue
		}
		delete(m.users, pv)
		if err := glusterfs.Unmount(filepath.Join(p.glusterfsDir(), pv)); err != nil {
			p.log.Warn("unmount glusterfs volume", "volume", pv, "err", err)
			continue
		}
		p.log.Info("unmounted glusterfs volume", "volume", pv)
	}
}

// sweepGlusterfs unmounts the mounts no pod of this provider has used
// since sweepGrace after it started: those of pods that went while the
// kubelet was down.
func (p *Provider) sweepGlusterfs(started time.Time) {
	if p.clock.Since(started) < sweepGrace {
		return
	}
	mounts, err := glusterfs.Mounts(p.glusterfsDir())
	if err != nil || len(mounts) == 0 {
		return
	}
	m := &p.shared
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, target := range mounts {
		pv := filepath.Base(target)
		if len(m.users[pv]) > 0 {
			continue
		}
		if err := glusterfs.Unmount(target); err != nil {
			p.log.Warn("unmount unused glusterfs volume", "volume", pv, "err", err)
			continue
		}
		p.log.Info("unmounted unused glusterfs volume", "volume", pv)
	}
}

// runGlusterfsSweeper sweeps every minute until the provider closes.
func (p *Provider) runGlusterfsSweeper() {
	started := p.clock.Now()
	tick := p.clock.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C():
			p.sweepGlusterfs(started)
		}
	}
}

// glusterfsServers are the addresses and port of the PV's Endpoints
// (namespace: the PV's, else the pod's, as Kubernetes' plugin reads them).
func (p *Provider) glusterfsServers(ctx context.Context, pod *corev1.Pod, src *corev1.GlusterfsPersistentVolumeSource) ([]glusterfs.Server, error) {
	if p.cfg.Client == nil {
		return nil, errors.New("no API client to read the glusterfs endpoints")
	}
	ns := pod.Namespace
	if src.EndpointsNamespace != nil && *src.EndpointsNamespace != "" {
		ns = *src.EndpointsNamespace
	}
	ep, err := p.cfg.Client.CoreV1().Endpoints(ns).Get(ctx, src.EndpointsName, metaGet)
	if err != nil {
		return nil, fmt.Errorf("glusterfs endpoints %s/%s: %w", ns, src.EndpointsName, err)
	}
	var out []glusterfs.Server
	for _, ss := range ep.Subsets {
		port := glusterfs.DefaultPort
		if len(ss.Ports) > 0 {
			port = int(ss.Ports[0].Port)
		}
		for _, a := range ss.Addresses {
			out = append(out, glusterfs.Server{Host: a.IP, Port: port})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("glusterfs endpoints %s/%s list no ready address", ns, src.EndpointsName)
	}
	return out, nil
}

// glusterfsTLS writes the node's client certificate, key and the
// cluster's CA where the client reads them: the server lets in only
// certificates of the cluster's nodes.
func (p *Provider) glusterfsTLS() (glusterfs.TLS, error) {
	c := p.cfg.Credential
	if c == nil {
		return glusterfs.TLS{}, errors.New("glusterfs volumes need the node's client certificate, and this node has none")
	}
	read := func(data []byte, file, what string) ([]byte, error) {
		if len(data) > 0 {
			return data, nil
		}
		if file == "" {
			return nil, fmt.Errorf("glusterfs volumes need the node's %s: this node authenticates without a client certificate", what)
		}
		return os.ReadFile(file)
	}
	cert, err := read(c.CertData, c.CertFile, "client certificate")
	if err != nil {
		return glusterfs.TLS{}, err
	}
	key, err := read(c.KeyData, c.KeyFile, "client key")
	if err != nil {
		return glusterfs.TLS{}, err
	}
	ca, err := read(c.CAData, c.CAFile, "cluster CA")
	if err != nil {
		return glusterfs.TLS{}, err
	}
	dir := filepath.Join(p.glusterfsDir(), "tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return glusterfs.TLS{}, err
	}
	tls := glusterfs.TLS{CertFile: filepath.Join(dir, "node.crt"), KeyFile: filepath.Join(dir, "node.key"), CAFile: filepath.Join(dir, "ca.crt")}
	for file, data := range map[string][]byte{tls.CertFile: cert, tls.KeyFile: key, tls.CAFile: ca} {
		if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := pki.WriteFileAtomic(file, data); err != nil {
			return glusterfs.TLS{}, err
		}
	}
	return tls, nil
}
