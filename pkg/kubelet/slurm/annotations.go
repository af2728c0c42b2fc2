package slurm

import "github.com/minik8s/minik8s/pkg/kubelet"

var _ kubelet.PodAnnotator = (*Provider)(nil)

// PodAnnotations are the annotations of the pod's Slurm job (JobInfo's
// Annotations: job id, state, partition, submit time, node list), which
// the kubelet writes into the pod; none while the pod has no job.
func (p *Provider) PodAnnotations(namespace, name string) map[string]string {
	job, ok := p.JobInfo(namespace, name)
	if !ok {
		return nil
	}
	return job.Annotations()
}
