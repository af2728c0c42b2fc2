package local

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
)

// tree lists a directory as "path -> target" for symlinks, "path mode
// content" for files and "path/" for directories.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, _ := d.Info()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			out = append(out, rel+" -> "+target)
		case d.IsDir():
			out = append(out, rel+"/")
		default:
			data, _ := os.ReadFile(path)
			out = append(out, rel+" "+info.Mode().Perm().String()+" "+string(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// visible lists what a container sees: every file reached through the
// top-level entries, as "path mode content".
func visible(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		root := filepath.Join(dir, e.Name())
		_ = filepath.WalkDir(root+"/", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, _ := os.Stat(path)
			data, _ := os.ReadFile(path)
			rel, _ := filepath.Rel(dir, filepath.Clean(path))
			out = append(out, rel+" "+info.Mode().Perm().String()+" "+string(data))
			return nil
		})
		if info, err := os.Stat(root); err == nil && !info.IsDir() {
			data, _ := os.ReadFile(root)
			out = append(out, e.Name()+" "+info.Mode().Perm().String()+" "+string(data))
		}
	}
	slices.Sort(out)
	return out
}

func TestAtomicWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	v1 := map[string]podenv.File{
		"a":         {Data: []byte("1"), Mode: 0o644},
		"sub/b":     {Data: []byte("2"), Mode: 0o600},
		"sub/c/d":   {Data: []byte("3"), Mode: 0o400},
		"stale-key": {Data: []byte("x"), Mode: 0o644},
	}
	if err := writeAtomic(dir, v1, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"a -rw-r--r-- 1", "stale-key -rw-r--r-- x", "sub/b -rw------- 2", "sub/c/d -r-------- 3"}
	if got := visible(t, dir); !slices.Equal(got, want) {
		t.Errorf("visible:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	link, _ := os.Readlink(filepath.Join(dir, "..data"))
	if !strings.HasPrefix(link, "..20") {
		t.Errorf("..data -> %s", link)
	}
	if target, _ := os.Readlink(filepath.Join(dir, "a")); target != "..data/a" {
		t.Errorf("a -> %s", target)
	}

	// The same payload changes nothing.
	if err := writeAtomic(dir, v1, nil); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, "..data")); again != link {
		t.Errorf("rewritten without a change: %s -> %s", link, again)
	}

	// An update swaps everything at once and drops what is gone.
	v2 := map[string]podenv.File{"a": {Data: []byte("new"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o644}}
	if err := writeAtomic(dir, v2, nil); err != nil {
		t.Fatal(err)
	}
	want = []string{"a -rw-r--r-- new", "sub/b -rw-r--r-- 2"}
	if got := visible(t, dir); !slices.Equal(got, want) {
		t.Errorf("after update:\n%s", strings.Join(got, "\n"))
	}
	var hidden []string
	for _, e := range tree(t, dir) {
		if strings.HasPrefix(e, "..") && strings.Count(e, "/") == 1 && strings.HasSuffix(e, "/") {
			hidden = append(hidden, e)
		}
	}
	if len(hidden) != 1 {
		t.Errorf("old data directories left: %v", hidden)
	}

	for _, bad := range []string{"../x", "/abs", "a/../../x", "..data"} {
		if err := writeAtomic(dir, map[string]podenv.File{bad: {}}, nil); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
}

func TestVolumes(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"},
		Data: map[string]string{"app.conf": "port=80", "other": "o"}, BinaryData: map[string][]byte{"bin": {1, 2}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "creds"},
		Data: map[string][]byte{"user": []byte("admin"), "pass": []byte("pw")}}
	e := newTestEnv(t, cm, secret)
	hostDir := filepath.Join(t.TempDir(), "host", "data")
	pod := testPod("vols", "c")
	pod.Annotations = map[string]string{"b": "2", "a": "1"}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	cmVol := func(name string, items []corev1.KeyToPath, mode *int32, opt *bool) corev1.VolumeSource {
		return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items, DefaultMode: mode, Optional: opt}}
	}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: hostDir, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
		{Name: "all", VolumeSource: cmVol("cfg", nil, ptr.To[int32](0o640), nil)},
		{Name: "items", VolumeSource: cmVol("cfg", []corev1.KeyToPath{{Key: "app.conf", Path: "etc/app.conf", Mode: ptr.To[int32](0o600)}}, nil, nil)},
		{Name: "optional", VolumeSource: cmVol("absent", nil, nil, ptr.To(true))},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds",
			Items: []corev1.KeyToPath{{Key: "user", Path: "username"}}}}},
		{Name: "downward", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
		}}}},
		{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
				Items: []corev1.KeyToPath{{Key: "other", Path: "other"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"},
				Items: []corev1.KeyToPath{{Key: "pass", Path: "secret/pass"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}},
	}
	if err := e.p.setupVolumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	vol := func(plugin, name string) string { return e.p.volumeDir(pod.UID, plugin, name) }
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{vol(pluginConfigMap, "all"), []string{"app.conf -rw-r----- port=80", "bin -rw-r----- \x01\x02", "other -rw-r----- o"}},
		{vol(pluginConfigMap, "items"), []string{"etc/app.conf -rw------- port=80"}},
		{vol(pluginConfigMap, "optional"), nil},
		{vol(pluginSecret, "secret"), []string{"username -rw-r--r-- admin"}},
		{vol(pluginDownwardAPI, "downward"), []string{
			"annotations -rw-r--r-- a=\"1\"\nb=\"2\"", `labels -rw-r--r-- app="vols"`, "mem -rw-r--r-- 64", "name -rw-r--r-- vols"}},
		{vol(pluginProjected, "projected"), []string{"ns -rw-r--r-- default", "other -rw-r--r-- o", "secret/pass -rw-r--r-- pw"}},
	} {
		if got := visible(t, tc.dir); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n%q\nwant\n%q", filepath.Base(tc.dir), got, tc.want)
		}
	}
	for _, name := range []string{"scratch", "mem"} {
		info, err := os.Stat(vol(pluginEmptyDir, name))
		if err != nil || info.Mode().Perm() != 0o777 || !info.IsDir() {
			t.Errorf("emptyDir %s: %v %v", name, info, err)
		}
	}
	if info, err := os.Stat(hostDir); err != nil || !info.IsDir() {
		t.Errorf("hostPath DirectoryOrCreate: %v", err)
	}

	// Mounts: configMap volumes are read-only, subPath picks a file.
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "items", MountPath: "/etc/app.conf", SubPath: "etc/app.conf"},
		{Name: "host", MountPath: "/data/logs", SubPathExpr: "$(POD)"},
		{Name: "host", MountPath: "/data", ReadOnly: true},
	}
	mounts, err := e.p.containerMounts(context.Background(), pod, &pod.Spec.Containers[0], 0, map[string]string{"POD": "vols"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range mounts {
		got = append(got, m.ContainerPath+"="+strings.TrimPrefix(strings.TrimPrefix(m.HostPath, e.root), filepath.Dir(filepath.Dir(hostDir)))+map[bool]string{true: " ro"}[m.ReadOnly])
	}
	wantMounts := []string{
		"/scratch=/pods/uid-vols/volumes/kubernetes.io~empty-dir/scratch",
		"/data=/host/data ro",
		"/etc/app.conf=/pods/uid-vols/volumes/kubernetes.io~configmap/items/etc/app.conf ro",
		"/data/logs=/host/data/vols",
	}
	for _, w := range wantMounts {
		if !slices.Contains(got, w) {
			t.Errorf("mount %s missing in\n%s", w, strings.Join(got, "\n"))
		}
	}
	if slices.Index(got, "/data=/host/data ro") > slices.Index(got, "/data/logs=/host/data/vols") {
		t.Errorf("a parent mount after its child: %v", got)
	}

	// Errors name what is missing.
	for _, tc := range []struct {
		src  corev1.VolumeSource
		want string
	}{
		{cmVol("absent", nil, nil, nil), `volume "bad": configmap "absent" not found`},
		{cmVol("cfg", []corev1.KeyToPath{{Key: "nope", Path: "x"}}, nil, nil), `volume "bad": configmap references non-existent config key: nope`},
		{corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nonexistent/dir", Type: ptr.To(corev1.HostPathDirectory)}},
			`volume "bad": hostPath type check failed: /nonexistent/dir is not a directory`},
		{corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: ptr.To(corev1.HostPathFile)}},
			`volume "bad": hostPath type check failed: ` + hostDir + ` is not a file`},
	} {
		bad := pod.DeepCopy()
		bad.Spec.Volumes = []corev1.Volume{{Name: "bad", VolumeSource: tc.src}}
		if err := e.p.setupVolumes(context.Background(), bad); err == nil || err.Error() != tc.want {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		path string
		typ  corev1.HostPathType
		ok   bool
	}{
		{dir, corev1.HostPathUnset, true},
		{filepath.Join(dir, "missing"), corev1.HostPathUnset, true},
		{dir, corev1.HostPathDirectory, true},
		{file, corev1.HostPathDirectory, false},
		{file, corev1.HostPathFile, true},
		{dir, corev1.HostPathFile, false},
		{filepath.Join(dir, "new/file"), corev1.HostPathFileOrCreate, true},
		{dir, corev1.HostPathFileOrCreate, false},
		{file, corev1.HostPathDirectoryOrCreate, false},
		{sock, corev1.HostPathSocket, true},
		{file, corev1.HostPathSocket, false},
		{"/dev/null", corev1.HostPathCharDev, true},
		{file, corev1.HostPathBlockDev, false},
	} {
		err := checkHostPath(&corev1.HostPathVolumeSource{Path: tc.path, Type: ptr.To(tc.typ)})
		if (err == nil) != tc.ok {
			t.Errorf("%s %q: %v", tc.path, tc.typ, err)
		}
	}
	if info, err := os.Stat(filepath.Join(dir, "new/file")); err != nil || !info.Mode().IsRegular() {
		t.Errorf("FileOrCreate did not create the file: %v", err)
	}
}

func TestPodFiles(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("files", "c")
	pod.Spec.Hostname, pod.Spec.Subdomain = "db-0", "db"
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "1.2.3.4", Hostnames: []string{"foo", "bar"}}}
	hosts, err := e.p.hostsContent(pod, "10.244.0.9")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		"10.244.0.9\tdb-0.db.default.svc.cluster.local\tdb-0\n\n# Entries added by HostAliases.\n1.2.3.4\tfoo\tbar\n"
	if string(hosts) != want {
		t.Errorf("hosts:\n%s\nwant\n%s", hosts, want)
	}
	for _, tc := range []struct {
		name   string
		policy corev1.DNSPolicy
		host   bool
		config *corev1.PodDNSConfig
		noDNS  bool
		want   string
	}{
		{name: "cluster first", want: "search default.svc.cluster.local svc.cluster.local cluster.local example.com\nnameserver 10.96.0.10\noptions ndots:5\n"},
		{name: "default", policy: corev1.DNSDefault, want: "search example.com\nnameserver 1.1.1.1\n"},
		{name: "host network", host: true, want: "search example.com\nnameserver 1.1.1.1\n"},
		{name: "host network, cluster", policy: corev1.DNSClusterFirstWithHostNet, host: true,
			want: "search default.svc.cluster.local svc.cluster.local cluster.local example.com\nnameserver 10.96.0.10\noptions ndots:5\n"},
		{name: "no cluster DNS", noDNS: true, want: "search example.com\nnameserver 1.1.1.1\n"},
		{name: "none", policy: corev1.DNSNone, config: &corev1.PodDNSConfig{Nameservers: []string{"9.9.9.9"}, Searches: []string{"a.b"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}},
			want: "search a.b\nnameserver 9.9.9.9\noptions ndots:2 edns0\n"},
		{name: "merged config", config: &corev1.PodDNSConfig{Nameservers: []string{"9.9.9.9"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}}},
			want: "search default.svc.cluster.local svc.cluster.local cluster.local example.com\nnameserver 10.96.0.10\nnameserver 9.9.9.9\noptions ndots:1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			p.Spec.DNSPolicy, p.Spec.HostNetwork, p.Spec.DNSConfig = tc.policy, tc.host, tc.config
			prov := e.p
			if tc.noDNS {
				cfg := e.p.cfg
				cfg.ClusterDNS = nil
				prov = &Provider{cfg: cfg}
			}
			got, err := prov.resolvContent(p)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("resolv.conf:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	if got := podHostname(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 62) + "-b"}}); got != strings.Repeat("a", 62) {
		t.Errorf("long host name %q", got)
	}
}

// A termination message comes from the container's file, or with
// FallbackToLogsOnError and a failure from the end of its log exactly as
// logged: the last 80 lines, of those the last 2048 bytes, and no newline
// after output that had none (`echo -n DONE; false` reports "DONE").
func TestTerminationMessage(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("term", "c", "fallback", "nonl", "long", "ok")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	for i := 1; i < len(pod.Spec.Containers); i++ {
		pod.Spec.Containers[i].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	}
	w := e.worker(pod)
	e.sync(w)
	if err := os.WriteFile(e.p.terminationFile(pod.UID, "c", 0), []byte("all done"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeLog := func(name, content string) {
		t.Helper()
		logFile := e.p.logPath(pod, name, 0)
		if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(logFile, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeLog("fallback", "2025-01-02T03:04:05.1Z stderr F oops\n2025-01-02T03:04:05.2Z stderr F panic: boom\n")
	// What the runtime (as containerd's CRI) logs for `echo -n DONE`.
	writeLog("nonl", "2025-01-02T03:04:05.1Z stdout P DONE\n")
	var long strings.Builder
	for i := range 100 {
		fmt.Fprintf(&long, "2025-01-02T03:04:05.1Z stdout F line %03d %s\n", i, strings.Repeat("x", 40))
	}
	writeLog("long", long.String())
	writeLog("ok", "2025-01-02T03:04:05.1Z stdout P DONE\n")
	e.rt.exit(t, "c", 0)
	e.rt.exit(t, "fallback", 2)
	e.rt.exit(t, "nonl", 1)
	e.rt.exit(t, "long", 1)
	e.rt.exit(t, "ok", 0)
	s := e.sync(w)
	msg := func(name string) string {
		for _, cs := range s.ContainerStatuses {
			if cs.Name == name {
				return cs.State.Terminated.Message
			}
		}
		t.Fatalf("no status of %s", name)
		return ""
	}
	if got := msg("c"); got != "all done" {
		t.Errorf("message %q", got)
	}
	if got := msg("fallback"); got != "oops\npanic: boom\n" {
		t.Errorf("fallback message %q", got)
	}
	if got := msg("nonl"); got != "DONE" {
		t.Errorf("fallback message of output without a newline %q, want %q", got, "DONE")
	}
	got := msg("long")
	if len(got) != fallbackLogBytes || !strings.HasSuffix(got, "line 099 "+strings.Repeat("x", 40)+"\n") {
		t.Errorf("fallback message of a long log: %d bytes ending %q, want the last %d", len(got), got[max(len(got)-60, 0):], fallbackLogBytes)
	}
	if got := msg("ok"); got != "" {
		t.Errorf("a container that succeeded has message %q, want none", got)
	}
}

// A claim mounts once Bound: a local-path volume's directory is made on
// first mount, readOnly on the claim makes the mount read-only, and until
// the claim is Bound (or while it is being deleted) the error says why.
func TestPersistentVolumeClaims(t *testing.T) {
	root := t.TempDir()
	localDir := filepath.Join(root, "local-path", "default_data_pvc-1")
	staticDir := filepath.Join(root, "missing")
	pv := func(name, path string, provisioned bool) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}}}}
		if provisioned {
			v.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "minik8s.io/local-path"}
		}
		return v
	}
	claim := func(name, volume string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	deleting := claim("deleting", "pvc-1", corev1.ClaimBound)
	deleting.DeletionTimestamp = &metav1.Time{Time: epoch}
	deleting.Finalizers = []string{"kubernetes.io/pvc-protection"}
	e := newTestEnv(t,
		pv("pvc-1", localDir, true), pv("static", staticDir, false),
		claim("data", "pvc-1", corev1.ClaimBound), claim("pending", "", corev1.ClaimPending),
		claim("static", "static", corev1.ClaimBound), deleting)
	vol := func(name, claimName string, readOnly bool) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName, ReadOnly: readOnly}}}
	}
	pod := testPod("user", "c")
	pod.Spec.Volumes = []corev1.Volume{vol("data", "data", false), vol("ro", "data", true)}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "data", MountPath: "/data", SubPath: "sub"},
		{Name: "ro", MountPath: "/ro"},
	}
	if err := e.p.setupVolumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(localDir); err != nil || info.Mode().Perm() != 0o777 {
		t.Fatalf("local-path directory: %v %v, want made 0777", info, err)
	}
	mounts, err := e.p.containerMounts(context.Background(), pod, &pod.Spec.Containers[0], 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/data": filepath.Join(localDir, "sub"), "/ro": localDir + " ro"}
	for _, m := range mounts {
		if w, ok := want[m.ContainerPath]; ok {
			if got := m.HostPath + map[bool]string{true: " ro"}[m.ReadOnly]; got != w {
				t.Errorf("mount %s = %s, want %s", m.ContainerPath, got, w)
			}
			delete(want, m.ContainerPath)
		}
	}
	if len(want) > 0 {
		t.Errorf("mounts missing: %v", want)
	}

	for _, tc := range []struct{ claim, want string }{
		{"pending", `volume "v": persistentvolumeclaim "pending" is not bound`},
		{"absent", `volume "v": persistentvolumeclaim "absent": persistentvolumeclaims "absent" not found`},
		{"deleting", `volume "v": persistentvolumeclaim "deleting" is being deleted`},
		{"static", `volume "v": local volume "static": path ` + staticDir + ` does not exist`},
	} {
		bad := pod.DeepCopy()
		bad.Spec.Volumes = []corev1.Volume{vol("v", tc.claim, false)}
		if err := e.p.setupVolumes(context.Background(), bad); err == nil || err.Error() != tc.want {
			t.Errorf("claim %s: err = %v, want %q", tc.claim, err, tc.want)
		}
	}
}
