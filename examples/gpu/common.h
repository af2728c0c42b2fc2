/* common.h: what matadd.cu and matmul.cu share. Each program is one source
   that builds two ways: as CUDA with nvcc (the kernels run on the GPU), and as
   plain C or C++ with gcc or g++ (no __CUDACC__: the same kernel bodies run on
   the CPU, which loops over the grid's blocks and threads itself). So the code
   here and in the programs stays in the common subset of C99 and C++. */
#ifndef GPU_EXAMPLES_COMMON_H
#define GPU_EXAMPLES_COMMON_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __CUDACC__
#include <cuda_runtime.h>

/* HD marks a kernel body: compiled for the GPU and for the host. */
#define HD __host__ __device__

/* CHECK exits with CUDA's message when a runtime call fails. */
#define CHECK(call)                                                       \
	do {                                                                  \
		cudaError_t err_ = (call);                                        \
		if (err_ != cudaSuccess) {                                        \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
			        cudaGetErrorString(err_));                            \
			exit(1);                                                      \
		}                                                                 \
	} while (0)

/* print_device prints the line that says where the kernels run. */
static void print_device(void)
{
	int dev;
	struct cudaDeviceProp prop;
	CHECK(cudaGetDevice(&dev));
	CHECK(cudaGetDeviceProperties(&prop, dev));
	printf("device: %s\n", prop.name);
}

#else /* the CPU build */

#define HD

static void print_device(void)
{
	printf("device: cpu\n");
}

/* cpu_ms is the process's CPU time in milliseconds; the CPU build runs on
   one thread, so differences are the kernel's time. */
static double cpu_ms(void)
{
	return 1000.0 * (double)clock() / CLOCKS_PER_SEC;
}

#endif /* __CUDACC__ */

/* MAX_DIM and MAX_ELEMS bound the sizes: int indexes cannot overflow and a
   matrix takes at most 1 GiB. */
#define MAX_DIM 65536
#define MAX_ELEMS (1L << 28)

/* parse_dims reads the dimensions from argv into dims (names[i] names
   dims[i] in messages); missing ones keep the defaults already in dims. It
   exits with status 2 and a message on anything else than positive
   integers up to MAX_DIM. */
static void parse_dims(int argc, char **argv, const char *usage, int count,
                       const char *const *names, int *dims)
{
	int i;
	if (argc - 1 > count) {
		fprintf(stderr, "%s: too many arguments\nusage: %s\n", argv[0], usage);
		exit(2);
	}
	for (i = 0; i < argc - 1; i++) {
		const char *s = argv[i + 1];
		char *end;
		long v;
		errno = 0;
		v = strtol(s, &end, 10);
		if (end == s || *end != '\0' || errno != 0 || v < 1 || v > MAX_DIM) {
			fprintf(stderr, "%s: %s must be an integer from 1 to %d, got \"%s\"\nusage: %s\n",
			        argv[0], names[i], MAX_DIM, s, usage);
			exit(2);
		}
		dims[i] = (int)v;
	}
}

/* new_matrix allocates a rows x cols matrix, exiting when it is too large or
   memory runs out. */
static float *new_matrix(const char *prog, const char *name, int rows, int cols)
{
	float *x;
	if ((long)rows * cols > MAX_ELEMS) {
		fprintf(stderr, "%s: %s is %dx%d, more than %ld elements\n", prog, name,
		        rows, cols, (long)MAX_ELEMS);
		exit(2);
	}
	x = (float *)malloc((size_t)rows * cols * sizeof(float));
	if (x == NULL) {
		fprintf(stderr, "%s: out of memory for %s (%dx%d)\n", prog, name, rows, cols);
		exit(1);
	}
	return x;
}

/* fill sets x[0..len) to a fixed pseudo-random sequence in [-1, 1): the same
   on every run and machine (a 32-bit LCG with Numerical Recipes' constants;
   24 bits of each state, so every value is exact in a float). */
static void fill(float *x, size_t len, uint32_t seed)
{
	size_t i;
	uint32_t s = seed;
	for (i = 0; i < len; i++) {
		s = s * 1664525u + 1013904223u;
		x[i] = (float)(s >> 8) / 8388608.0f - 1.0f;
	}
}

/* max_err folds one element's error into the maximum so far; a NaN (an
   element that no thread wrote: outputs start as NaN) sticks. */
static double max_err(double max, double err)
{
	return isnan(err) || err > max ? err : max;
}

/* report prints the error and the verdict, and returns the exit status. */
static int report(double err, const char *kind, double tol)
{
	printf("max error: %.3g%s\n", err, kind);
	if (!(err <= tol)) {
		printf("FAILED: max error above the tolerance %.3g\n", tol);
		return 1;
	}
	printf("OK\n");
	return 0;
}

#endif /* GPU_EXAMPLES_COMMON_H */
