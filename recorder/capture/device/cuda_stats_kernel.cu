// acc's statistics kernel (cuda_stats_kernel.h says what it computes). NVRTC
// compiles it at run time with no header: it uses only builtins. The unit
// tests also compile it as host C++, each block's threads as host threads
// (tests/recorder/cuda_stats_test.cpp), where __CUDACC_RTC__ is not defined.
// The layouts of TensorDesc and of the constants are cuda_stats_kernel.h's.
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;

#define MAX_DIMS 6
#define THREADS 256
#define CHUNK 16384

struct TensorDesc {
  u64 data;
  i64 numel, first_chunk, chunks, row;
  int type, ndim;
  i64 sizes[MAX_DIMS], strides[MAX_DIMS];
};

struct Partial {
  double min, max, sum, sumsq;
  u64 nan, inf, checksum;
};

__device__ __forceinline__ void identity(Partial& p) {
  p.min = __longlong_as_double(0x7ff0000000000000LL);   // +inf
  p.max = __longlong_as_double(0xfff0000000000000ULL);  // -inf
  p.sum = p.sumsq = 0;
  p.nan = p.inf = p.checksum = 0;
}

// NaNs never reach min and max: they are counted, and override both on the
// host, as in the CPU pass.
__device__ __forceinline__ void merge(Partial& a, const Partial& b) {
  a.min = b.min < a.min ? b.min : a.min;
  a.max = b.max > a.max ? b.max : a.max;
  a.sum += b.sum;
  a.sumsq += b.sumsq;
  a.nan += b.nan;
  a.inf += b.inf;
  a.checksum += b.checksum;
}

__device__ __forceinline__ void add(Partial& p, double v, u64 bits, u64 index) {
  p.checksum += bits * (2 * index + 1);
  const bool nan = v != v;
  p.nan += nan;
  p.inf += fabs(v) == __longlong_as_double(0x7ff0000000000000LL);
  if (!nan) {
    p.min = v < p.min ? v : p.min;
    p.max = v > p.max ? v : p.max;
  }
  p.sum += v;
  p.sumsq += v * v;
}

#ifdef __CUDACC_RTC__
__device__ __forceinline__ float halfToFloat(unsigned short b) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b));
  return f;
}
#endif

// An element's value and the bits the checksum weighs: one-byte types
// widened by zeros (ATen's uint8), the others by their sign.
template <int T> struct Load;
template <> struct Load<0> {  // float
  static __device__ __forceinline__ double at(const void* p, i64 o, u64& bits) {
    const int b = ((const int*)p)[o];
    bits = (u64)(i64)b;
    return (double)__int_as_float(b);
  }
};
template <> struct Load<1> {  // double
  static __device__ __forceinline__ double at(const void* p, i64 o, u64& bits) {
    const i64 b = ((const i64*)p)[o];
    bits = (u64)b;
    return __longlong_as_double(b);
  }
};
template <> struct Load<2> {  // half
  static __device__ __forceinline__ double at(const void* p, i64 o, u64& bits) {
    const unsigned short b = ((const unsigned short*)p)[o];
    bits = (u64)(i64)(short)b;
    return (double)halfToFloat(b);
  }
};
template <> struct Load<3> {  // bfloat16
  static __device__ __forceinline__ double at(const void* p, i64 o, u64& bits) {
    const unsigned short b = ((const unsigned short*)p)[o];
    bits = (u64)(i64)(short)b;
    return (double)__int_as_float(((int)b) << 16);
  }
};
template <> struct Load<4> {  // bool
  static __device__ __forceinline__ double at(const void* p, i64 o, u64& bits) {
    const unsigned char b = ((const unsigned char*)p)[o];
    bits = b;
    return b != 0 ? 1.0 : 0.0;
  }
};
template <> struct Load<5> {  // uint8
  static __device__ __forceinline__ double at(const void* p, i64 o, u64& bits) {
    const unsigned char b = ((const unsigned char*)p)[o];
    bits = b;
    return (double)b;
  }
};
template <> struct Load<6> {  // int8
  static __device__ __forceinline__ double at(const void* p, i64 o, u64& bits) {
    const unsigned char b = ((const unsigned char*)p)[o];
    bits = b;
    return (double)(signed char)b;
  }
};
template <> struct Load<7> {  // int16
  static __device__ __forceinline__ double at(const void* p, i64 o, u64& bits) {
    const short b = ((const short*)p)[o];
    bits = (u64)(i64)b;
    return (double)b;
  }
};
template <> struct Load<8> {  // int32
  static __device__ __forceinline__ double at(const void* p, i64 o, u64& bits) {
    const int b = ((const int*)p)[o];
    bits = (u64)(i64)b;
    return (double)b;
  }
};
template <> struct Load<9> {  // int64
  static __device__ __forceinline__ double at(const void* p, i64 o, u64& bits) {
    const i64 b = ((const i64*)p)[o];
    bits = (u64)b;
    return (double)b;
  }
};

__device__ __forceinline__ i64 offsetOf(const TensorDesc& d, i64 i) {
  i64 offset = 0;
  for (int k = d.ndim - 1; k > 0; --k) {
    const i64 q = i / d.sizes[k];
    offset += (i - q * d.sizes[k]) * d.strides[k];
    i = q;
  }
  return offset + i * d.strides[0];
}

template <int T>
__device__ void scan(const TensorDesc& d, i64 begin, i64 end, Partial& p) {
  const void* data = (const void*)d.data;
  u64 bits;
  if (d.ndim == 1 && d.strides[0] == 1) {
    for (i64 i = begin + threadIdx.x; i < end; i += THREADS) {
      const double v = Load<T>::at(data, i, bits);
      add(p, v, bits, (u64)i);
    }
  } else {
    for (i64 i = begin + threadIdx.x; i < end; i += THREADS) {
      const double v = Load<T>::at(data, offsetOf(d, i), bits);
      add(p, v, bits, (u64)i);
    }
  }
}

// The block's partials merged in a fixed tree: thread 0 holds the result.
__device__ void reduce(Partial& p, Partial* shared) {
  shared[threadIdx.x] = p;
  __syncthreads();
  for (unsigned s = THREADS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) merge(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  p = shared[0];
}

extern "C" __global__ void __launch_bounds__(THREADS)
acc_tensor_stats(const TensorDesc* descs, int n, u32* done, Partial* partials, double* out) {
  __shared__ Partial shared[THREADS];
  __shared__ bool last;
  const i64 block = blockIdx.x;
  int lo = 0, hi = n - 1;  // the tensor whose chunks hold this block
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (descs[mid].first_chunk <= block) lo = mid; else hi = mid - 1;
  }
  const TensorDesc& d = descs[lo];
  const i64 begin = (block - d.first_chunk) * CHUNK;
  const i64 end = begin + CHUNK < d.numel ? begin + CHUNK : d.numel;
  Partial p;
  identity(p);
  switch (d.type) {
    case 0: scan<0>(d, begin, end, p); break;
    case 1: scan<1>(d, begin, end, p); break;
    case 2: scan<2>(d, begin, end, p); break;
    case 3: scan<3>(d, begin, end, p); break;
    case 4: scan<4>(d, begin, end, p); break;
    case 5: scan<5>(d, begin, end, p); break;
    case 6: scan<6>(d, begin, end, p); break;
    case 7: scan<7>(d, begin, end, p); break;
    case 8: scan<8>(d, begin, end, p); break;
    case 9: scan<9>(d, begin, end, p); break;
  }
  reduce(p, shared);
  if (d.chunks > 1) {
    if (threadIdx.x == 0) {
      partials[block] = p;
      __threadfence();
      last = atomicAdd(&done[lo], 1u) == (u32)(d.chunks - 1);
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    identity(p);
    // Read past L1, which may hold no copy of the other blocks' partials
    // yet: volatile loads.
    const volatile Partial* all = partials + d.first_chunk;
    for (i64 c = threadIdx.x; c < d.chunks; c += THREADS) {
      Partial q;
      q.min = all[c].min; q.max = all[c].max; q.sum = all[c].sum; q.sumsq = all[c].sumsq;
      q.nan = all[c].nan; q.inf = all[c].inf; q.checksum = all[c].checksum;
      merge(p, q);
    }
    reduce(p, shared);
  }
  if (threadIdx.x == 0) {
    double* row = out + d.row * 7;
    const bool empty = d.numel == 0;
    row[0] = empty ? 0.0 : p.min;
    row[1] = empty ? 0.0 : p.max;
    row[2] = p.sum;
    row[3] = p.sumsq;
    u64* counts = (u64*)(row + 4);
    counts[0] = p.nan;
    counts[1] = p.inf;
    counts[2] = p.checksum;
  }
}
