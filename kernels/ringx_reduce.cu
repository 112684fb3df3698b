/*
 * ringx_reduce.cu - CUDA kernels computing dst[i] = a[i] op b[i], behind the
 * C API of include/ringx_kernels.h.
 *
 * One kernel template, instantiated per (element type, op functor) through
 * a dispatch function per type family.  The results must be bit for bit
 * those of ringx_host_reduce (coll_ringx/coll_ringx_reduce.c), so each
 * functor below is the host's expression, evaluated in the same types.
 *
 * Each thread walks the buffer with a grid stride.  Where a, b and dst sit
 * at the same offset from a 16-byte boundary (the usual case: ringx's
 * buffers are allocated aligned and reduced at equal offsets), the first
 * few elements are done one by one up to that boundary, the bulk with
 * 16-byte loads and stores, and the rest one by one again.  Otherwise every
 * element is done on its own.  Every element belongs to exactly one thread
 * and is read before that thread writes it, so dst may be a or b.  No
 * `__restrict__` and no read-only cache loads for the same reason.
 */
#include <atomic>
#include <cstdint>
#include <cstring>

#include <pthread.h>

#include <cuda_runtime.h>

#include "ringx_half.h"
#include "ringx_kernels.h"

#define HD __host__ __device__ __forceinline__

namespace {

/* ------------------------------------------------------------ the types */

/* The layouts of ringx_ops.h's compound types. */
struct cfloat_t { float re, im; };
struct cdouble_t { double re, im; };
struct float_int_t { float v; int i; };
struct int_int_t { int v; int i; };
/* binary16, computed in float as on the host (ringx_half.h) */
struct half_t { uint16_t bits; };

/* ---------------------------------------------------------- the ops */

/*
 * The type SUM and PROD compute in.  Unsigned, so they wrap instead of
 * overflowing, and never narrower than int: uint8_t and uint16_t would be
 * promoted to (signed) int, and 65535 * 65535 overflows int.  Signed
 * integer types never reach these ops (see signed_runner).
 */
template <class T> struct arith { typedef T type; };
template <> struct arith<uint8_t> { typedef unsigned int type; };
template <> struct arith<uint16_t> { typedef unsigned int type; };

/* One rounded product.  The compiler may fuse x * y - z * w into a fused
 * multiply-add on the GPU (nvcc does by default); the host reduction
 * rounds each product, so the kernels must too.  Host code is compiled
 * with -ffp-contract=off instead. */
HD float mul_rn(float x, float y)
{
#ifdef __CUDA_ARCH__
    return __fmul_rn(x, y);
#else
    return x * y;
#endif
}

HD double mul_rn(double x, double y)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(x, y);
#else
    return x * y;
#endif
}

template <class T> HD T sum(T l, T r)
{
    typedef typename arith<T>::type W;
    return (T)((W)l + (W)r);
}

template <class T> HD T prod(T l, T r)
{
    typedef typename arith<T>::type W;
    return (T)((W)l * (W)r);
}

template <class C> HD C complex_sum(C l, C r)
{
    return C{ l.re + r.re, l.im + r.im };
}

template <class C> HD C complex_prod(C l, C r)
{
    return C{ mul_rn(l.re, r.re) - mul_rn(l.im, r.im),
              mul_rn(l.re, r.im) + mul_rn(l.im, r.re) };
}

HD cfloat_t sum(cfloat_t l, cfloat_t r) { return complex_sum(l, r); }
HD cdouble_t sum(cdouble_t l, cdouble_t r) { return complex_sum(l, r); }
HD cfloat_t prod(cfloat_t l, cfloat_t r) { return complex_prod(l, r); }
HD cdouble_t prod(cdouble_t l, cdouble_t r) { return complex_prod(l, r); }

HD float wide(half_t h) { return ringx_half_to_float(h.bits); }
HD half_t narrow(float f) { return half_t{ ringx_float_to_half(f) }; }
HD half_t sum(half_t l, half_t r) { return narrow(wide(l) + wide(r)); }
HD half_t prod(half_t l, half_t r) { return narrow(mul_rn(wide(l), wide(r))); }
/* MIN and MAX compare in float and return an operand's own bits. */
HD bool operator<(half_t l, half_t r) { return wide(l) < wide(r); }
HD bool operator>(half_t l, half_t r) { return wide(l) > wide(r); }

struct op_sum  { template <class T> HD static T apply(T l, T r) { return sum(l, r); } };
struct op_prod { template <class T> HD static T apply(T l, T r) { return prod(l, r); } };
struct op_min  { template <class T> HD static T apply(T l, T r) { return l < r ? l : r; } };
struct op_max  { template <class T> HD static T apply(T l, T r) { return l > r ? l : r; } };
struct op_land { template <class T> HD static T apply(T l, T r) { return (T)(l && r); } };
struct op_lor  { template <class T> HD static T apply(T l, T r) { return (T)(l || r); } };
struct op_lxor { template <class T> HD static T apply(T l, T r) { return (T)(!l != !r); } };
struct op_band { template <class T> HD static T apply(T l, T r) { return (T)(l & r); } };
struct op_bor  { template <class T> HD static T apply(T l, T r) { return (T)(l | r); } };
struct op_bxor { template <class T> HD static T apply(T l, T r) { return (T)(l ^ r); } };

/* MPI: on equal values both MINLOC and MAXLOC keep the smaller index. */
struct op_minloc {
    template <class P> HD static P apply(P l, P r)
    {
        return (r.v < l.v || (r.v == l.v && r.i < l.i)) ? r : l;
    }
};
struct op_maxloc {
    template <class P> HD static P apply(P l, P r)
    {
        return (r.v > l.v || (r.v == l.v && r.i < l.i)) ? r : l;
    }
};

/* ------------------------------------------------------------ the kernel */

enum { VEC_BYTES = 16, BLOCK_THREADS = 256 };

/* One 16-byte load or store (LDG.128 / STG.128).  On the CPU, where this
 * code also runs for the tests, through memcpy: the buffers hold T, not
 * uint4, and C++ forbids reading them through a uint4 lvalue. */
HD uint4 load16(const uint4 *p)
{
#ifdef __CUDA_ARCH__
    return *p;
#else
    uint4 x;
    memcpy(&x, p, sizeof x);
    return x;
#endif
}

HD void store16(uint4 *p, uint4 x)
{
#ifdef __CUDA_ARCH__
    *p = x;
#else
    memcpy(p, &x, sizeof x);
#endif
}

/*
 * What one thread (number tid of `threads`) does.  Elements [0, head) and
 * [head + nvec * K, n) are done one by one, the nvec 16-byte vectors in
 * between K elements at a time; scalar work item s maps to element s in
 * the head and to the tail after it.  A function of its own so that
 * ringx_kernel_reduce_on_cpu runs exactly this code.
 */
template <class T, class Op>
HD void reduce_thread(T *d, const T *a, const T *b, size_t n, size_t head,
                      size_t nvec, size_t tid, size_t threads)
{
    constexpr size_t K = VEC_BYTES / sizeof(T);
    static_assert(VEC_BYTES % sizeof(T) == 0, "elements tile a vector");

    const uint4 *va = reinterpret_cast<const uint4 *>(a + head);
    const uint4 *vb = reinterpret_cast<const uint4 *>(b + head);
    uint4 *vd = reinterpret_cast<uint4 *>(d + head);
    for (size_t v = tid; v < nvec; v += threads) {
        uint4 x = load16(va + v), y = load16(vb + v);
        T ex[K], ey[K];
        /* memcpy, not a cast: it stays in registers and is not aliasing.
         * The loop has a constant trip count and is unrolled. */
        memcpy(ex, &x, VEC_BYTES);
        memcpy(ey, &y, VEC_BYTES);
        for (size_t k = 0; k < K; k++)
            ex[k] = Op::apply(ex[k], ey[k]);
        memcpy(&x, ex, VEC_BYTES);
        store16(vd + v, x);
    }

    const size_t tail = head + nvec * K;
    const size_t nscalar = head + (n - tail);
    for (size_t s = tid; s < nscalar; s += threads) {
        const size_t i = s < head ? s : tail + (s - head);
        d[i] = Op::apply(a[i], b[i]);
    }
}

template <class T, class Op>
__global__ void __launch_bounds__(BLOCK_THREADS)
reduce_kernel(T *d, const T *a, const T *b, size_t n, size_t head, size_t nvec)
{
    reduce_thread<T, Op>(d, a, b, n, head, nvec,
                         (size_t)blockIdx.x * blockDim.x + threadIdx.x,
                         (size_t)gridDim.x * blockDim.x);
}

/* ------------------------------------------------------------ launching */

struct call_t {
    void *d;
    const void *a, *b;
    size_t n;
    cudaStream_t stream;
    bool on_cpu;            /* run the threads' code here, one by one */
};

int error_code(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return 0;
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorStubLibrary:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
        return RINGX_KERNEL_ENODEV;
    default:
        return RINGX_KERNEL_ECUDA;
    }
}

/* A failing call leaves its error as the runtime's "last error" (it is
 * ringx's own runtime, so nobody else reads it); clear it, so that the
 * launch check after a later kernel does not see an old error. */
int failed(cudaError_t e)
{
    (void)cudaGetLastError();
    return error_code(e);
}

/*
 * The grid limit for the current device: 8 blocks of 256 threads per
 * multiprocessor fill sm_80 and sm_90 (2048 resident threads each), and a
 * grid-stride loop does the rest.  The multiprocessor count is cached per
 * device, since querying it on every reduction would cost more than a
 * small kernel.
 */
int grid_limit(unsigned *max_blocks)
{
    enum { CACHED_DEVICES = 64 };
    static std::atomic<int> sm_count[CACHED_DEVICES];
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);

    if (e != cudaSuccess)
        return failed(e);
    if (dev >= 0 && dev < CACHED_DEVICES)
        sms = sm_count[dev].load(std::memory_order_relaxed);
    if (sms <= 0) {
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (e != cudaSuccess)
            return failed(e);
        if (sms <= 0)
            return RINGX_KERNEL_ENODEV;
        if (dev >= 0 && dev < CACHED_DEVICES)
            sm_count[dev].store(sms, std::memory_order_relaxed);
    }
    *max_blocks = 8u * (unsigned)sms;
    return 0;
}

/*
 * nvcc's launch code (the host side of <<<>>>) looks the kernel up once,
 * through a function-local static.  The kernels are built without C++'s
 * thread-safe statics, so that the component needs no C++ runtime
 * (libstdc++) on top of the static CUDA runtime; launches are therefore
 * serialised here instead.  An uncontended lock costs far less than a
 * launch.
 */
pthread_mutex_t launch_mutex = PTHREAD_MUTEX_INITIALIZER;

struct launch_lock_t {
    launch_lock_t() { pthread_mutex_lock(&launch_mutex); }
    ~launch_lock_t() { pthread_mutex_unlock(&launch_mutex); }
    launch_lock_t(const launch_lock_t &) = delete;
    launch_lock_t &operator=(const launch_lock_t &) = delete;
};

template <class T, class Op> int run(const call_t &c)
{
    const uintptr_t pd = (uintptr_t)c.d, pa = (uintptr_t)c.a,
                    pb = (uintptr_t)c.b;
    constexpr size_t K = VEC_BYTES / sizeof(T);
    size_t head = 0, nvec = 0;

    /* A misaligned access kills the CUDA context: refuse it here. */
    if ((pd | pa | pb) % alignof(T) != 0)
        return RINGX_KERNEL_EINVAL;
    const uintptr_t m = pa % VEC_BYTES;
    if (pb % VEC_BYTES == m && pd % VEC_BYTES == m && m % sizeof(T) == 0) {
        head = m == 0 ? 0 : (VEC_BYTES - m) / sizeof(T);
        if (head > c.n)
            head = c.n;
        nvec = (c.n - head) / K;
    }

    T *d = static_cast<T *>(c.d);
    const T *a = static_cast<const T *>(c.a), *b = static_cast<const T *>(c.b);

    if (c.on_cpu) {
        /* Two blocks, so that every thread loops at the larger sizes. */
        const size_t threads = 2 * BLOCK_THREADS;
        for (size_t tid = 0; tid < threads; tid++)
            reduce_thread<T, Op>(d, a, b, c.n, head, nvec, tid, threads);
        return 0;
    }

    unsigned max_blocks = 0;
    const int rc = grid_limit(&max_blocks);
    if (rc != 0)
        return rc;
    const size_t items = nvec + (c.n - nvec * K);    /* vectors + scalars */
    const size_t want = (items + BLOCK_THREADS - 1) / BLOCK_THREADS;
    const unsigned blocks = want < max_blocks ? (unsigned)want : max_blocks;
    launch_lock_t lock;
    reduce_kernel<T, Op><<<blocks, BLOCK_THREADS, 0, c.stream>>>(d, a, b, c.n,
                                                                 head, nvec);
    return error_code(cudaGetLastError());
}

typedef int (*runner_t)(const call_t &);

/*
 * Every op on unsigned integers, and the ops whose result bits do not
 * depend on signedness (all but MIN and MAX: two's complement wraps the
 * same way) for signed ones too, which halves the number of kernels.
 */
template <class U> runner_t unsigned_runner(ringx_op_t op)
{
    switch (op) {
    case RINGX_OP_SUM:  return run<U, op_sum>;
    case RINGX_OP_PROD: return run<U, op_prod>;
    case RINGX_OP_MIN:  return run<U, op_min>;
    case RINGX_OP_MAX:  return run<U, op_max>;
    case RINGX_OP_LAND: return run<U, op_land>;
    case RINGX_OP_LOR:  return run<U, op_lor>;
    case RINGX_OP_LXOR: return run<U, op_lxor>;
    case RINGX_OP_BAND: return run<U, op_band>;
    case RINGX_OP_BOR:  return run<U, op_bor>;
    case RINGX_OP_BXOR: return run<U, op_bxor>;
    default:            return nullptr;
    }
}

template <class S, class U> runner_t signed_runner(ringx_op_t op)
{
    switch (op) {
    case RINGX_OP_MIN: return run<S, op_min>;
    case RINGX_OP_MAX: return run<S, op_max>;
    default:           return unsigned_runner<U>(op);
    }
}

template <class F> runner_t floating_runner(ringx_op_t op)
{
    switch (op) {
    case RINGX_OP_SUM:  return run<F, op_sum>;
    case RINGX_OP_PROD: return run<F, op_prod>;
    case RINGX_OP_MIN:  return run<F, op_min>;
    case RINGX_OP_MAX:  return run<F, op_max>;
    default:            return nullptr;
    }
}

template <class C> runner_t complex_runner(ringx_op_t op)
{
    return op == RINGX_OP_SUM ? run<C, op_sum>
         : op == RINGX_OP_PROD ? run<C, op_prod> : nullptr;
}

template <class P> runner_t pair_runner(ringx_op_t op)
{
    return op == RINGX_OP_MINLOC ? run<P, op_minloc>
         : op == RINGX_OP_MAXLOC ? run<P, op_maxloc> : nullptr;
}

/* NULL for the pairs ringx_op_valid() rejects, which ringx never reduces
 * itself.  BOOL is a byte whose nonzero values are true, which is what the
 * uint8 logical ops compute (as on the host); BYTE is uint8 for the
 * bitwise ops. */
runner_t find_runner(ringx_type_t t, ringx_op_t op)
{
    if (!ringx_op_valid(op, t))
        return nullptr;
    switch (t) {
    case RINGX_TYPE_INT8:      return signed_runner<int8_t, uint8_t>(op);
    case RINGX_TYPE_INT16:     return signed_runner<int16_t, uint16_t>(op);
    case RINGX_TYPE_INT32:     return signed_runner<int32_t, uint32_t>(op);
    case RINGX_TYPE_INT64:     return signed_runner<int64_t, uint64_t>(op);
    case RINGX_TYPE_UINT8:
    case RINGX_TYPE_BOOL:
    case RINGX_TYPE_BYTE:      return unsigned_runner<uint8_t>(op);
    case RINGX_TYPE_UINT16:    return unsigned_runner<uint16_t>(op);
    case RINGX_TYPE_UINT32:    return unsigned_runner<uint32_t>(op);
    case RINGX_TYPE_UINT64:    return unsigned_runner<uint64_t>(op);
    case RINGX_TYPE_FLOAT:     return floating_runner<float>(op);
    case RINGX_TYPE_DOUBLE:    return floating_runner<double>(op);
    case RINGX_TYPE_FLOAT16:   return floating_runner<half_t>(op);
    case RINGX_TYPE_CFLOAT:    return complex_runner<cfloat_t>(op);
    case RINGX_TYPE_CDOUBLE:   return complex_runner<cdouble_t>(op);
    case RINGX_TYPE_FLOAT_INT: return pair_runner<float_int_t>(op);
    case RINGX_TYPE_2INT:      return pair_runner<int_int_t>(op);
    default:                   return nullptr;
    }
}

int reduce(void *dst, const void *a, const void *b, size_t n, ringx_type_t t,
           ringx_op_t op, void *stream, bool on_cpu)
{
    const runner_t runner = find_runner(t, op);
    const call_t c = { dst, a, b, n, static_cast<cudaStream_t>(stream), on_cpu };

    if (runner == nullptr)
        return RINGX_KERNEL_EINVAL;
    if (n == 0)
        return 0;
    if (dst == nullptr || a == nullptr || b == nullptr)
        return RINGX_KERNEL_EINVAL;
    return runner(c);
}

} /* namespace */

/* ------------------------------------------------------------ the C API */

namespace {
/* Why ringx_kernels_available() last said 0 (a static string). */
std::atomic<const char *> unavailable_why{"not asked yet"};
}

extern "C" int ringx_kernels_available(void)
{
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);

    if (e != cudaSuccess) {
        unavailable_why.store(cudaGetErrorName(e), std::memory_order_relaxed);
        (void)failed(e);
        return 0;
    }
    if (count <= 0)
        unavailable_why.store("no device", std::memory_order_relaxed);
    return count > 0;
}

extern "C" const char *ringx_kernels_unavailable_why(void)
{
    return unavailable_why.load(std::memory_order_relaxed);
}

extern "C" int ringx_kernels_usable(void)
{
    cudaFuncAttributes attributes;
    const cudaError_t e =
        cudaFuncGetAttributes(&attributes, reduce_kernel<float, op_sum>);

    return e == cudaSuccess ? 0 : failed(e);
}

extern "C" int ringx_kernel_reduce(void *dst, const void *a, const void *b,
                                   size_t n, ringx_type_t type, ringx_op_t op,
                                   void *stream)
{
    return reduce(dst, a, b, n, type, op, stream, false);
}

extern "C" int ringx_kernel_reduce_on_cpu(void *dst, const void *a,
                                          const void *b, size_t n,
                                          ringx_type_t type, ringx_op_t op)
{
    return reduce(dst, a, b, n, type, op, nullptr, true);
}

extern "C" int ringx_kernel_stream_create(void **stream)
{
    cudaStream_t s = nullptr;
    const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);

    if (e != cudaSuccess)
        return failed(e);
    *stream = s;
    return 0;
}

extern "C" int ringx_kernel_stream_destroy(void *stream)
{
    const cudaError_t e = cudaStreamDestroy(static_cast<cudaStream_t>(stream));
    return e == cudaSuccess ? 0 : failed(e);
}

extern "C" int ringx_kernel_sync(void *stream)
{
    const cudaError_t e =
        cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
    return e == cudaSuccess ? 0 : failed(e);
}
