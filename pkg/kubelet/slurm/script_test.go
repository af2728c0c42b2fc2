package slurm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func gpuPod() *corev1.Pod {
	deadline := int64(90)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "matmul-x7k2p", UID: "0a1b2c3d-4e5f-6789-abcd-ef0123456789",
			Annotations: map[string]string{AnnotationPartition: "gpu", AnnotationAccount: "hpc", AnnotationQOS: "normal",
				AnnotationExtraArgs: `--constraint=a100 --mail-type="END,FAIL"`}},
		Spec: corev1.PodSpec{
			ActiveDeadlineSeconds: &deadline,
			InitContainers: []corev1.Container{{Name: "build", Image: "nvidia/cuda:12.4.1-devel",
				Command: []string{"make", "-C", "/src"}, Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2500m")}}}},
			Containers: []corev1.Container{{Name: "matmul", Image: "nvidia/cuda:12.4.1-runtime",
				Command: []string{"/src/matmul"}, Args: []string{"$(N)", "it's 2"}, WorkingDir: "/src",
				Env: []corev1.EnvVar{{Name: "N", Value: "1024"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1500Mi"),
					ResourceGPU: resource.MustParse("1")}}}},
		},
	}
}

func TestScript(t *testing.T) {
	job, err := Script(gpuPod(), ScriptOptions{WorkRoot: "/shared/minik8s", Partition: "debug"})
	if err != nil {
		t.Fatal(err)
	}
	if job.Name != "default_matmul-x7k2p" || job.Comment != "minik8s:0a1b2c3d-4e5f-6789-abcd-ef0123456789" ||
		job.WorkDir != "/shared/minik8s/default/matmul-x7k2p-0a1b2c3d" {
		t.Errorf("job = %+v", job)
	}
	if strings.Join(job.Images, ",") != "nvidia/cuda:12.4.1-devel,nvidia/cuda:12.4.1-runtime" {
		t.Errorf("images = %q", job.Images)
	}
	// The #SBATCH header, in order, before any command.
	wantHeader := `#!/bin/bash
#SBATCH --job-name=default_matmul-x7k2p
#SBATCH --comment=minik8s:0a1b2c3d-4e5f-6789-abcd-ef0123456789
#SBATCH --chdir=/shared/minik8s/default/matmul-x7k2p-0a1b2c3d
#SBATCH --output=/shared/minik8s/default/matmul-x7k2p-0a1b2c3d/%j.out
#SBATCH --error=/shared/minik8s/default/matmul-x7k2p-0a1b2c3d/%j.out
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=3
#SBATCH --mem=1500
#SBATCH --gres=gpu:1
#SBATCH --time=2
#SBATCH --partition=gpu
#SBATCH --account=hpc
#SBATCH --qos=normal
#SBATCH --constraint=a100
#SBATCH --mail-type=END,FAIL

# minik8s pod default/matmul-x7k2p (uid 0a1b2c3d-4e5f-6789-abcd-ef0123456789)
`
	if !strings.HasPrefix(job.Script, wantHeader) {
		t.Errorf("script header:\n%s\nwant:\n%s", job.Script, wantHeader)
	}
	for _, want := range []string{
		"# image nvidia/cuda:12.4.1-devel not run: the command runs on the Slurm node\n",
		"# init container build\nminik8s_c0() {\n\t. /shared/minik8s/default/matmul-x7k2p-0a1b2c3d/.minik8s/env/c0 || return\n\texec env -- \"${minik8s_env[@]}\" make -C /src\n}\n",
		"# container matmul\nminik8s_c1() {\n\t. /shared/minik8s/default/matmul-x7k2p-0a1b2c3d/.minik8s/env/c1 || return\n\tcd /src || return\n\texec env -- \"${minik8s_env[@]}\" /src/matmul 1024 'it'\\''s 2'\n}\n",
		"\nminik8s_run build minik8s_c0\nminik8s_run matmul minik8s_c1\nexit 0\n",
	} {
		if !strings.Contains(job.Script, want) {
			t.Errorf("script lacks %q:\n%s", want, job.Script)
		}
	}
}

// TestScriptRuns runs a generated script with bash: the containers run in
// order, the first failure ends the job with its exit code.
func TestScriptRuns(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Command: []string{"sh", "-c", "echo init $GREETING >> order"},
				Env: []corev1.EnvVar{{Name: "GREETING", Value: "hi"}}}},
			Containers: []corev1.Container{
				{Name: "a", Command: []string{"sh", "-c", "echo a $GREETING- >> order; exit 0"}},
				{Name: "b", Command: []string{"sh", "-c"}, Args: []string{"echo b >> order; exit 7"}},
				{Name: "c", Command: []string{"sh", "-c", "echo c >> order"}},
			},
		},
	}
	job, err := Script(pod, ScriptOptions{WorkRoot: dir})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runJob(t, job)
	dir = job.WorkDir
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("script exit = %v, want 7; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "minik8s: container b exited with code 7") {
		t.Errorf("output %q lacks the failing container", out)
	}
	order, _ := os.ReadFile(filepath.Join(dir, "order"))
	if string(order) != "init hi\na -\nb\n" {
		t.Errorf("containers ran as %q, want init, a, b", order)
	}
}

func TestScriptErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*corev1.Pod)
		want   string
	}{
		"no command": {func(p *corev1.Pod) { p.Spec.Containers[0].Command, p.Spec.Containers[0].Args = nil, nil }, "no command"},
		"secret env without a client": {func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}
		}, "no API client"},
		"bad fieldRef": {func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nope"}}}}
		}, "unsupported fieldPath"},
		"pvc volume": {func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
		}, `volume "data": not supported on a Slurm node`},
		"mount without volume": {func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		}, `volumeMount "nope": no volume of that name`},
		"mount escapes": {func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "e", MountPath: "/../x"}}
		}, "leaves its directory"},
		"mount on the stage dir": {func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "e", MountPath: "/.minik8s/env"}}
		}, "is the provider's"},
		"extra not flag": {func(p *corev1.Pod) { p.Annotations[AnnotationExtraArgs] = "--exclusive -N 2" }, `"-N" is not a --option`},
		"extra reserved": {func(p *corev1.Pod) { p.Annotations[AnnotationExtraArgs] = "--comment=x" }, "--comment is set by the provider"},
		"extra quotes":   {func(p *corev1.Pod) { p.Annotations[AnnotationExtraArgs] = "--x='y" }, "unterminated"},
		"partition":      {func(p *corev1.Pod) { p.Annotations[AnnotationPartition] = "a b" }, "no spaces"},
		"resource": {func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits["example.com/fpga"] = resource.MustParse("1")
		}, "example.com/fpga"},
	} {
		t.Run(name, func(t *testing.T) {
			pod := gpuPod()
			tc.mutate(pod)
			_, err := Script(pod, ScriptOptions{WorkRoot: "/w"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPodKey(t *testing.T) {
	ns, name, ok := PodKey(JobName("default", "matmul-abc"))
	if !ok || ns != "default" || name != "matmul-abc" {
		t.Errorf("PodKey = %s, %s, %v", ns, name, ok)
	}
	if _, _, ok := PodKey("slurm-job"); ok {
		t.Error("a job name without _ parsed")
	}
}

// runJob stages job's work directory as Submit does, here, and runs its
// script there with bash, as slurmd would.
func runJob(t *testing.T, job Job) ([]byte, error) {
	t.Helper()
	if err := NewClient(LocalRunner{}, nil).Stage(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(script, []byte(job.Script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script)
	cmd.Dir = job.WorkDir
	return cmd.CombinedOutput()
}
