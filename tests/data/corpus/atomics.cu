// atomics.cu: the atomic family, every overload people reach for, on global and on shared
// memory. Each thread (global index tid, n threads in all) applies every operation once; the
// final values depend only on the set of operations, except where noted (exch, cas).
//
// atomics_global(gi, gu, gull, gf, gd, tickets), the arrays' initial values set by the host:
//   gi[0]  += 10 (atomicAdd)          gi[1]  = tid (atomicExch: some tid)
//   gi[2]  max= tid (atomicMax)       gi[3]  min= tid (atomicMin)
//   gi[4]  atomicCAS(tid - 1 -> tid)  gi[5]  &= 2 * tid + 7 (atomicAnd)
//   gi[6]  |= 1 << (tid % 32)         gi[7]  ^= tid (atomicXor)
//   gi[8]  -= 10 (atomicSub)          gi[9]  += 1 (atomicAdd_block)   gi[10] += 1 (atomicAdd_system)
//   gi[11] max= -tid (unsigned value into an int: atomicMax(int*, unsigned) picks the int form)
//   gu[0]  atomicInc(17)              gu[1]  atomicDec(137)
//   gu[2]  += 3u                      gu[3]  max= tid                 gu[4] min= tid
//   gu[5]  -= 1u                      gu[6]  |= 1u << (tid % 32)      gu[7] ^= tid
//   gu[8]  = tid (atomicExch)         gu[9]  &= ~(1u << (tid % 32))
//   gull[0] += tid << 20              gull[1] max= tid << 33          gull[2] min= tid << 33
//   gull[3] |= 1 << (tid % 64)        gull[4] ^= tid                  gull[5] &= ~(1 << (tid % 64))
//   gull[6] = tid (atomicExch)        gull[7] atomicCAS(0 -> tid + 1): the first one wins
//   gf[0]  += 1.0f                    gf[1]  = tid (atomicExch)       gf[2] += 0.25f (atomicAdd_block)
//   gd[0]  += 0.5
//   tickets[atomicAdd(&gu[10], 1)] = tid: every thread draws a distinct ticket
//
// atomics_shared(out): each block runs the same family on __shared__ variables (its threads
// only) and writes them to out[blockIdx.x * 16 ...]; see the reference for the layout.

__global__ void atomics_global(int *gi, unsigned int *gu, unsigned long long *gull, float *gf, double *gd,
                               unsigned int *tickets) {
  const unsigned int tid = blockDim.x * blockIdx.x + threadIdx.x;
  atomicAdd(&gi[0], 10);
  atomicExch(&gi[1], tid);
  atomicMax(&gi[2], tid);
  atomicMin(&gi[3], tid);
  atomicCAS(&gi[4], tid - 1, tid);
  atomicAnd(&gi[5], 2 * tid + 7);
  atomicOr(&gi[6], 1 << (tid % 32));
  atomicXor(&gi[7], tid);
  atomicSub(&gi[8], 10);
  atomicAdd_block(&gi[9], 1);
  atomicAdd_system(&gi[10], 1);
  atomicMax(&gi[11], -(int)tid);

  atomicInc(&gu[0], 17);
  atomicDec(&gu[1], 137);
  atomicAdd(&gu[2], 3u);
  atomicMax(&gu[3], tid);
  atomicMin(&gu[4], tid);
  atomicSub(&gu[5], 1u);
  atomicOr(&gu[6], 1u << (tid % 32));
  atomicXor(&gu[7], tid);
  atomicExch(&gu[8], tid);
  atomicAnd(&gu[9], ~(1u << (tid % 32)));

  atomicAdd(&gull[0], (unsigned long long)tid << 20);
  atomicMax(&gull[1], (unsigned long long)tid << 33);
  atomicMin(&gull[2], (unsigned long long)tid << 33);
  atomicOr(&gull[3], 1ull << (tid % 64));
  atomicXor(&gull[4], (unsigned long long)tid);
  atomicAnd(&gull[5], ~(1ull << (tid % 64)));
  atomicExch(&gull[6], (unsigned long long)tid);
  atomicCAS(&gull[7], 0ull, (unsigned long long)tid + 1);

  atomicAdd(&gf[0], 1.0f);
  atomicExch(&gf[1], (float)tid);
  atomicAdd_block(&gf[2], 0.25f);
  atomicAdd(&gd[0], 0.5);

  unsigned int ticket = atomicAdd(&gu[10], 1u);
  tickets[ticket] = tid;
}

__global__ void atomics_shared(unsigned long long *out) {
  __shared__ int s_i[6];
  __shared__ unsigned int s_u[5];
  __shared__ unsigned long long s_ull[2];
  __shared__ float s_f;
  __shared__ double s_d;
  const unsigned int t = threadIdx.x;
  if (t == 0) {
    for (int k = 0; k < 6; ++k) s_i[k] = 0;
    s_i[3] = 0x7fffffff;  // the min starts high
    s_i[4] = -1;          // the and starts with every bit
    for (int k = 0; k < 5; ++k) s_u[k] = 0;
    s_ull[0] = 0;
    s_ull[1] = 0;
    s_f = 0.0f;
    s_d = 0.0;
  }
  __syncthreads();
  atomicAdd(&s_i[0], 2);
  atomicSub(&s_i[1], 1);
  atomicMax(&s_i[2], (int)t);
  atomicMin(&s_i[3], (int)t);
  atomicAnd(&s_i[4], ~(1 << (t % 31)));
  atomicXor_block(&s_i[5], (int)t);
  atomicInc(&s_u[0], 9u);
  atomicDec(&s_u[1], 5u);
  atomicOr(&s_u[2], 1u << (t % 32));
  atomicExch(&s_u[3], t);
  atomicCAS(&s_u[4], t, t + 1);  // the chain 0 -> 1 -> ... as far as the threads' order lets it
  atomicAdd(&s_ull[0], 1ull << 40);
  atomicMax_block(&s_ull[1], (unsigned long long)t * 3);
  atomicAdd(&s_f, 0.5f);
  atomicAdd(&s_d, 0.125);
  __syncthreads();
  if (t == 0) {
    unsigned long long *o = out + blockIdx.x * 16;
    for (int k = 0; k < 6; ++k) o[k] = (unsigned long long)(long long)s_i[k];
    for (int k = 0; k < 5; ++k) o[6 + k] = s_u[k];
    o[11] = s_ull[0];
    o[12] = s_ull[1];
    o[13] = (unsigned long long)(s_f * 2.0f);
    o[14] = (unsigned long long)(s_d * 8.0);
    o[15] = 0;
  }
}
