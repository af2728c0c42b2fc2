package local

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// imageUserRuntime is the fake runtime with images' configured users.
type imageUserRuntime struct {
	*fakeRuntime
	users map[string]string
}

func (r *imageUserRuntime) ImageUser(_ context.Context, ref string) (string, error) {
	return r.users[ref], nil
}

func TestSecurityContextMapping(t *testing.T) {
	e := newTestEnv(t)
	e.p.rt = &imageUserRuntime{fakeRuntime: e.rt, users: map[string]string{"app": "1000", "busybox": ""}}
	pod := testPod("sec", "a", "b")
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), FSGroup: ptr.To[int64](2000),
		SupplementalGroups:       []int64{4000},
		SupplementalGroupsPolicy: ptr.To(corev1.SupplementalGroupsPolicyStrict),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		Sysctls:                  []corev1.Sysctl{{Name: "net/ipv4/ip_local_port_range", Value: "1024 2048"}},
	}
	pod.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{
		RunAsUser:                ptr.To[int64](2000),
		Privileged:               ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/audit.json")},
		ProcMount:                ptr.To(corev1.DefaultProcMount),
	}
	ctx := context.Background()
	a, err := e.p.containerConfig(ctx, pod, &pod.Spec.Containers[0], false, 0, "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	wantA := runtime.ContainerConfig{
		User: "1000:3000", SupplementalGroups: []int64{4000, 2000}, StrictGroups: true,
		Seccomp: runtime.SeccompProfile{Type: runtime.SeccompRuntimeDefault},
		Sysctls: map[string]string{"net.ipv4.ip_local_port_range": "1024 2048"},
	}
	if got := securityFields(a); !reflect.DeepEqual(got, wantA) {
		t.Errorf("pod-level:\n got %+v\nwant %+v", got, wantA)
	}
	b, err := e.p.containerConfig(ctx, pod, &pod.Spec.Containers[1], false, 0, "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	wantB := runtime.ContainerConfig{
		User: "2000:3000", SupplementalGroups: []int64{4000, 2000}, StrictGroups: true,
		ReadOnlyRootfs: true, NoNewPrivs: true, CapAdd: []string{"NET_ADMIN"}, CapDrop: []string{"ALL"},
		Seccomp: runtime.SeccompProfile{Type: runtime.SeccompLocalhost, LocalhostPath: filepath.Join(e.root, "seccomp", "profiles/audit.json")},
		Sysctls: map[string]string{"net.ipv4.ip_local_port_range": "1024 2048"},
	}
	if got := securityFields(b); !reflect.DeepEqual(got, wantB) {
		t.Errorf("container-level:\n got %+v\nwant %+v", got, wantB)
	}

	// runAsGroup alone: the image's user with that group.
	g := testPod("group", "c")
	g.Spec.Containers[0].Image = "app"
	g.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsGroup: ptr.To[int64](3000)}
	if cfg, err := e.p.containerConfig(ctx, g, &g.Spec.Containers[0], false, 0, ""); err != nil || cfg.User != "1000:3000" || cfg.StrictGroups {
		t.Errorf("runAsGroup alone: user %q strict %v, %v", cfg.User, cfg.StrictGroups, err)
	}

	for name, mutate := range map[string]func(*corev1.Pod){
		"unknown capability": func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"FLY"}}}
		},
		"Unmasked proc": func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}
		},
		"Localhost escaping the seccomp dir": func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("../x.json")}}
		},
		"unsafe sysctl": func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
		},
	} {
		p := testPod("bad", "c")
		mutate(p)
		if _, err := e.p.containerConfig(ctx, p, &p.Spec.Containers[0], false, 0, ""); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// securityFields is cfg's security settings only.
func securityFields(cfg runtime.ContainerConfig) runtime.ContainerConfig {
	return runtime.ContainerConfig{
		User: cfg.User, RunAsNonRoot: cfg.RunAsNonRoot, Privileged: cfg.Privileged, ReadOnlyRootfs: cfg.ReadOnlyRootfs,
		SupplementalGroups: cfg.SupplementalGroups, StrictGroups: cfg.StrictGroups,
		CapAdd: cfg.CapAdd, CapDrop: cfg.CapDrop, NoNewPrivs: cfg.NoNewPrivs, Seccomp: cfg.Seccomp, Sysctls: cfg.Sysctls,
	}
}

func TestRunAsNonRoot(t *testing.T) {
	e := newTestEnv(t)
	rec := &recorder{}
	e.p.events = rec
	e.p.rt = &imageUserRuntime{fakeRuntime: e.rt, users: map[string]string{
		"busybox": "", "zero": "0:0", "named": "app", "app": "1000", "app-group": "1000:1000",
	}}
	for _, tc := range []struct {
		image     string
		runAsUser *int64
		want      string // the waiting message; "" runs
	}{
		{"busybox", nil, `container has runAsNonRoot and image will run as root (pod: "nr_default(uid-nr)", container: c)`},
		{"zero", nil, `container has runAsNonRoot and image will run as root (pod: "nr_default(uid-nr)", container: c)`},
		{"named", nil, `container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root (pod: "nr_default(uid-nr)", container: c)`},
		{"busybox", ptr.To[int64](0), `container's runAsUser breaks non-root policy (pod: "nr_default(uid-nr)", container: c)`},
		{"busybox", ptr.To[int64](1000), ""},
		{"app", nil, ""},
		{"app-group", nil, ""},
	} {
		pod := testPod("nr", "c")
		pod.UID = "uid-nr"
		pod.Spec.Containers[0].Image = tc.image
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
		pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: tc.runAsUser}
		cs := e.sync(e.worker(pod)).ContainerStatuses[0]
		switch {
		case tc.want == "" && state(cs) != "running":
			t.Errorf("%s: %s %+v, want running", tc.image, state(cs), cs.State.Waiting)
		case tc.want != "" && (state(cs) != "waiting:CreateContainerConfigError" || cs.State.Waiting.Message != tc.want):
			t.Errorf("%s: %s %+v, want CreateContainerConfigError %q", tc.image, state(cs), cs.State.Waiting, tc.want)
		}
		if err := e.p.DeletePod(context.Background(), withGraceZero(pod)); err != nil {
			t.Fatal(err)
		}
	}
	found := false
	for _, ev := range rec.events {
		found = found || strings.HasPrefix(ev, "Warning Failed Error: container has runAsNonRoot and image will run as root")
	}
	if !found {
		t.Errorf("no Failed event: %q", rec.events)
	}
}

func withGraceZero(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	p.DeletionGracePeriodSeconds = ptr.To[int64](0)
	return p
}

func TestPodSysctls(t *testing.T) {
	pod := testPod("s", "c")
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
		{Name: "kernel.shm_rmid_forced", Value: "1"},
		{Name: "net/ipv4/tcp_syncookies", Value: "1"},
		{Name: "net.ipv4.ping_group_range", Value: "0 2147483647"},
	}}
	got, err := podSysctls(pod)
	want := map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.tcp_syncookies": "1", "net.ipv4.ping_group_range": "0 2147483647"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%v %v", got, err)
	}
	pod.Spec.HostNetwork = true
	if _, err := podSysctls(pod); err == nil || err.Error() != `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled` {
		t.Errorf("host network: %v", err)
	}
	pod.Spec.HostNetwork = false
	pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: "net.core.somaxconn", Value: "1024"})
	if _, err := podSysctls(pod); err == nil || err.Error() != `forbidden sysctl: "net.core.somaxconn" not allowlisted` {
		t.Errorf("unsafe: %v", err)
	}
	if got := normalizeSysctl("net/ipv4/conf/eno2.100/rp_filter"); got != "net.ipv4.conf.eno2/100.rp_filter" {
		t.Errorf("normalized %q", got)
	}
}

// A pod that shares the node's network, PID or IPC namespace gets a
// sandbox in it; its address is the node's. A pod that shares none gets
// namespaces of its own.
func TestHostNamespaces(t *testing.T) {
	e := newTestEnv(t)
	e.p.cfg.NodeIP = "192.0.2.10"
	host := testPod("host", "c")
	host.Spec.HostNetwork, host.Spec.HostPID, host.Spec.HostIPC = true, true, true
	plain := testPod("plain", "c")
	for _, tc := range []struct {
		pod  *corev1.Pod
		want bool
	}{{host, true}, {plain, false}} {
		s := e.sync(e.worker(tc.pod))
		var cfg *runtime.SandboxConfig
		for _, c := range e.rt.sandboxes {
			if c.Name == tc.pod.Name {
				cfg = &c
			}
		}
		if cfg == nil {
			t.Fatalf("%s: no sandbox", tc.pod.Name)
		}
		if cfg.HostNetwork != tc.want || cfg.HostPID != tc.want || cfg.HostIPC != tc.want {
			t.Errorf("%s: sandbox hostNetwork %v hostPID %v hostIPC %v, want %v", tc.pod.Name, cfg.HostNetwork, cfg.HostPID, cfg.HostIPC, tc.want)
		}
		if (cfg.AttachNetwork == nil) != tc.want {
			t.Errorf("%s: attached to the pod network: %v", tc.pod.Name, cfg.AttachNetwork != nil)
		}
		if tc.want && s.PodIP != "192.0.2.10" {
			t.Errorf("%s: podIP %q, want the node's 192.0.2.10", tc.pod.Name, s.PodIP)
		}
	}
}

func TestAPIContainerUser(t *testing.T) {
	if apiContainerUser(nil) != nil {
		t.Error("no user reported as one")
	}
	got := apiContainerUser(&runtime.ProcessUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{2000, 3000}})
	want := &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{2000, 3000}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v", got.Linux)
	}
}

func gidOf(t *testing.T, path string) (uint32, fs.FileMode) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Gid, info.Mode()
}

func TestFSGroupVolumeFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files away")
	}
	dir := filepath.Join(t.TempDir(), "secret")
	payload := map[string]podenv.File{"key": {Data: []byte("v"), Mode: 0o400}, "sub/nested": {Data: []byte("n"), Mode: 0o600}}
	if err := writeVolumeFiles(dir, payload, ptr.To[int64](2000)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		mode fs.FileMode
	}{
		{"key", 0o440}, {"sub/nested", 0o640},
		{"", fs.ModeDir | fs.ModeSetgid | 0o755}, {"..data/sub", fs.ModeDir | fs.ModeSetgid | 0o755},
	} {
		p, _ := filepath.EvalSymlinks(filepath.Join(dir, tc.path))
		if gid, mode := gidOf(t, p); gid != 2000 || mode != tc.mode {
			t.Errorf("%s: gid %d mode %v, want 2000 %v", tc.path, gid, mode, tc.mode)
		}
	}
	// A refresh with the same content leaves the files as they are.
	before, _ := os.Readlink(filepath.Join(dir, "..data"))
	if err := writeVolumeFiles(dir, map[string]podenv.File{"key": {Data: []byte("v"), Mode: 0o400}, "sub/nested": {Data: []byte("n"), Mode: 0o600}}, ptr.To[int64](2000)); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Readlink(filepath.Join(dir, "..data")); after != before {
		t.Errorf("rewritten: %s -> %s", before, after)
	}
}

func TestSetVolumeOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files away")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := setVolumeOwnership(dir, 2000, nil); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]fs.FileMode{
		dir: fs.ModeDir | fs.ModeSetgid | 0o775, filepath.Join(dir, "a"): fs.ModeDir | fs.ModeSetgid | 0o770, filepath.Join(dir, "a", "f"): 0o660,
	} {
		if gid, mode := gidOf(t, path); gid != 2000 || mode != want {
			t.Errorf("%s: gid %d mode %v, want 2000 %v", path, gid, mode, want)
		}
	}
	// OnRootMismatch: the root matches, so a new file keeps its group.
	newFile := filepath.Join(dir, "a", "new")
	if err := os.WriteFile(newFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(newFile, -1, 0); err != nil {
		t.Fatal(err)
	}
	if err := setVolumeOwnership(dir, 2000, ptr.To(corev1.FSGroupChangeOnRootMismatch)); err != nil {
		t.Fatal(err)
	}
	if gid, _ := gidOf(t, newFile); gid != 0 {
		t.Errorf("OnRootMismatch changed a matching volume (gid %d)", gid)
	}
	if err := setVolumeOwnership(dir, 2000, ptr.To(corev1.FSGroupChangeAlways)); err != nil {
		t.Fatal(err)
	}
	if gid, _ := gidOf(t, newFile); gid != 2000 {
		t.Errorf("Always left gid %d", gid)
	}
	// Another group: the root mismatches and everything changes.
	if err := setVolumeOwnership(dir, 3000, ptr.To(corev1.FSGroupChangeOnRootMismatch)); err != nil {
		t.Fatal(err)
	}
	if gid, _ := gidOf(t, newFile); gid != 3000 {
		t.Errorf("OnRootMismatch on a mismatched root left gid %d", gid)
	}
}

func TestFSGroupLocalClaim(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files away")
	}
	dir := t.TempDir()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
		Spec:       corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}}},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv1"},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	e := newTestEnv(t, pv, pvc)
	pod := testPod("pvc", "c")
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	if err := e.p.setupVolumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if gid, mode := gidOf(t, dir); gid != 2000 || mode&fs.ModeSetgid == 0 {
		t.Errorf("local volume: gid %d mode %v", gid, mode)
	}
	// Once per pod: a later sync leaves what the pod changed.
	if err := os.Chown(dir, -1, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.p.setupVolumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if gid, _ := gidOf(t, dir); gid != 0 {
		t.Errorf("changed again on resync: gid %d", gid)
	}
}
