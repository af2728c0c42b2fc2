package integration

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/minik8s/minik8s/pkg/cli"
	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/slurm"
	"github.com/minik8s/minik8s/pkg/kubelet/slurm/slurmtest"
)

const slurmNodeName = "slurm-gpu"

// startSlurmNode runs the Slurm virtual node slurm-gpu against the test's
// cluster, as `minik8s agent --provider slurm` does: the provider (on the
// one-host Slurm cluster sc, commands run here, polled every 300ms) and a
// kubelet serving logs on 127.0.0.1, with the provider's Events recorded.
func startSlurmNode(t *testing.T, c *cluster, sc *slurmtest.Cluster) *slurm.Provider {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	client := kubernetes.NewForConfigOrDie(c.config)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p, err := slurm.New(slurm.Config{
		NodeName: slurmNodeName, Runner: slurm.LocalRunner{Env: sc.Env()}, WorkRoot: t.TempDir(), Client: client,
		PollInterval: 300 * time.Millisecond, Logger: log,
		Recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "slurm-provider", Host: slurmNodeName}),
	})
	if err != nil {
		t.Fatal(err)
	}
	k, err := kubelet.New(kubelet.Config{
		Client: client, NodeName: slurmNodeName, Provider: p, HeartbeatInterval: time.Second, Logger: log,
		ServerAddress: "127.0.0.1:0", ClientCA: c.cp.Bundle.CAPool,
	})
	if err != nil {
		t.Fatal(err)
	}
	providerDone, kubeletDone := make(chan error, 1), make(chan error, 1)
	go func() { providerDone <- p.Start(ctx) }()
	go func() { kubeletDone <- k.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-kubeletDone; err != nil {
			t.Errorf("kubelet: %v", err)
		}
		if err := <-providerDone; err != nil {
			t.Errorf("slurm provider: %v", err)
		}
		broadcaster.Shutdown()
	})
	return p
}

// slurmJob is a Job for the Slurm node: its nodeSelector and toleration,
// and one container running sh -c script.
func slurmJob(name, script string, backoffLimit int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To(backoffLimit), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{slurm.LabelProvider: "slurm"},
			Tolerations: []corev1.Toleration{{Key: slurm.TaintKey, Operator: corev1.TolerationOpEqual, Value: "slurm",
				Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{Name: "work", Image: "busybox", Command: []string{"sh", "-c", script}}},
		}}},
	}
}

// TestSlurm runs Jobs on a Slurm virtual node backed by a real one-host
// Slurm cluster (slurmtest: skipped only when not root; CI is root with
// Slurm installed by make deps).
func TestSlurm(t *testing.T) {
	sc := slurmtest.Start(t, slurmtest.Config{CPUs: 8, GPUs: 1})
	c := startClusterWith(t, withoutControllers("job", "cronjob", "ttl-after-finished"))
	jobStartControllers(t, c, nil)
	p := startSlurmNode(t, c, sc)
	k := newKubectl(t, c)
	ctx := ctxT(t)

	waitFor(t, "node "+slurmNodeName+" Ready with its capacity from Slurm, and its Lease", func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, slurmNodeName, metav1.GetOptions{})
		if err != nil || !nodeReady(n) || n.Status.Capacity.Cpu().IsZero() {
			return false, nil
		}
		_, err = c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, slurmNodeName, metav1.GetOptions{})
		return err == nil, nil
	})
	t.Run("node", func(t *testing.T) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, slurmNodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Status.Capacity.Cpu().Value(); got != 8 {
			t.Errorf("cpu capacity %d, want the partition's 8", got)
		}
		if got := n.Status.Capacity[slurm.ResourceGPU]; got.Cmp(resource.MustParse("1")) != 0 {
			t.Errorf("%s capacity %s, want the partition's 1 (GRES gpu)", slurm.ResourceGPU, got.String())
		}
		if got, want := n.Status.Capacity.Memory().Value(), int64(sc.MemoryMiB)<<20; got != want {
			t.Errorf("memory capacity %d, want %d (RealMemory %d MiB)", got, want, sc.MemoryMiB)
		}
		if n.Labels[slurm.LabelType] != "virtual-kubelet" || n.Labels[slurm.LabelProvider] != "slurm" {
			t.Errorf("labels %v", n.Labels)
		}
		want := corev1.Taint{Key: slurm.TaintKey, Value: "slurm", Effect: corev1.TaintEffectNoSchedule}
		found := false
		for _, taint := range n.Spec.Taints {
			found = found || taint.MatchTaint(&want) && taint.Value == want.Value
		}
		if !found {
			t.Errorf("taints %v, want %v", n.Spec.Taints, want)
		}
	})

	// All the Jobs at once: the cluster's 8 CPUs run them side by side.
	ns := jobNamespace(t, ctx, c, "slurm")
	jobCreate(t, ctx, c, ns, slurmJob("answer", "echo result=42", 0))
	jobCreate(t, ctx, c, ns, slurmJob("exit3", "echo failing; exit 3", 1))
	jobCreate(t, ctx, c, ns, slurmJob("sleeper", "sleep 600", 0))
	// The sources, as the README says: kubectl apply -k examples/gpu.
	k.ok(t, "apply", "-n", ns, "-k", filepath.Join(examplesPath(t), "gpu"))
	example := exampleJob(t, "gpu/matmul-cpu-job.yaml")
	jobCreate(t, ctx, c, ns, example)
	if _, err := c.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		StringData: map[string]string{"token": "t0ken"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	staged := slurmJob("staged", `echo "greeting=$(cat conf/greeting) token=$TOKEN size=$CFG_size"`, 0)
	spec := &staged.Spec.Template.Spec
	spec.Volumes = []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "late"}}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "conf", MountPath: "/conf"}}
	spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "late"}}}}
	spec.Containers[0].Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}}}
	jobCreate(t, ctx, c, ns, staged)

	t.Run("a Job completes", func(t *testing.T) {
		jobWait(t, ctx, c, ns, "answer", "Complete", func(j *batchv1.Job) bool { return jobHas(j, batchv1.JobComplete) })
		pods := jobPods(t, ctx, c, ns, "answer")
		if len(pods) != 1 {
			t.Fatalf("%d pods, want 1", len(pods))
		}
		pod := slurmWaitPod(t, ctx, c, ns, pods[0].Name, "the job's annotations", func(p *corev1.Pod) bool {
			return p.Annotations[slurm.AnnotationJobID] != "" && p.Annotations[slurm.AnnotationJobState] == "COMPLETED"
		})
		if pod.Spec.NodeName != slurmNodeName || pod.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod on %q in phase %s, want %s and Succeeded", pod.Spec.NodeName, pod.Status.Phase, slurmNodeName)
		}
		for _, a := range []string{slurm.AnnotationSubmitTime, slurm.AnnotationNodeList} {
			if pod.Annotations[a] == "" {
				t.Errorf("annotation %s missing: %v", a, pod.Annotations)
			}
		}
		if fields, err := sc.Job(ctx, pod.Annotations[slurm.AnnotationJobID]); err != nil || fields["JobState"] != "COMPLETED" {
			t.Errorf("slurm job %s: %v %v", pod.Annotations[slurm.AnnotationJobID], fields["JobState"], err)
		}
		if logs := k.ok(t, "logs", "-n", ns, pod.Name); !strings.Contains(logs, "result=42") {
			t.Errorf("kubectl logs = %q, want result=42", logs)
		}
		if logs := k.ok(t, "logs", "-n", ns, "job/answer"); !strings.Contains(logs, "result=42") {
			t.Errorf("kubectl logs job/answer = %q, want result=42", logs)
		}
		if logs := providerLogs(t, ctx, p, ns, pod.Name); !strings.Contains(logs, "result=42") {
			t.Errorf("provider logs = %q", logs)
		}
		jobWaitEvents(t, ctx, c, ns, "Pod", pod.Name, "Submitted", "ImageNotRun")
	})

	t.Run("a failing Job is retried, then fails", func(t *testing.T) {
		j := jobWait(t, ctx, c, ns, "exit3", "Failed", func(j *batchv1.Job) bool { return jobHas(j, batchv1.JobFailed) })
		if got := jobConditions(j); !strings.Contains(strings.Join(got, ","), "Failed/BackoffLimitExceeded") {
			t.Errorf("conditions %v, want Failed/BackoffLimitExceeded", got)
		}
		pods := jobPods(t, ctx, c, ns, "exit3")
		if len(pods) != 2 {
			t.Fatalf("%d pods, want 2 (backoffLimit 1)", len(pods))
		}
		for _, pod := range pods {
			if pod.Status.Phase != corev1.PodFailed {
				t.Errorf("pod %s: phase %s, want Failed", pod.Name, pod.Status.Phase)
				continue
			}
			cs := pod.Status.ContainerStatuses
			if len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 3 {
				t.Errorf("pod %s: container statuses %+v, want exit code 3", pod.Name, cs)
			}
		}
	})

	t.Run("the example matmul-cpu Job", func(t *testing.T) {
		jobWait(t, ctx, c, ns, example.Name, "Complete", func(j *batchv1.Job) bool {
			if jobHas(j, batchv1.JobFailed) {
				t.Errorf("job failed: %v; logs:\n%s", jobConditions(j), k.ok(t, "logs", "-n", ns, "job/"+example.Name))
				return true
			}
			return jobHas(j, batchv1.JobComplete)
		})
		logs := k.ok(t, "logs", "-n", ns, "job/"+example.Name)
		if !strings.Contains(logs, "max error:") || !strings.Contains("\n"+logs, "\nOK\n") {
			t.Errorf("logs of %s: %q, want max error and OK", example.Name, logs)
		}
	})

	t.Run("ConfigMaps and Secrets are staged into the job, once they exist", func(t *testing.T) {
		var pod string
		waitFor(t, "the staged pod waiting for its ConfigMap", func(ctx context.Context) (bool, error) {
			pods := jobPods(t, ctx, c, ns, "staged")
			if len(pods) != 1 || len(pods[0].Status.ContainerStatuses) != 1 {
				return false, nil
			}
			w := pods[0].Status.ContainerStatuses[0].State.Waiting
			pod = pods[0].Name
			return pods[0].Status.Phase == corev1.PodPending && w != nil && w.Reason == "CreateContainerConfigError" &&
				strings.Contains(w.Message, `"late" not found`), nil
		})
		if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"},
			Data: map[string]string{"greeting": "hello", "size": "64"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		jobWait(t, ctx, c, ns, "staged", "Complete", func(j *batchv1.Job) bool { return jobHas(j, batchv1.JobComplete) })
		if logs := k.ok(t, "logs", "-n", ns, pod); !strings.Contains(logs, "greeting=hello token=t0ken size=64") {
			t.Errorf("logs %q, want the ConfigMap's file and env and the Secret's key", logs)
		}
	})

	t.Run("deleting a Job cancels its Slurm job", func(t *testing.T) {
		var id, pod string
		waitFor(t, "the sleeper pod Running with its job id", func(ctx context.Context) (bool, error) {
			pods := jobPods(t, ctx, c, ns, "sleeper")
			if len(pods) != 1 || pods[0].Status.Phase != corev1.PodRunning {
				return false, nil
			}
			pod, id = pods[0].Name, pods[0].Annotations[slurm.AnnotationJobID]
			return id != "" && pods[0].Annotations[slurm.AnnotationJobState] == "RUNNING", nil
		})
		if err := c.client.BatchV1().Jobs(ns).Delete(ctx, "sleeper", metav1.DeleteOptions{
			PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "pod "+pod+" gone", func(ctx context.Context) (bool, error) {
			_, err := c.client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		waitFor(t, "slurm job "+id+" CANCELLED (or gone)", func(ctx context.Context) (bool, error) {
			fields, err := sc.Job(ctx, id)
			if err != nil {
				return strings.Contains(err.Error(), "Invalid job id"), nil
			}
			return fields["JobState"] == "CANCELLED", nil
		})
	})

	t.Run("the GPU example Jobs", func(t *testing.T) { checkGPUExamples(t) })
	t.Run("minik8s agent --provider slurm", func(t *testing.T) { testSlurmAgent(t, ctx, c, sc) })
}

// The agent's --provider slurm, joined with a token: a second virtual
// node on the same Slurm cluster, once the Jobs above are done.
func testSlurmAgent(t *testing.T, ctx context.Context, c *cluster, sc *slurmtest.Cluster) {
	const name = "slurm-agent"
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- cli.Run(actx, []string{"agent", "--provider", "slurm", "--node-name", name,
			"--server", c.cp.URL, "--token", c.cp.NodeToken, "--root-dir", t.TempDir(),
			"--node-ip", "127.0.0.1", "--kubelet-address", ":0",
			"--slurm-conf", sc.Conf, "--slurm-partition", slurmtest.Partition,
			"--slurm-work-root", t.TempDir(), "--slurm-poll", "300ms"})
	}()
	waitFor(t, "node "+name+" Ready with the Slurm labels and a kubelet port", func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("agent exited: %v", err)
		default:
		}
		n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && nodeReady(n) && n.Labels[slurm.LabelProvider] == "slurm" &&
			n.Status.Capacity.Cpu().Value() == int64(sc.CPUs) && n.Status.DaemonEndpoints.KubeletEndpoint.Port != 0, nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("agent: %v", err)
	}
}

// checkGPUExamples: the GPU Jobs of examples/gpu (no GPU here to run them;
// matmul-cpu-job.yaml runs above) are Jobs for the Slurm node that ask for
// one GPU and build with nvcc from the sources in the ConfigMap gpu-src.
func checkGPUExamples(t *testing.T) {
	for file, program := range map[string]string{"gpu/matmul-job.yaml": "./matmul 1024 1024 1024", "gpu/matadd-job.yaml": "./matadd "} {
		j := exampleJob(t, file)
		spec := j.Spec.Template.Spec
		if spec.NodeSelector[slurm.LabelProvider] != "slurm" || len(spec.Tolerations) != 1 ||
			spec.Tolerations[0].Key != slurm.TaintKey || spec.Tolerations[0].Effect != corev1.TaintEffectNoSchedule {
			t.Errorf("%s: nodeSelector %v, tolerations %v: not for the Slurm node", file, spec.NodeSelector, spec.Tolerations)
		}
		c := spec.Containers[0]
		if q := c.Resources.Limits[slurm.ResourceGPU]; q.Cmp(resource.MustParse("1")) != 0 {
			t.Errorf("%s: %s limit %s, want 1", file, slurm.ResourceGPU, q.String())
		}
		script := strings.Join(append(c.Command, c.Args...), " ")
		if !strings.Contains(script, "make -C src gpu") || !strings.Contains(script, program) {
			t.Errorf("%s: command %q does not build with make gpu from ./src and run %s", file, script, program)
		}
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/src" || len(spec.Volumes) != 1 ||
			spec.Volumes[0].ConfigMap == nil || spec.Volumes[0].ConfigMap.Name != "gpu-src" {
			t.Errorf("%s: mounts %+v, volumes %+v: want the ConfigMap gpu-src at /src", file, c.VolumeMounts, spec.Volumes)
		}
	}
}

// exampleJob reads a Job from examples/.
func exampleJob(t *testing.T, path string) *batchv1.Job {
	t.Helper()
	file := filepath.Join(examplesPath(t), path)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	j := &batchv1.Job{}
	if err := yaml.UnmarshalStrict(data, j); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return j
}

func slurmWaitPod(t *testing.T, ctx context.Context, c *cluster, ns, name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return ok(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: waiting for %s: %v; last %+v %+v", ns, name, what, err, last.Annotations, last.Status)
	}
	return last
}

// providerLogs reads the pod's log from the provider itself.
func providerLogs(t *testing.T, ctx context.Context, p *slurm.Provider, ns, pod string) string {
	t.Helper()
	rc, err := p.GetContainerLogs(ctx, ns, pod, "work", kubelet.LogOptions{})
	if err != nil {
		t.Fatalf("provider logs: %v", err)
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
