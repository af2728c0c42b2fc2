package slurm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
)

// TestStagedEnvAndVolumes runs a pod's script after staging its work
// directory: env from a ConfigMap (envFrom with a prefix, a key) and a
// Secret, ConfigMap items at a subPath, a Secret volume with its mode, an
// emptyDir an init container fills for the container, the downward API,
// all where the mount paths say, under the work directory.
func TestStagedEnvAndVolumes(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no tar")
	}
	ctx := context.Background()
	client := fake.NewSimpleClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"},
			Data: map[string]string{"size": "512", "mode": "fast", "app.conf": "threads=4\n"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
			Data: map[string][]byte{"token": []byte("s3cr3t 'quoted'")}},
	)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u-1234567890", Labels: map[string]string{"app": "demo"}},
		Spec: corev1.PodSpec{
			NodeName: "slurm-gpu",
			Volumes: []corev1.Volume{
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
					Items:                []corev1.KeyToPath{{Key: "app.conf", Path: "etc/app.conf"}}}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "creds", DefaultMode: ptr.To[int32](0o400)}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
					Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
				{Name: "missing", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr.To(true)}}},
			},
			InitContainers: []corev1.Container{{Name: "prepare", Command: []string{"sh", "-c", "echo prepared > scratch/note"},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}},
			Containers: []corev1.Container{{
				Name:    "main",
				Command: []string{"sh", "-c"},
				Args: []string{`set -e
echo "size=$CFG_size mode=$MODE token=$TOKEN node=$NODE arg=$1"
cat config/app.conf scratch/note data/info/labels; echo
cat secret/token; echo
stat -c %a "$(readlink -f secret/token)"
test -d unused/x && test -z "$(ls unused/x)"`, "sh", "$(MODE)"},
				Env: []corev1.EnvVar{
					{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "mode"}}},
					{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
					{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				},
				EnvFrom: []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "conf", MountPath: "/config", SubPath: "etc"},
					{Name: "creds", MountPath: "/secret", ReadOnly: true},
					{Name: "scratch", MountPath: "scratch"},
					{Name: "info", MountPath: "/data/info"},
					{Name: "missing", MountPath: "/unused/x"},
				},
			}},
		},
	}
	job, err := Script(pod, ScriptOptions{WorkRoot: t.TempDir(), Objects: podenv.NewObjects(ctx, client, "ns")})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(job.Script, "s3cr3t") {
		t.Errorf("the Secret's value is in the batch script:\n%s", job.Script)
	}
	out, err := runJob(t, job)
	if err != nil {
		t.Fatalf("job: %v\n%s", err, out)
	}
	want := `size=512 mode=fast token=s3cr3t 'quoted' node=slurm-gpu arg=fast
threads=4
prepared
app="demo"
s3cr3t 'quoted'
400
`
	if string(out) != want {
		t.Errorf("job output:\n%s\nwant:\n%s", out, want)
	}
	fi, err := os.Stat(filepath.Join(job.WorkDir, StageDir))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v, want mode 0700", StageDir, fi.Mode(), err)
	}
	env, err := os.ReadFile(filepath.Join(job.WorkDir, envFile(1)))
	if err != nil || !strings.Contains(string(env), "TOKEN=s3cr3t") {
		t.Errorf("env file: %q %v", env, err)
	}
}

// TestStageMissingObjects: a ConfigMap or Secret that is not there (and
// not optional) stops the script with an error the provider retries.
func TestStageMissingObjects(t *testing.T) {
	ctx := context.Background()
	objs := podenv.NewObjects(ctx, fake.NewSimpleClientset(), "ns")
	for name, mutate := range map[string]func(*corev1.Pod){
		"env": func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "later"}, Key: "k"}}}}
		},
		"envFrom": func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "later"}}}}
		},
		"volume": func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "later"}}}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Command: []string{"true"}}}}}
			mutate(pod)
			_, err := Script(pod, ScriptOptions{WorkRoot: "/w", Objects: objs})
			if err == nil || !podenv.IsNotFound(err) || !strings.Contains(err.Error(), `"later" not found`) {
				t.Errorf("err = %v, want a not-found error naming it", err)
			}
		})
	}
}
