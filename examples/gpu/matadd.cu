/* matadd adds two N x M matrices of floats, C = A + B, with one GPU thread
   per element over a 2-D grid of BLOCK x BLOCK thread blocks, and checks C
   against a CPU loop.

       usage: matadd [N [M]]        (default 1024 1024)

   Built with nvcc it runs on the GPU; built as C or C++ (make cpu) it runs
   the same kernel body on the CPU, looping over the grid itself. */
#include "common.h"

#define BLOCK 16

/* add_element is the kernel body: thread (tx, ty) of block (bx, by) adds the
   element it covers, if any (the grid overhangs the matrix when N or M is
   not a multiple of BLOCK). */
static HD void add_element(const float *a, const float *b, float *c, int n, int m,
                           int bx, int by, int tx, int ty)
{
	int row = by * BLOCK + ty;
	int col = bx * BLOCK + tx;
	if (row < n && col < m)
		c[row * m + col] = a[row * m + col] + b[row * m + col];
}

#ifdef __CUDACC__

__global__ void matadd_kernel(const float *a, const float *b, float *c, int n, int m)
{
	add_element(a, b, c, n, m, blockIdx.x, blockIdx.y, threadIdx.x, threadIdx.y);
}

/* matadd computes C on the GPU and returns the kernel's time in ms. */
static double matadd(const float *a, const float *b, float *c, int n, int m)
{
	size_t bytes = (size_t)n * m * sizeof(float);
	float *da, *db, *dc, ms;
	cudaEvent_t start, stop;
	dim3 block(BLOCK, BLOCK);
	dim3 grid((m + BLOCK - 1) / BLOCK, (n + BLOCK - 1) / BLOCK);

	CHECK(cudaMalloc(&da, bytes));
	CHECK(cudaMalloc(&db, bytes));
	CHECK(cudaMalloc(&dc, bytes));
	CHECK(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemset(dc, 0xff, bytes)); /* NaN: an element no thread writes fails the check */
	CHECK(cudaEventCreate(&start));
	CHECK(cudaEventCreate(&stop));

	/* The first launch loads the kernel; the second one is timed. */
	matadd_kernel<<<grid, block>>>(da, db, dc, n, m);
	CHECK(cudaGetLastError());
	CHECK(cudaEventRecord(start));
	matadd_kernel<<<grid, block>>>(da, db, dc, n, m);
	CHECK(cudaGetLastError());
	CHECK(cudaEventRecord(stop));
	CHECK(cudaEventSynchronize(stop));
	CHECK(cudaEventElapsedTime(&ms, start, stop));

	CHECK(cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost));
	CHECK(cudaEventDestroy(start));
	CHECK(cudaEventDestroy(stop));
	CHECK(cudaFree(da));
	CHECK(cudaFree(db));
	CHECK(cudaFree(dc));
	return ms;
}

#else /* the CPU build */

/* matadd runs the kernel body for every thread of every block of the grid,
   as the GPU would, and returns the time in ms. */
static double matadd(const float *a, const float *b, float *c, int n, int m)
{
	int grid_x = (m + BLOCK - 1) / BLOCK, grid_y = (n + BLOCK - 1) / BLOCK;
	int bx, by, tx, ty;
	double start = cpu_ms();
	for (by = 0; by < grid_y; by++)
		for (bx = 0; bx < grid_x; bx++)
			for (ty = 0; ty < BLOCK; ty++)
				for (tx = 0; tx < BLOCK; tx++)
					add_element(a, b, c, n, m, bx, by, tx, ty);
	return cpu_ms() - start;
}

#endif /* __CUDACC__ */

int main(int argc, char **argv)
{
	static const char *const names[] = {"N", "M"};
	int dims[] = {1024, 1024};
	int n, m;
	size_t i, len;
	float *a, *b, *c;
	double ms, err = 0;

	parse_dims(argc, argv, "matadd [N [M]]", 2, names, dims);
	n = dims[0];
	m = dims[1];
	a = new_matrix(argv[0], "A", n, m);
	b = new_matrix(argv[0], "B", n, m);
	c = new_matrix(argv[0], "C", n, m);
	len = (size_t)n * m;
	fill(a, len, 1);
	fill(b, len, 2);
	memset(c, 0xff, len * sizeof(float)); /* NaN, as on the GPU */

	print_device();
	printf("matadd: C = A + B, %dx%d, %dx%d blocks of %dx%d threads\n", n, m,
	       (n + BLOCK - 1) / BLOCK, (m + BLOCK - 1) / BLOCK, BLOCK, BLOCK);
	ms = matadd(a, b, c, n, m);
	printf("kernel time: %.3f ms\n", ms);

	/* The reference sums in float too: C should match it exactly. */
	for (i = 0; i < len; i++)
		err = max_err(err, fabs((double)c[i] - (double)(a[i] + b[i])));
	free(a);
	free(b);
	free(c);
	return report(err, "", 1e-6);
}
