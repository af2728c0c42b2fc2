package slurm

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
)

// Annotations on a pod that add to its sbatch options.
const (
	AnnotationPartition = "slurm.minik8s.io/partition"
	AnnotationAccount   = "slurm.minik8s.io/account"
	AnnotationQOS       = "slurm.minik8s.io/qos"
	// AnnotationExtraArgs holds more sbatch options, split like a shell
	// would ("--constraint=a100 --exclusive"); each must start with "--".
	AnnotationExtraArgs = "slurm.minik8s.io/extra-args"
)

// CommentPrefix starts the --comment of every job the provider submits;
// the pod's UID follows.
const CommentPrefix = "minik8s:"

// ScriptOptions are the provider's settings a script depends on.
type ScriptOptions struct {
	// WorkRoot holds one work directory per pod,
	// <WorkRoot>/<namespace>/<name>-<uid[:8]>, on a file system the login
	// host and the compute nodes share.
	WorkRoot string
	// Partition is used when the pod names none.
	Partition string
	// NodeName is the virtual node's name (for spec.nodeName fieldRefs).
	NodeName string
	// Objects reads the ConfigMaps and Secrets the pod's env and volumes
	// name; nil refuses pods that name any.
	Objects *podenv.Objects
}

// JobName is the Slurm job name of a pod: <namespace>_<name> (neither may
// hold '_').
func JobName(namespace, name string) string { return namespace + "_" + name }

// PodKey parses a job name back into the pod's namespace and name.
func PodKey(jobName string) (namespace, name string, ok bool) {
	namespace, name, ok = strings.Cut(jobName, "_")
	return namespace, name, ok && namespace != "" && name != ""
}

// WorkDir is the pod's work directory.
func WorkDir(root string, pod *corev1.Pod) string {
	uid := string(pod.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return path.Join(root, pod.Namespace, pod.Name+"-"+uid)
}

// reserved are the options the provider sets itself.
var reserved = []string{"--job-name", "--comment", "--chdir", "--output", "--error", "--parsable", "--wrap"}

// Script turns a pod into one batch job: the init containers and then
// the containers run in order, each as a bash function running its
// command and args with its environment, and the job stops at the first
// that fails, with its exit code. Resources, activeDeadlineSeconds and
// the slurm.minik8s.io annotations become #SBATCH options.
func Script(pod *corev1.Pod, opts ScriptOptions) (Job, error) {
	if opts.WorkRoot == "" {
		return Job{}, fmt.Errorf("pod %s/%s: no work root", pod.Namespace, pod.Name)
	}
	job := Job{
		Name:    JobName(pod.Namespace, pod.Name),
		Comment: CommentPrefix + string(pod.UID),
		WorkDir: WorkDir(opts.WorkRoot, pod),
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	sbatch := func(opt string) { fmt.Fprintf(&b, "#SBATCH %s\n", opt) }
	sbatch("--job-name=" + job.Name)
	sbatch("--comment=" + job.Comment)
	sbatch("--chdir=" + job.WorkDir)
	sbatch("--output=" + job.WorkDir + "/%j.out")
	sbatch("--error=" + job.WorkDir + "/%j.out")
	sbatch("--nodes=1")
	sbatch("--ntasks=1")

	res, err := resources(pod)
	if err != nil {
		return Job{}, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if res.cpus > 0 {
		sbatch(fmt.Sprintf("--cpus-per-task=%d", res.cpus))
	}
	if res.memMiB > 0 {
		sbatch(fmt.Sprintf("--mem=%d", res.memMiB))
	}
	if res.gpus > 0 {
		sbatch(fmt.Sprintf("--gres=gpu:%d", res.gpus))
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		sbatch(fmt.Sprintf("--time=%d", (*d+59)/60))
	}
	partition := opts.Partition
	if p := pod.Annotations[AnnotationPartition]; p != "" {
		partition = p
	}
	for _, o := range []struct{ flag, value string }{
		{"--partition", partition},
		{"--account", pod.Annotations[AnnotationAccount]},
		{"--qos", pod.Annotations[AnnotationQOS]},
	} {
		if o.value == "" {
			continue
		}
		if strings.ContainsAny(o.value, " \t\n\"'") {
			return Job{}, fmt.Errorf("pod %s/%s: %s %q: no spaces or quotes allowed", pod.Namespace, pod.Name, o.flag, o.value)
		}
		sbatch(o.flag + "=" + o.value)
	}
	if extra := pod.Annotations[AnnotationExtraArgs]; extra != "" {
		words, err := splitShell(extra)
		if err != nil {
			return Job{}, fmt.Errorf("pod %s/%s: annotation %s: %w", pod.Namespace, pod.Name, AnnotationExtraArgs, err)
		}
		for _, w := range words {
			if !strings.HasPrefix(w, "--") {
				return Job{}, fmt.Errorf("pod %s/%s: annotation %s: %q is not a --option", pod.Namespace, pod.Name, AnnotationExtraArgs, w)
			}
			name, _, _ := strings.Cut(w, "=")
			for _, r := range reserved {
				if name == r {
					return Job{}, fmt.Errorf("pod %s/%s: annotation %s: %s is set by the provider", pod.Namespace, pod.Name, AnnotationExtraArgs, name)
				}
			}
			if strings.ContainsAny(w, "\n") {
				return Job{}, fmt.Errorf("pod %s/%s: annotation %s: newline in %q", pod.Namespace, pod.Name, AnnotationExtraArgs, w)
			}
			sbatch(w)
		}
	}

	fmt.Fprintf(&b, "\n# minik8s pod %s/%s (uid %s)\n", pod.Namespace, pod.Name, pod.UID)
	b.WriteString(runHelper)
	type step struct {
		c    corev1.Container
		kind string
	}
	var steps []step
	for _, c := range pod.Spec.InitContainers {
		steps = append(steps, step{c, "init container"})
	}
	for _, c := range pod.Spec.Containers {
		steps = append(steps, step{c, "container"})
	}
	seen := map[string]bool{}
	for _, s := range steps {
		if s.c.Image != "" && !seen[s.c.Image] {
			seen[s.c.Image] = true
			job.Images = append(job.Images, s.c.Image)
			fmt.Fprintf(&b, "# image %s not run: the command runs on the Slurm node\n", s.c.Image)
		}
	}
	objs := opts.Objects
	if objs == nil {
		objs = podenv.NewObjects(context.Background(), nil, pod.Namespace)
	}
	files, sources, err := stageVolumes(pod, objs)
	if err != nil {
		return Job{}, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	envPod := pod
	if pod.Spec.NodeName == "" {
		envPod = pod.DeepCopy()
		envPod.Spec.NodeName = opts.NodeName
	}
	for i, s := range steps {
		// Slurm nodes are not on the cluster's network: no service
		// variables, no pod or host IP.
		env, envMap, err := podenv.ContainerEnv(&s.c, &podenv.Context{Pod: envPod, Objects: objs})
		if err != nil {
			return Job{}, fmt.Errorf("pod %s/%s: %s %s: %w", pod.Namespace, pod.Name, s.kind, s.c.Name, err)
		}
		files = append(files, StagedFile{Path: envFile(i), Data: envFileData(env), Mode: 0o600})
		fn, err := function(i, s.c, s.kind, job.WorkDir, envMap, sources)
		if err != nil {
			return Job{}, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		b.WriteString("\n" + fn)
	}
	job.Files = files
	b.WriteString("\n")
	for i, s := range steps {
		fmt.Fprintf(&b, "minik8s_run %s minik8s_c%d\n", shellQuote(s.c.Name), i)
	}
	b.WriteString("exit 0\n")
	job.Script = b.String()
	return job, nil
}

// runHelper runs one container's function in a subshell and ends the
// job with its exit code if it fails.
const runHelper = `minik8s_run() {
	( "$2" )
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "minik8s: container $1 exited with code $rc" >&2
		exit "$rc"
	fi
}
`

// function is one container as a bash function: it sources the
// container's staged environment, links its volume mounts, enters its
// working directory and execs its command.
func function(i int, c corev1.Container, kind, workDir string, env map[string]string, sources map[string]string) (string, error) {
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return "", fmt.Errorf("%s %s: no command: the Slurm provider runs the command on the Slurm node, without the image's entrypoint", kind, c.Name)
	}
	links, err := mountLinks(c, kind, workDir, sources)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s %s\nminik8s_c%d() {\n", kind, c.Name, i)
	fmt.Fprintf(&b, "\t. %s || return\n", shellQuote(path.Join(workDir, envFile(i))))
	b.WriteString(links)
	if c.WorkingDir != "" {
		fmt.Fprintf(&b, "\tcd %s || return\n", shellQuote(c.WorkingDir))
	}
	mapping := podenv.MappingFor(env)
	for j := range argv {
		argv[j] = shellQuote(podenv.Expand(argv[j], mapping))
	}
	fmt.Fprintf(&b, "\texec env -- \"${minik8s_env[@]}\" %s\n}\n", strings.Join(argv, " "))
	return b.String(), nil
}

type jobResources struct {
	cpus, memMiB, gpus int64
}

// resources are the most any container asks for: the containers run one
// after another, so the job needs the largest, not the sum.
func resources(pod *corev1.Pod) (jobResources, error) {
	var r jobResources
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		get := func(name corev1.ResourceName) (resource.Quantity, bool) {
			if q, ok := c.Resources.Limits[name]; ok {
				return q, true
			}
			q, ok := c.Resources.Requests[name]
			return q, ok
		}
		if q, ok := get(corev1.ResourceCPU); ok {
			r.cpus = max(r.cpus, (q.MilliValue()+999)/1000)
		}
		if q, ok := get(corev1.ResourceMemory); ok {
			r.memMiB = max(r.memMiB, (q.Value()+(1<<20)-1)>>20)
		}
		if q, ok := get(ResourceGPU); ok {
			r.gpus = max(r.gpus, q.Value())
		}
		var other []string
		for name := range c.Resources.Limits {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != ResourceGPU && name != corev1.ResourceEphemeralStorage {
				other = append(other, string(name))
			}
		}
		if len(other) > 0 {
			sort.Strings(other)
			return r, fmt.Errorf("container %s: resources %s are not supported by the Slurm provider", c.Name, strings.Join(other, ", "))
		}
	}
	return r, nil
}
