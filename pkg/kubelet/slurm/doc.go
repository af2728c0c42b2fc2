// Package slurm is the Slurm provider of virtual nodes (issue 13): the
// pods bound to its node become Slurm batch jobs.
//
// Talking to Slurm: every Slurm command (sbatch, scontrol, scancel, and
// tail to read output files) goes through a Runner, which runs it on a
// Slurm login host: LocalRunner on this machine (with e.g. SLURM_CONF in
// its Env), SSHRunner on a remote login node over golang.org/x/crypto/ssh
// (a key, and the host key unless InsecureIgnoreHostKey is set). Client
// wraps the commands: Submit (sbatch --parsable, script on stdin), Cancel
// (scancel), Job/Jobs/JobsByPrefix (scontrol show job -o), Partition
// (scontrol show partition -o and show node -o) and Ping (scontrol ping).
//
// A pod becomes one job (Script): named <namespace>_<name>, with
// --comment=minik8s:<pod UID> so that a restarted provider finds its
// jobs again, --chdir a work directory <WorkRoot>/<namespace>/<name>-<uid8>
// that must be shared by the login host and the compute nodes, and
// output and error in <workdir>/<jobid>.out. Init containers, then
// containers, run in order, each as a bash function (a subshell) that
// exports its env and execs its command and args; the job stops at the
// first that fails, with its exit code. Resources become --cpus-per-task,
// --mem and --gres=gpu:N (the largest any container asks for, since they
// run one after another), activeDeadlineSeconds becomes --time, and the
// annotations slurm.minik8s.io/partition, account, qos and extra-args add
// the rest.
//
// Images are not run: Slurm's OCI container support is out of scope for
// now, so the command runs on the Slurm node as it is, with the tools the
// node has, and the provider records an ImageNotRun event per image. Only
// literal env values and the fieldRefs metadata.name/namespace/uid,
// spec.nodeName and spec.serviceAccountName are supported; envFrom,
// ConfigMap and Secret refs are rejected (CreateContainerConfigError),
// and volumes are ignored.
//
// Status (Provider.Poll, run by Start every PollInterval, lists the jobs
// once): PENDING and the like give a Pending pod whose containers wait
// with the Slurm reason (Priority, Resources, ...); RUNNING a Running
// pod; COMPLETED Succeeded; FAILED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL,
// CANCELLED, PREEMPTED, BOOT_FAIL and DEADLINE a Failed pod with the state
// as reason and the exit code (128+signal if a signal ended it) in the
// containers' terminated state. The pod's message and its
// slurm.minik8s.io/Job condition carry the job id, partition, submit time
// and node list; JobInfo and JobInfo.Annotations give them to the kubelet.
// The containers share one output file, which is every container's log.
// A job sbatch refuses (more memory or GPUs than a node has, a bad
// partition) gives a Failed pod with reason SlurmSubmitFailed and sbatch's
// message; sbatch failing to reach slurmctld is retried.
//
// The node: capacity and allocatable sum the partition's nodes (CPUs,
// RealMemory, GRES gpu), labels type=virtual-kubelet and
// minik8s.io/provider=slurm, the taint virtual-kubelet.io/provider=slurm:NoSchedule,
// and Ready while slurmctld answers and the partition has a node up
// (SlurmUnreachable or SlurmPartitionDown otherwise).
//
// The package owns the provider and its Slurm client; it must not touch
// the kubelet's own state or the API server (the kubelet writes what the
// provider reports). slurmtest/ holds a real-Slurm test harness.
package slurm
