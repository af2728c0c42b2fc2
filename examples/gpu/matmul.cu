/* matmul multiplies an N x K matrix of floats by a K x M one, C = A x B,
   with the classic shared-memory tiling, and checks C against a CPU loop in
   double precision.

       usage: matmul [N [K [M]]]    (default 512 512 512)

   Each TILE x TILE thread block computes one TILE x TILE tile of C. It walks
   the K dimension one tile at a time: every thread loads one element of A's
   tile and one of B's into shared memory (load_tiles), the block
   synchronizes, every thread adds the dot product of its row of A's tile and
   its column of B's tile (tile_dot), and the block synchronizes again before
   the next loads. Elements outside the matrices load as 0, so the sizes need
   not be multiples of TILE.

   Built with nvcc it runs on the GPU; built as C or C++ (make cpu) it runs
   the same steps on the CPU, emulating the blocks, their threads and their
   shared memory, so the CPU build exercises the same indexing. */
#include "common.h"

#define TILE 16

/* load_tiles is the first half of a step: thread (tx, ty) of block (bx, by)
   loads its element of A's and of B's tile number step. */
static HD void load_tiles(const float *a, const float *b, int n, int k, int m,
                          int bx, int by, int tx, int ty, int step,
                          float as[TILE][TILE], float bs[TILE][TILE])
{
	int row = by * TILE + ty;    /* the thread's row of A and C */
	int col = bx * TILE + tx;    /* the thread's column of B and C */
	int a_col = step * TILE + tx; /* the column of A it loads */
	int b_row = step * TILE + ty; /* the row of B it loads */
	as[ty][tx] = row < n && a_col < k ? a[row * k + a_col] : 0.0f;
	bs[ty][tx] = b_row < k && col < m ? b[b_row * m + col] : 0.0f;
}

/* tile_dot is the second half: thread (tx, ty)'s share of the tiles' product. */
static HD float tile_dot(float as[TILE][TILE], float bs[TILE][TILE], int tx, int ty)
{
	float sum = 0.0f;
	int i;
	for (i = 0; i < TILE; i++)
		sum += as[ty][i] * bs[i][tx];
	return sum;
}

/* store writes thread (tx, ty)'s element of C, if it is inside C. */
static HD void store(float *c, int n, int m, int bx, int by, int tx, int ty, float sum)
{
	int row = by * TILE + ty;
	int col = bx * TILE + tx;
	if (row < n && col < m)
		c[row * m + col] = sum;
}

#ifdef __CUDACC__

__global__ void matmul_kernel(const float *a, const float *b, float *c, int n, int k, int m)
{
	__shared__ float as[TILE][TILE], bs[TILE][TILE];
	int steps = (k + TILE - 1) / TILE;
	float sum = 0.0f;
	int step;
	for (step = 0; step < steps; step++) {
		load_tiles(a, b, n, k, m, blockIdx.x, blockIdx.y, threadIdx.x, threadIdx.y, step, as, bs);
		__syncthreads();
		sum += tile_dot(as, bs, threadIdx.x, threadIdx.y);
		__syncthreads();
	}
	store(c, n, m, blockIdx.x, blockIdx.y, threadIdx.x, threadIdx.y, sum);
}

/* matmul computes C on the GPU and returns the kernel's time in ms. */
static double matmul(const float *a, const float *b, float *c, int n, int k, int m)
{
	size_t a_bytes = (size_t)n * k * sizeof(float);
	size_t b_bytes = (size_t)k * m * sizeof(float);
	size_t c_bytes = (size_t)n * m * sizeof(float);
	float *da, *db, *dc, ms;
	cudaEvent_t start, stop;
	dim3 block(TILE, TILE);
	dim3 grid((m + TILE - 1) / TILE, (n + TILE - 1) / TILE);

	CHECK(cudaMalloc(&da, a_bytes));
	CHECK(cudaMalloc(&db, b_bytes));
	CHECK(cudaMalloc(&dc, c_bytes));
	CHECK(cudaMemcpy(da, a, a_bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(db, b, b_bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemset(dc, 0xff, c_bytes)); /* NaN: an element no thread writes fails the check */
	CHECK(cudaEventCreate(&start));
	CHECK(cudaEventCreate(&stop));

	/* The first launch loads the kernel; the second one is timed. */
	matmul_kernel<<<grid, block>>>(da, db, dc, n, k, m);
	CHECK(cudaGetLastError());
	CHECK(cudaEventRecord(start));
	matmul_kernel<<<grid, block>>>(da, db, dc, n, k, m);
	CHECK(cudaGetLastError());
	CHECK(cudaEventRecord(stop));
	CHECK(cudaEventSynchronize(stop));
	CHECK(cudaEventElapsedTime(&ms, start, stop));

	CHECK(cudaMemcpy(c, dc, c_bytes, cudaMemcpyDeviceToHost));
	CHECK(cudaEventDestroy(start));
	CHECK(cudaEventDestroy(stop));
	CHECK(cudaFree(da));
	CHECK(cudaFree(db));
	CHECK(cudaFree(dc));
	return ms;
}

#else /* the CPU build */

/* matmul runs the kernel's steps for every block of the grid, as the GPU
   would, each step for all the block's threads before the next, and returns
   the time in ms. */
static double matmul(const float *a, const float *b, float *c, int n, int k, int m)
{
	float as[TILE][TILE], bs[TILE][TILE]; /* the block's shared memory */
	float sum[TILE][TILE];                /* each thread's register */
	int grid_x = (m + TILE - 1) / TILE, grid_y = (n + TILE - 1) / TILE;
	int steps = (k + TILE - 1) / TILE;
	int bx, by, tx, ty, step;
	double start = cpu_ms();
	for (by = 0; by < grid_y; by++) {
		for (bx = 0; bx < grid_x; bx++) {
			memset(sum, 0, sizeof sum);
			for (step = 0; step < steps; step++) {
				for (ty = 0; ty < TILE; ty++)
					for (tx = 0; tx < TILE; tx++)
						load_tiles(a, b, n, k, m, bx, by, tx, ty, step, as, bs);
				/* __syncthreads(): all loads are done before any thread reads. */
				for (ty = 0; ty < TILE; ty++)
					for (tx = 0; tx < TILE; tx++)
						sum[ty][tx] += tile_dot(as, bs, tx, ty);
				/* __syncthreads(): all reads are done before the next loads. */
			}
			for (ty = 0; ty < TILE; ty++)
				for (tx = 0; tx < TILE; tx++)
					store(c, n, m, bx, by, tx, ty, sum[ty][tx]);
		}
	}
	return cpu_ms() - start;
}

#endif /* __CUDACC__ */

int main(int argc, char **argv)
{
	static const char *const names[] = {"N", "K", "M"};
	int dims[] = {512, 512, 512};
	int n, k, m, i, j, p;
	float *a, *b, *c;
	double *ref, *mag, ms, err = 0;

	parse_dims(argc, argv, "matmul [N [K [M]]]", 3, names, dims);
	n = dims[0];
	k = dims[1];
	m = dims[2];
	a = new_matrix(argv[0], "A", n, k);
	b = new_matrix(argv[0], "B", k, m);
	c = new_matrix(argv[0], "C", n, m);
	fill(a, (size_t)n * k, 1);
	fill(b, (size_t)k * m, 2);
	memset(c, 0xff, (size_t)n * m * sizeof(float)); /* NaN, as on the GPU */

	print_device();
	printf("matmul: C = A x B, A %dx%d, B %dx%d, %dx%d blocks of %dx%d threads\n", n, k, k, m,
	       (n + TILE - 1) / TILE, (m + TILE - 1) / TILE, TILE, TILE);
	ms = matmul(a, b, c, n, k, m);
	if (ms > 0)
		printf("kernel time: %.3f ms, %.1f GFLOP/s\n", ms, 2.0 * n * k * m / (ms * 1e6));
	else
		printf("kernel time: %.3f ms\n", ms);

	/* The reference, row by row in double. An element's error is relative to
	   the sum of its products' magnitudes, the scale of its rounding error
	   (relative to the element itself, a sum near 0 would make any error
	   large). */
	ref = (double *)malloc(m * sizeof(double));
	mag = (double *)malloc(m * sizeof(double));
	if (ref == NULL || mag == NULL) {
		fprintf(stderr, "%s: out of memory for the reference\n", argv[0]);
		return 1;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < m; j++)
			ref[j] = mag[j] = 0;
		for (p = 0; p < k; p++) {
			double a_ip = a[(size_t)i * k + p];
			for (j = 0; j < m; j++) {
				double prod = a_ip * b[(size_t)p * m + j];
				ref[j] += prod;
				mag[j] += fabs(prod);
			}
		}
		for (j = 0; j < m; j++) {
			double diff = fabs(c[(size_t)i * m + j] - ref[j]);
			err = max_err(err, mag[j] > 0 ? diff / mag[j] : diff);
		}
	}
	free(a);
	free(b);
	free(c);
	free(ref);
	free(mag);
	return report(err, " (relative)", 1e-4);
}
