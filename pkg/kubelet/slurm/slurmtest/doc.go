// Package slurmtest runs a real one-host Slurm cluster for tests: its own munged,
// slurmctld and slurmd (Debian's munge and slurm-wlm 22.05, which `make deps`
// installs), each in the foreground, with a generated slurm.conf, key, state,
// spool and free ports under one directory, so that clusters in parallel do not
// see each other.
//
// It owns only the processes it starts and the jobs they run: Stop (or the
// test's cleanup) cancels the jobs, stops the daemons and kills whatever is left
// of this cluster's job steps. It never touches the host's /etc/slurm, /etc/munge
// or system services.
package slurmtest
