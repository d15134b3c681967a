// matrix_mul.cu: C = A * B for row-major float matrices (A is hA x wA, B is wA x wB), tiled in
// shared memory on a template BLOCK_SIZE: each BLOCK_SIZE x BLOCK_SIZE block of threads computes
// one tile of C, stepping through A's block row and B's block column one tile pair at a time.
// Any size: tiles past the edges are padded with zeros.

template <int BLOCK_SIZE>
__global__ void matrix_mul_tiled(float *C, const float *A, const float *B, int hA, int wA, int wB) {
  int bx = blockIdx.x, by = blockIdx.y;
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = by * BLOCK_SIZE + ty;
  int col = bx * BLOCK_SIZE + tx;
  float Csub = 0.0f;
  for (int t = 0; t < (wA + BLOCK_SIZE - 1) / BLOCK_SIZE; ++t) {
    __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
    int a_col = t * BLOCK_SIZE + tx;
    int b_row = t * BLOCK_SIZE + ty;
    As[ty][tx] = (row < hA && a_col < wA) ? A[row * wA + a_col] : 0.0f;
    Bs[ty][tx] = (b_row < wA && col < wB) ? B[b_row * wB + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k) {
      Csub += As[ty][k] * Bs[k][tx];
    }
    __syncthreads();
  }
  if (row < hA && col < wB) C[row * wB + col] = Csub;
}
