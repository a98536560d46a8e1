/*
 * 2-D matrix transpose through a shared-memory tile, f32: Y[c, r] = X[r, c] for a row-major
 * X of `rows` x `cols` elements and a row-major Y of `cols` x `rows`, any rows and cols,
 * tunable through the #define preamble the tuner generates.
 *
 * Preamble: TILE (the square tile a block moves, TILE x TILE elements), RPT (rows per thread:
 * the block is TILE x TILE / RPT threads, each thread moves RPT elements of a column of the
 * tile), PAD (elements added to each shared-memory row: 1 makes the column reads of the write
 * phase hit distinct banks), SWIZZLE (1: element (i, j) of the tile is kept at column j ^ i of
 * its row, the other way to spread those reads over the banks), MINB (the blocks per SM asked
 * of the compiler through __launch_bounds__), TUNER_SMEM_BYTES (the dynamic shared memory,
 * TILE * (TILE + PAD) floats).
 *
 * Launch: grid (ceil_div(cols, TILE), ceil_div(rows, TILE)), block (TILE, TILE / RPT). Block
 * (bx, by) reads the tile of X at rows by * TILE.., columns bx * TILE.., coalesced along X's
 * rows, and writes it transposed, coalesced along Y's rows. Elements past rows or cols are
 * neither read nor written.
 */
#if !defined(TILE) || !defined(RPT) || !defined(PAD) || !defined(SWIZZLE) || !defined(MINB)
#error "transpose.cu needs the tuner's preamble (TILE, RPT, PAD, SWIZZLE, MINB)"
#endif

#define TRANSPOSE_STRIDE (TILE + PAD) /* floats per shared-memory row */
#define TRANSPOSE_STEP (TILE / RPT)   /* rows of the tile one pass of the block covers */
/* Where element (i, j) of the tile lies in shared memory. */
#define TRANSPOSE_AT(i, j) ((i) * TRANSPOSE_STRIDE + (SWIZZLE ? (j) ^ (i) : (j)))

static_assert(TILE % RPT == 0, "a thread moves whole columns of the tile");
static_assert((TILE & (TILE - 1)) == 0, "j ^ i stays inside a row only for a power-of-two TILE");
static_assert(TILE * TRANSPOSE_STRIDE * 4 <= TUNER_SMEM_BYTES, "the tile fits the sidecar's smem_bytes");

extern "C" __global__ void __launch_bounds__(TILE * TRANSPOSE_STEP, MINB)
	transpose(const float *__restrict__ X, float *__restrict__ Y, int rows, int cols)
{
	extern __shared__ float tile[];
	const int tx = threadIdx.x, ty = threadIdx.y;
	const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;

	/* Read: thread (tx, ty) takes X[r0 + ty + k * STEP, c0 + tx]: a warp reads along a row. */
#pragma unroll
	for (int k = 0; k < RPT; k++) {
		const int i = ty + k * TRANSPOSE_STEP;
		const int r = r0 + i, c = c0 + tx;
		if (r < rows && c < cols)
			tile[TRANSPOSE_AT(i, tx)] = X[(size_t)r * cols + c];
	}
	__syncthreads();
	/* Write: thread (tx, ty) puts Y[c0 + ty + k * STEP, r0 + tx], a column of the tile. */
#pragma unroll
	for (int k = 0; k < RPT; k++) {
		const int i = ty + k * TRANSPOSE_STEP;
		const int yr = c0 + i, yc = r0 + tx;
		if (yr < cols && yc < rows)
			Y[(size_t)yr * rows + yc] = tile[TRANSPOSE_AT(tx, i)];
	}
}
