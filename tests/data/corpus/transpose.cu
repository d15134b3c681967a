// transpose.cu: matrix transpose, odata[x][y] = idata[y][x] for a width x height matrix of
// floats (row-major, any size), in TILE_DIM x TILE_DIM tiles by blocks of TILE_DIM x BLOCK_ROWS
// threads, each thread moving TILE_DIM / BLOCK_ROWS elements.
//   copy_tiled                    the same access pattern without the transpose: the ceiling
//   transpose_naive               reads coalesced, writes strided
//   transpose_coalesced           through a shared tile: both coalesced, bank conflicts on reads
//   transpose_no_bank_conflicts   the tile padded by one column

#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void copy_tiled(float *odata, const float *idata, int width, int height) {
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < width && y + j < height) odata[(y + j) * width + x] = idata[(y + j) * width + x];
}

__global__ void transpose_naive(float *odata, const float *idata, int width, int height) {
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < width && y + j < height) odata[x * height + (y + j)] = idata[(y + j) * width + x];
}

__global__ void transpose_coalesced(float *odata, const float *idata, int width, int height) {
  __shared__ float tile[TILE_DIM][TILE_DIM];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;  // transposed block offset
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void transpose_no_bank_conflicts(float *odata, const float *idata, int width, int height) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
