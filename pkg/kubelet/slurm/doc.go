// Package slurm will be the Slurm provider of virtual nodes (issue 13); for now it holds the test of the GPU example programs.
package slurm
