/*
 * Reference transpose, plain and obviously correct: Y[c, r] = X[r, c], f32, one thread per
 * element of Y, no shared memory. Launch: grid (ceil_div(rows, 16), ceil_div(cols, 16)),
 * block (16, 16).
 */
extern "C" __global__ void transpose_ref(const float *X, float *Y, int rows, int cols)
{
	const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	const long long c = (long long)blockIdx.y * blockDim.y + threadIdx.y;

	if (r < rows && c < cols)
		Y[c * rows + r] = X[r * cols + c];
}
