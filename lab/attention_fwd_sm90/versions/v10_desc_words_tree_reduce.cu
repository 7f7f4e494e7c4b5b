// attention_fwd_sm90.cu: FlashAttention forward for Hopper (sm_90a), one file, CUDA toolkit headers only.
// versions/v10: measured on the FA grid (bf16, H200, 2026-12-01): x1.012 vs v9, d64 x0.981; its descriptor words alone are v11 (x1.025), its split reductions alone x0.989: see versions/README.
//
// The math. For each batch b and query head h (kv head h / (Hq/Hkv)):
//   S = scale * Q K^T            (Sq x Sk), masked to -inf where key j > i + Sk - Sq when causal
//   O = softmax(S) V,  LSE_i = log sum_j exp(S_ij)      (rows that see no key: O = 0, LSE = -inf)
// computed one key block at a time with the online softmax: a running row max m and row sum l in
// the log2 domain (x = S * log2 e), O rescaled by 2^(m_old - m_new) whenever the max grows, so S and P
// never leave registers.
//
// Two kernels share that loop:
//  * attn_wgmma_kernel (the fast path, every head dim on sm_90): a CTA of 1 + NCW warpgroups owns 64*NCW
//    query rows (NCW = 3 for d = 64, else 2). Warpgroup 0 is the producer: one thread drives the TMA
//    engine, bringing Q once and K, V tiles through a ring of shared-memory stages (128-byte swizzle,
//    mbarrier-completed). The others are consumers, 64 query rows each: S = Q K^T by wgmma from shared
//    memory, softmax in registers, P converted in registers into the A operand of the second wgmma
//    O += P V (V read N-major straight from its [key][d] tile), with S of the next block issued before
//    the softmax of this one. setmaxnreg moves registers from the producer to the consumers.
//    attn_wgmma_persistent_kernel runs the same loop with one CTA per SM walking the tiles, so that one
//    tile's loads overlap the previous tile's end; it serves short non-causal key sequences (Sk <= 1024).
//  * attn_mma_kernel (the portable fallback): FlashAttention-2 style, 4 warps x 16 rows, mma.sync
//    m16n8k16 with ldmatrix from padded shared memory filled by cp.async.
// The host side picks the kernel, builds the TMA descriptors (cuTensorMapEncodeTiled: link with -lcuda)
// and launches on the caller's stream with cudaLaunchKernel.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <type_traits>

namespace kseek {

// ------------------------------------------------------------------------------------------------
// Small PTX helpers
// ------------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

__device__ __forceinline__ float fast_exp2(float x) {  // ex2.approx(-inf) = +0, which the masking relies on
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// mma.sync m16n8k16, fp32 accumulate
template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  // src_bytes = 0 fills the 16 bytes with zeros: rows past the end of the sequence
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// ---- mbarrier, TMA, wgmma (sm_90)
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                            int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads/writes of accumulator registers across wgmma issue/wait.
template <int N> __device__ __forceinline__ void reg_fence(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// Shared-memory matrix descriptor, 128-byte swizzle (lbo/sbo in bytes): bits 0-13 start address >> 4,
// 16-29 leading-dimension byte offset >> 4, 32-45 stride byte offset >> 4, 62-63 the swizzle mode (1 = 128 B).
// Kept in its two 32-bit words: only the low word (start address >> 4 and LBO >> 4) moves between k-steps
// and stages, so with the base built once per CTA each wgmma's descriptor is one 32-bit add. (ncu on v9,
// bf16 S 8192 d128: 16% of the consumers' stall samples sat on the uniform-datapath shift/and/or chain that
// v9 ran to rebuild the whole descriptor before every wgmma.) Valid while the start address stays under
// 256 KB, which shared memory always does.
struct Desc {
  uint32_t lo, hi;
};
__device__ __forceinline__ Desc desc_base(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return {((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16), (sbo >> 4) | (1u << 30)};
}
// offset16: bytes / 16 from the base (callers pass compile-time constants plus stage * stage_bytes / 16, so the
// stage's part is added once and each k-step adds an immediate)
__device__ __forceinline__ uint64_t desc_at(Desc d, uint32_t offset16) {
  return ((uint64_t)d.hi << 32) | (d.lo + offset16);
}

// ---- generated wgmma wrappers (tools/gen_wgmma.py): GENERATED BEGIN
__device__ __forceinline__ void wgmma_ss_n64_bf16(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n96_bf16(float (&d)[48], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n128_bf16(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n176_bf16(float (&d)[88], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n192_bf16(float (&d)[96], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n64_bf16(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n128_bf16(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n192_bf16(float (&d)[96], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n256_bf16(float (&d)[128], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n64_f16(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n96_f16(float (&d)[48], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n128_f16(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n176_f16(float (&d)[88], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n192_f16(float (&d)[96], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n64_f16(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n128_f16(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n192_f16(float (&d)[96], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n256_f16(float (&d)[128], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

// ---- GENERATED END

template <int N, typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int accumulate) {
  constexpr bool bf = std::is_same<T, __nv_bfloat16>::value;
  if constexpr (N == 64) { if constexpr (bf) wgmma_ss_n64_bf16(d, da, db, accumulate); else wgmma_ss_n64_f16(d, da, db, accumulate); }
  if constexpr (N == 96) { if constexpr (bf) wgmma_ss_n96_bf16(d, da, db, accumulate); else wgmma_ss_n96_f16(d, da, db, accumulate); }
  if constexpr (N == 128) { if constexpr (bf) wgmma_ss_n128_bf16(d, da, db, accumulate); else wgmma_ss_n128_f16(d, da, db, accumulate); }
  if constexpr (N == 176) { if constexpr (bf) wgmma_ss_n176_bf16(d, da, db, accumulate); else wgmma_ss_n176_f16(d, da, db, accumulate); }
  if constexpr (N == 192) { if constexpr (bf) wgmma_ss_n192_bf16(d, da, db, accumulate); else wgmma_ss_n192_f16(d, da, db, accumulate); }
}
template <int N, typename T>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  constexpr bool bf = std::is_same<T, __nv_bfloat16>::value;
  if constexpr (N == 64) { if constexpr (bf) wgmma_rs_n64_bf16(d, a, db, accumulate); else wgmma_rs_n64_f16(d, a, db, accumulate); }
  if constexpr (N == 128) { if constexpr (bf) wgmma_rs_n128_bf16(d, a, db, accumulate); else wgmma_rs_n128_f16(d, a, db, accumulate); }
  if constexpr (N == 192) { if constexpr (bf) wgmma_rs_n192_bf16(d, a, db, accumulate); else wgmma_rs_n192_f16(d, a, db, accumulate); }
  if constexpr (N == 256) { if constexpr (bf) wgmma_rs_n256_bf16(d, a, db, accumulate); else wgmma_rs_n256_f16(d, a, db, accumulate); }
}

constexpr float kLn2 = 0.69314718055994530942f;

// ------------------------------------------------------------------------------------------------
// Online softmax, shared by both kernels. A thread holds 2 rows (r = 0: lane/4, r = 1: lane/4 + 8) of a
// 16-row slab, NJ chunks of 8 columns each: s[j*4 + e], row e>>1, column 8j + 2(lane%4) + (e&1).
// softmax_scores turns raw scores into P = 2^(s*scale_log2 - m) (one FFMA + one MUFU per element), updates
// the running max m and the per-thread partial sum l, and returns alpha = 2^(m_old - m_new), which the
// caller applies to O when O is not being written by a wgmma in flight.
// ------------------------------------------------------------------------------------------------
template <int NJ>
__device__ __forceinline__ void softmax_scores(float (&s)[NJ * 4], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                               float scale_log2, bool need_mask, int row0, int col0, int Sk,
                                               int causal, int diag) {
  // Row max and row sum in 4 independent partials per row: one running value made every FMNMX and FADD
  // wait for the previous one (ncu on v9: FMNMX 16% of the consumers' stall samples, mostly short_sb/wait).
  float mxp[2][4];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int i = 0; i < 4; ++i) mxp[r][i] = -INFINITY;
#pragma unroll
  for (int j = 0; j < NJ; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (need_mask) {
        const int col = col0 + j * 8 + (e & 1);
        const int row = row0 + (e >> 1) * 8;
        if (col >= Sk || (causal && col > row + diag)) s[j * 4 + e] = -INFINITY;
      }
      mxp[e >> 1][j & 3] = fmaxf(mxp[e >> 1][j & 3], s[j * 4 + e]);
    }
  }
  float mx[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) mx[r] = fmaxf(fmaxf(mxp[r][0], mxp[r][1]), fmaxf(mxp[r][2], mxp[r][3]));
  float neg_m[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float m_new = fmaxf(m[r], quad_max(mx[r]) * scale_log2);
    const float m_use = (m_new == -INFINITY) ? 0.f : m_new;  // a row with nothing visible yet keeps P = 0
    alpha[r] = fast_exp2(m[r] - m_use);
    m[r] = m_new;
    l[r] *= alpha[r];
    neg_m[r] = -m_use;
  }
  float lp[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int j = 0; j < NJ; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float p = fast_exp2(fmaf(s[j * 4 + e], scale_log2, neg_m[e >> 1]));
      s[j * 4 + e] = p;
      lp[e >> 1][j & 3] += p;
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) l[r] += (lp[r][0] + lp[r][1]) + (lp[r][2] + lp[r][3]);
}

template <int NO>
__device__ __forceinline__ void rescale_o(float (&o)[NO * 4], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < NO; ++j) {
    o[j * 4 + 0] *= alpha[0];
    o[j * 4 + 1] *= alpha[0];
    o[j * 4 + 2] *= alpha[1];
    o[j * 4 + 3] *= alpha[1];
  }
}

template <int NJ, int NO>
__device__ __forceinline__ void softmax_step(float (&s)[NJ * 4], float (&o)[NO * 4], float (&m)[2], float (&l)[2],
                                             float scale_log2, bool need_mask, int row0, int col0, int Sk,
                                             int causal, int diag) {
  float alpha[2];
  softmax_scores<NJ>(s, m, l, alpha, scale_log2, need_mask, row0, col0, Sk, causal, diag);
  rescale_o<NO>(o, alpha);
}

// Writes the normalised output rows and the LSE of one thread's two rows.
template <int NO, typename T>
__device__ __forceinline__ void store_rows(const float (&o)[NO * 4], const float (&m)[2], float (&l)[2], T* o_ptr,
                                           float* lse_ptr, int row0, int Sq, int Hq, int D, int lane) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float lsum = quad_sum(l[r]);
    const int row = row0 + r * 8;
    if (row >= Sq) continue;
    const float inv = lsum > 0.f ? 1.f / lsum : 0.f;
    T* dst = o_ptr + (size_t)row * Hq * D + 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < NO; ++j) {
      if (j * 8 < D)
        *reinterpret_cast<uint32_t*>(dst + j * 8) = pack2<T>(o[j * 4 + 2 * r] * inv, o[j * 4 + 2 * r + 1] * inv);
    }
    if ((lane & 3) == 0) lse_ptr[row] = lsum > 0.f ? (m[r] + log2f(lsum)) * kLn2 : -INFINITY;
  }
}

// ------------------------------------------------------------------------------------------------
// Fallback: FlashAttention-2 style with mma.sync. 4 warps, 64 query rows, 64-key blocks, K/V double
// buffered by cp.async. Rows padded by 16 bytes so that ldmatrix's 8 row addresses hit distinct banks.
// ------------------------------------------------------------------------------------------------
template <int D, typename T>
__global__ void __launch_bounds__(128) attn_mma_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                       const T* __restrict__ v, T* __restrict__ o,
                                                       float* __restrict__ lse, int Sq, int Sk, int Hq, int Hkv,
                                                       int causal, float scale_log2) {
  constexpr int BM = 64, BN = 64, LD = D + 8, CH = D / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + BM * LD;
  T* sV = sK + 2 * BN * LD;

  const int mblk = causal ? (gridDim.x - 1 - blockIdx.x) : blockIdx.x;  // heaviest causal blocks first
  const int h = blockIdx.y, b = blockIdx.z, hk = h / (Hq / Hkv);
  const int m0 = mblk * BM;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int diag = Sk - Sq;
  const int n_end = causal ? min(Sk, m0 + BM + diag) : Sk;
  const int nblocks = n_end > 0 ? (n_end + BN - 1) / BN : 0;

  const size_t qs = (size_t)Hq * D, ks = (size_t)Hkv * D;
  const T* qb = q + ((size_t)b * Sq * Hq + h) * D;
  const T* kb = k + ((size_t)b * Sk * Hkv + hk) * D;
  const T* vb = v + ((size_t)b * Sk * Hkv + hk) * D;

  auto load_tile = [&](T* dst, const T* src, size_t stride, int row0, int nvalid) {
    for (int i = tid; i < 64 * CH; i += 128) {
      const int r = i / CH, c = i % CH, gr = row0 + r;
      const bool ok = gr < nvalid;
      cp_async16(smem_u32(dst + r * LD + c * 8), src + (size_t)(ok ? gr : 0) * stride + c * 8, ok ? 16 : 0);
    }
  };

  float oacc[D / 8 * 4];
#pragma unroll
  for (int i = 0; i < D / 8 * 4; ++i) oacc[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

  if (nblocks > 0) {
    load_tile(sQ, qb, qs, m0, Sq);
    load_tile(sK, kb, ks, 0, Sk);
    load_tile(sV, vb, ks, 0, Sk);
    cp_async_commit();
  }
  for (int nb = 0; nb < nblocks; ++nb) {
    const int buf = nb & 1;
    if (nb + 1 < nblocks) {
      load_tile(sK + (buf ^ 1) * BN * LD, kb, ks, (nb + 1) * BN, Sk);
      load_tile(sV + (buf ^ 1) * BN * LD, vb, ks, (nb + 1) * BN, Sk);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    float s[BN / 8 * 4];
#pragma unroll
    for (int i = 0; i < BN / 8 * 4; ++i) s[i] = 0.f;
    const T* sKb = sK + buf * BN * LD;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t a[4];
      ldmatrix_x4(a, smem_u32(sQ + (warp * 16 + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8));
#pragma unroll
      for (int j = 0; j < BN / 8; j += 2) {
        uint32_t bb[4];
        ldmatrix_x4(bb, smem_u32(sKb + (j * 8 + (lane >> 4) * 8 + (lane & 7)) * LD + kk * 16 + ((lane >> 3) & 1) * 8));
        mma16816<T>(*reinterpret_cast<float(*)[4]>(&s[j * 4]), a, bb[0], bb[1]);
        mma16816<T>(*reinterpret_cast<float(*)[4]>(&s[(j + 1) * 4]), a, bb[2], bb[3]);
      }
    }
    const int n0 = nb * BN;
    const bool need_mask = (n0 + BN > Sk) || (causal && n0 + BN - 1 > m0 + diag);
    softmax_step<BN / 8, D / 8>(s, oacc, m, l, scale_log2, need_mask, m0 + warp * 16 + (lane >> 2),
                                n0 + 2 * (lane & 3), Sk, causal, diag);

    const T* sVb = sV + buf * BN * LD;
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      const uint32_t a[4] = {pack2<T>(s[8 * kk + 0], s[8 * kk + 1]), pack2<T>(s[8 * kk + 2], s[8 * kk + 3]),
                             pack2<T>(s[8 * kk + 4], s[8 * kk + 5]), pack2<T>(s[8 * kk + 6], s[8 * kk + 7])};
#pragma unroll
      for (int j = 0; j < D / 8; j += 2) {
        uint32_t bb[4];
        ldmatrix_x4_trans(bb, smem_u32(sVb + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + j * 8 + (lane >> 4) * 8));
        mma16816<T>(*reinterpret_cast<float(*)[4]>(&oacc[j * 4]), a, bb[0], bb[1]);
        mma16816<T>(*reinterpret_cast<float(*)[4]>(&oacc[(j + 1) * 4]), a, bb[2], bb[3]);
      }
    }
    __syncthreads();
  }
  store_rows<D / 8, T>(oacc, m, l, o + ((size_t)b * Sq * Hq + h) * D, lse + ((size_t)b * Hq + h) * Sq,
                       m0 + warp * 16 + (lane >> 2), Sq, Hq, D, lane);
}

// ------------------------------------------------------------------------------------------------
// Hopper kernel. Tiles per head dim (BN keys per block, ST pipeline stages):
//   D 64: 128x128, D 96 and 128: 128x128 (96 padded to 128 in shared memory by TMA's zero fill),
//   D 192: 128x96, D 256: 128x64. Shared memory holds Q [NCH][128][64] and K, V [ST][NCH][BN][64],
//   each [rows][64] slab one TMA box with the 128-byte swizzle that wgmma reads directly.
// ------------------------------------------------------------------------------------------------
template <int D> struct WgCfg;  // NCW consumer warpgroups of 64 rows; REG = their setmaxnreg budget
template <> struct WgCfg<64> { static constexpr int BN = 128, ST = 3, NCW = 3, REG = 160; };
template <> struct WgCfg<96> { static constexpr int BN = 128, ST = 2, NCW = 2, REG = 240; };
template <> struct WgCfg<128> { static constexpr int BN = 128, ST = 2, NCW = 2, REG = 240; };
template <> struct WgCfg<192> { static constexpr int BN = 96, ST = 2, NCW = 2, REG = 240; };
template <> struct WgCfg<256> { static constexpr int BN = 64, ST = 2, NCW = 2, REG = 240; };

template <int D> struct WgShape {
  static constexpr int NCW = WgCfg<D>::NCW, REG = WgCfg<D>::REG, THREADS = 128 * (NCW + 1);
  static constexpr int BM = 64 * NCW, BN = WgCfg<D>::BN, ST = WgCfg<D>::ST;
  static constexpr int NCH = (D + 63) / 64, DP = NCH * 64;
  static constexpr int Q_BYTES = NCH * BM * 128;
  static constexpr int KV_BYTES = NCH * BN * 128;  // one K (or V) stage
  // barriers: q_full, k/v full/empty per stage, and q_empty (the persistent kernel's)
  static constexpr int SMEM = 1024 /*alignment slack*/ + Q_BYTES + 2 * ST * KV_BYTES + 8 * (2 + 4 * ST);
};

template <int D, typename T>
__global__ void __launch_bounds__(WgShape<D>::THREADS, 1) attn_wgmma_kernel(const __grid_constant__ CUtensorMap tmQ,
                                                            const __grid_constant__ CUtensorMap tmK,
                                                            const __grid_constant__ CUtensorMap tmV,
                                                            T* __restrict__ o, float* __restrict__ lse, int Sq,
                                                            int Sk, int Hq, int Hkv, int causal, float scale_log2) {
  using S = WgShape<D>;
  constexpr int BM = S::BM, BN = S::BN, ST = S::ST, NCH = S::NCH, DP = S::DP;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t sQ = (raw + 1023) & ~1023u;  // the 128-byte swizzle pattern repeats every 1024 bytes
  const uint32_t sK = sQ + S::Q_BYTES;
  const uint32_t sV = sK + ST * S::KV_BYTES;
  const uint32_t bar = sV + ST * S::KV_BYTES;
  const uint32_t q_full = bar;
  auto k_full = [&](int s) { return bar + 8 * (1 + s); };
  auto v_full = [&](int s) { return bar + 8 * (1 + ST + s); };
  // K and V slots are released separately: a K slot is free as soon as S = Q K^T has been computed, which
  // lets the producer bring K(it+1) while O += P V(it-1) still reads V.
  auto k_empty = [&](int s) { return bar + 8 * (1 + 2 * ST + s); };
  auto v_empty = [&](int s) { return bar + 8 * (1 + 3 * ST + s); };

  const int mblk = causal ? (gridDim.x - 1 - blockIdx.x) : blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z, hk = h / (Hq / Hkv);
  const int m0 = mblk * BM;
  const int tid = threadIdx.x, wg = tid >> 7;
  const int diag = Sk - Sq;
  const int n_end = causal ? min(Sk, m0 + BM + diag) : Sk;
  const int nblocks = n_end > 0 ? (n_end + BN - 1) / BN : 0;

  if (tid == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < ST; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), 4 * S::NCW);  // one arrival per consumer warp
      mbar_init(v_empty(s), 4 * S::NCW);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // Producer warpgroup: gives its registers to the consumers, one thread issues every copy.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
    if (tid == 0 && nblocks > 0) {
      mbar_expect_tx(q_full, S::Q_BYTES);
      for (int c = 0; c < NCH; ++c) tma_load_4d(sQ + c * BM * 128, &tmQ, q_full, c * 64, h, m0, b);
      for (int it = 0; it < nblocks; ++it) {
        const int s = it % ST;
        mbar_wait(k_empty(s), ((it / ST) & 1) ^ 1);  // a fresh barrier passes parity 1 at once
        mbar_expect_tx(k_full(s), S::KV_BYTES);
        for (int c = 0; c < NCH; ++c)
          tma_load_4d(sK + s * S::KV_BYTES + c * BN * 128, &tmK, k_full(s), c * 64, hk, it * BN, b);
        mbar_wait(v_empty(s), ((it / ST) & 1) ^ 1);
        mbar_expect_tx(v_full(s), S::KV_BYTES);
        for (int c = 0; c < NCH; ++c)
          tma_load_4d(sV + s * S::KV_BYTES + c * BN * 128, &tmV, v_full(s), c * 64, hk, it * BN, b);
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(S::REG));
    // which 64-row slice of the CTA's queries; the shuffle tells the compiler it is warp-uniform, so the
    // descriptors below live in uniform registers
    const int cw = __shfl_sync(0xffffffffu, wg, 0) - 1;
    const Desc dq = desc_base(sQ + cw * 64 * 128, 16, 1024), dk = desc_base(sK, 16, 1024),
               dv = desc_base(sV, BN * 128, 1024);
    const int wi = (tid >> 5) & 3, lane = tid & 31;
    const int row0 = m0 + cw * 64 + wi * 16 + (lane >> 2);

    float oacc[DP / 2];
#pragma unroll
    for (int i = 0; i < DP / 2; ++i) oacc[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

    // Software pipeline inside the warpgroup: while the softmax of block it runs on the CUDA cores,
    // the tensor cores work on O += P(it-1) V(it-1), issued just before it. S(it) = Q K(it)^T is issued
    // first, so it is ready when the softmax needs it.
    uint32_t pa[BN / 16][4];
    float sacc[BN / 2];
    auto issue_qk = [&](int st) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        // K-major operands: stepping 16 elements along K inside a swizzled 128-byte row is +32 bytes
        const uint64_t da = desc_at(dq, ((kk >> 2) * BM * 128 + (kk & 3) * 32) / 16);
        const uint64_t db = desc_at(dk, st * (S::KV_BYTES / 16) + ((kk >> 2) * BN * 128 + (kk & 3) * 32) / 16);
        wgmma_ss<BN, T>(sacc, da, db, kk > 0);
      }
    };
    auto issue_pv = [&](int st) {
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        // V tile is [key][d]: N-major B. 16 keys = two 8-row groups = 2048 bytes; the next 64 columns
        // of d sit in the next slab, BN*128 bytes on (LBO); 8-key groups are 1024 bytes apart (SBO).
        const uint64_t db = desc_at(dv, st * (S::KV_BYTES / 16) + kk * (2048 / 16));
        wgmma_rs<DP, T>(oacc, pa[kk], db, 1);
      }
    };
    // P in registers becomes the A operand: columns 16kk..16kk+15 of S are exactly the m64k16 A fragment.
    auto pack_p = [&]() {
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
#pragma unroll
        for (int i = 0; i < 4; ++i) pa[kk][i] = pack2<T>(sacc[8 * kk + 2 * i], sacc[8 * kk + 2 * i + 1]);
      }
    };
    auto mask_needed = [&](int it) {
      const int n0 = it * BN;
      return (n0 + BN > Sk) || (causal && n0 + BN - 1 > m0 + diag);
    };

    if (nblocks > 0) {
      mbar_wait(q_full, 0);
      mbar_wait(k_full(0), 0);
      wgmma_fence();
      issue_qk(0);
      wgmma_commit();
      wgmma_wait<0>();
      reg_fence(sacc);
      if (lane == 0) mbar_arrive(k_empty(0));
      float alpha[2];
      softmax_scores<BN / 8>(sacc, m, l, alpha, scale_log2, mask_needed(0), row0, 2 * (lane & 3), Sk, causal, diag);
      pack_p();
    }
    for (int it = 1; it < nblocks; ++it) {
      const int s = it % ST, sp = (it - 1) % ST;
      mbar_wait(k_full(s), (it / ST) & 1);
      mbar_wait(v_full(sp), ((it - 1) / ST) & 1);  // long since landed: V(it-1) came with K(it-1)
      reg_fence(oacc);
      wgmma_fence();  // no branch between here and the second issue, or ptxas adds its own fence
      issue_qk(s);
      wgmma_commit();
      issue_pv(sp);
      wgmma_commit();
      wgmma_wait<1>();  // S(it) is complete; O += P(it-1) V(it-1) may still run
      reg_fence(sacc);
      if (lane == 0) mbar_arrive(k_empty(s));
      float alpha[2];
      softmax_scores<BN / 8>(sacc, m, l, alpha, scale_log2, mask_needed(it), row0, it * BN + 2 * (lane & 3), Sk,
                             causal, diag);
      wgmma_wait<0>();
      reg_fence(oacc);
      if (lane == 0) mbar_arrive(v_empty(sp));
      rescale_o<DP / 8>(oacc, alpha);
      pack_p();
    }
    if (nblocks > 0) {
      const int sp = (nblocks - 1) % ST;
      mbar_wait(v_full(sp), ((nblocks - 1) / ST) & 1);
      reg_fence(oacc);
      wgmma_fence();
      issue_pv(sp);
      wgmma_commit();
      wgmma_wait<0>();
      reg_fence(oacc);
      if (lane == 0) mbar_arrive(v_empty(sp));
    }
    store_rows<DP / 8, T>(oacc, m, l, o + ((size_t)b * Sq * Hq + h) * D, lse + ((size_t)b * Hq + h) * Sq, row0, Sq,
                          Hq, D, lane);
  }
}

// ------------------------------------------------------------------------------------------------
// Persistent variant of attn_wgmma_kernel, for short non-causal key sequences (see use_persistent). The
// per-tile loop body is the same as above; the two stay separate functions because folding both launches into
// one kernel (versions/v8_persistent_short.cu) made the one-tile-per-CTA path 2-3% slower on every shape
// (0.973x of v5 over the 90 bf16 harness shapes, bench), for a reason not yet found.
// ------------------------------------------------------------------------------------------------
template <int D, typename T>
__global__ void __launch_bounds__(WgShape<D>::THREADS, 1)
    attn_wgmma_persistent_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                                 const __grid_constant__ CUtensorMap tmV, T* __restrict__ o, float* __restrict__ lse,
                                 int B, int Sq, int Sk, int Hq, int Hkv, int causal, float scale_log2) {
  using S = WgShape<D>;
  constexpr int BM = S::BM, BN = S::BN, ST = S::ST, NCH = S::NCH, DP = S::DP;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t sQ = (raw + 1023) & ~1023u;  // the 128-byte swizzle pattern repeats every 1024 bytes
  const uint32_t sK = sQ + S::Q_BYTES;
  const uint32_t sV = sK + ST * S::KV_BYTES;
  const uint32_t bar = sV + ST * S::KV_BYTES;
  const uint32_t q_full = bar;
  // Q's buffer is free again once every consumer warp has computed the tile's last S = Q K^T: the producer
  // then brings the next tile's Q while the consumers finish the softmax, the last O += P V and the stores.
  const uint32_t q_empty = bar + 8 * (1 + 4 * ST);
  auto k_full = [&](int s) { return bar + 8 * (1 + s); };
  auto v_full = [&](int s) { return bar + 8 * (1 + ST + s); };
  // K and V slots are released separately: a K slot is free as soon as S = Q K^T has been computed, which
  // lets the producer bring K(it+1) while O += P V(it-1) still reads V.
  auto k_empty = [&](int s) { return bar + 8 * (1 + 2 * ST + s); };
  auto v_empty = [&](int s) { return bar + 8 * (1 + 3 * ST + s); };

  // Tiles: (query block, head, batch), query blocks fastest, so the CTAs running at one time share a head's
  // K and V in L2. One CTA per SM takes tiles blockIdx.x, blockIdx.x + gridDim.x, ...: the ring of K/V stages,
  // and Q, run on from one tile into the next, so the next tile's loads overlap this one's last blocks and its
  // stores instead of every CTA starting with an idle load.
  const int nmb = (Sq + BM - 1) / BM;
  const int ntiles = nmb * Hq * B;
  const int tid = threadIdx.x, wg = tid >> 7;
  const int diag = Sk - Sq;
  struct Tile { int m0, h, b, nblocks; };
  auto tile_at = [&](int t) {
    Tile x;
    const int mb = t % nmb, bh = t / nmb;
    x.h = bh % Hq;
    x.b = bh / Hq;
    x.m0 = (causal ? nmb - 1 - mb : mb) * BM;  // heaviest causal blocks first
    const int n_end = causal ? min(Sk, x.m0 + BM + diag) : Sk;
    x.nblocks = n_end > 0 ? (n_end + BN - 1) / BN : 0;
    return x;
  };

  if (tid == 0) {
    mbar_init(q_full, 1);
    mbar_init(q_empty, 4 * S::NCW);
    for (int s = 0; s < ST; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), 4 * S::NCW);  // one arrival per consumer warp
      mbar_init(v_empty(s), 4 * S::NCW);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // Producer warpgroup: gives its registers to the consumers, one thread issues every copy.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
    if (tid == 0) {
      int g = 0, ti = 0;  // K/V blocks and tiles with work issued so far: ring slot and barrier parities
      for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const Tile x = tile_at(t);
        if (x.nblocks == 0) continue;
        const int hk = x.h / (Hq / Hkv);
        mbar_wait(q_empty, (ti & 1) ^ 1);  // a fresh barrier passes parity 1 at once
        mbar_expect_tx(q_full, S::Q_BYTES);
        for (int c = 0; c < NCH; ++c) tma_load_4d(sQ + c * BM * 128, &tmQ, q_full, c * 64, x.h, x.m0, x.b);
        for (int it = 0; it < x.nblocks; ++it, ++g) {
          const int s = g % ST, ph = (g / ST) & 1;
          mbar_wait(k_empty(s), ph ^ 1);
          mbar_expect_tx(k_full(s), S::KV_BYTES);
          for (int c = 0; c < NCH; ++c)
            tma_load_4d(sK + s * S::KV_BYTES + c * BN * 128, &tmK, k_full(s), c * 64, hk, it * BN, x.b);
          mbar_wait(v_empty(s), ph ^ 1);
          mbar_expect_tx(v_full(s), S::KV_BYTES);
          for (int c = 0; c < NCH; ++c)
            tma_load_4d(sV + s * S::KV_BYTES + c * BN * 128, &tmV, v_full(s), c * 64, hk, it * BN, x.b);
        }
        ++ti;
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(S::REG));
    const int cw = __shfl_sync(0xffffffffu, wg, 0) - 1;  // which 64-row slice (warp-uniform, as above)
    const Desc dq = desc_base(sQ + cw * 64 * 128, 16, 1024), dk = desc_base(sK, 16, 1024),
               dv = desc_base(sV, BN * 128, 1024);
    const int wi = (tid >> 5) & 3, lane = tid & 31;

    float oacc[DP / 2];
    uint32_t pa[BN / 16][4];
    float sacc[BN / 2];
    int g = 0, ti = 0;  // as the producer counts them
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
      const Tile x = tile_at(t);
      const int m0 = x.m0, nblocks = x.nblocks;
      const int row0 = m0 + cw * 64 + wi * 16 + (lane >> 2);
#pragma unroll
      for (int i = 0; i < DP / 2; ++i) oacc[i] = 0.f;
      float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

      // Software pipeline inside the warpgroup: while the softmax of block it runs on the CUDA cores,
      // the tensor cores work on O += P(it-1) V(it-1), issued just before it. S(it) = Q K(it)^T is issued
      // first, so it is ready when the softmax needs it.
      auto issue_qk = [&](int st) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          // K-major operands: stepping 16 elements along K inside a swizzled 128-byte row is +32 bytes
          const uint64_t da = desc_at(dq, ((kk >> 2) * BM * 128 + (kk & 3) * 32) / 16);
          const uint64_t db = desc_at(dk, st * (S::KV_BYTES / 16) + ((kk >> 2) * BN * 128 + (kk & 3) * 32) / 16);
          wgmma_ss<BN, T>(sacc, da, db, kk > 0);
        }
      };
      auto issue_pv = [&](int st) {
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
          // V tile is [key][d]: N-major B. 16 keys = two 8-row groups = 2048 bytes; the next 64 columns
          // of d sit in the next slab, BN*128 bytes on (LBO); 8-key groups are 1024 bytes apart (SBO).
          const uint64_t db = desc_at(dv, st * (S::KV_BYTES / 16) + kk * (2048 / 16));
          wgmma_rs<DP, T>(oacc, pa[kk], db, 1);
        }
      };
      // P in registers becomes the A operand: columns 16kk..16kk+15 of S are exactly the m64k16 A fragment.
      auto pack_p = [&]() {
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
#pragma unroll
          for (int i = 0; i < 4; ++i) pa[kk][i] = pack2<T>(sacc[8 * kk + 2 * i], sacc[8 * kk + 2 * i + 1]);
        }
      };
      auto mask_needed = [&](int it) {
        const int n0 = it * BN;
        return (n0 + BN > Sk) || (causal && n0 + BN - 1 > m0 + diag);
      };

      if (nblocks > 0) {
        const int s0 = g % ST;
        mbar_wait(q_full, ti & 1);
        mbar_wait(k_full(s0), (g / ST) & 1);
        wgmma_fence();
        issue_qk(s0);
        wgmma_commit();
        wgmma_wait<0>();
        reg_fence(sacc);
        if (lane == 0) {
          mbar_arrive(k_empty(s0));
          if (nblocks == 1) mbar_arrive(q_empty);
        }
        float alpha[2];
        softmax_scores<BN / 8>(sacc, m, l, alpha, scale_log2, mask_needed(0), row0, 2 * (lane & 3), Sk, causal,
                               diag);
        pack_p();
      }
      for (int it = 1; it < nblocks; ++it) {
        const int gi = g + it, s = gi % ST, sp = (gi - 1) % ST;
        mbar_wait(k_full(s), (gi / ST) & 1);
        mbar_wait(v_full(sp), ((gi - 1) / ST) & 1);  // long since landed: V(it-1) came with K(it-1)
        reg_fence(oacc);
        wgmma_fence();  // no branch between here and the second issue, or ptxas adds its own fence
        issue_qk(s);
        wgmma_commit();
        issue_pv(sp);
        wgmma_commit();
        wgmma_wait<1>();  // S(it) is complete; O += P(it-1) V(it-1) may still run
        reg_fence(sacc);
        if (lane == 0) {
          mbar_arrive(k_empty(s));
          if (it == nblocks - 1) mbar_arrive(q_empty);
        }
        float alpha[2];
        softmax_scores<BN / 8>(sacc, m, l, alpha, scale_log2, mask_needed(it), row0, it * BN + 2 * (lane & 3), Sk,
                               causal, diag);
        wgmma_wait<0>();
        reg_fence(oacc);
        if (lane == 0) mbar_arrive(v_empty(sp));
        rescale_o<DP / 8>(oacc, alpha);
        pack_p();
      }
      if (nblocks > 0) {
        const int gi = g + nblocks - 1, sp = gi % ST;
        mbar_wait(v_full(sp), (gi / ST) & 1);
        reg_fence(oacc);
        wgmma_fence();
        issue_pv(sp);
        wgmma_commit();
        wgmma_wait<0>();
        reg_fence(oacc);
        if (lane == 0) mbar_arrive(v_empty(sp));
        g += nblocks;
        ++ti;
      }
      store_rows<DP / 8, T>(oacc, m, l, o + ((size_t)x.b * Sq * Hq + x.h) * D, lse + ((size_t)x.b * Hq + x.h) * Sq,
                            row0, Sq, Hq, D, lane);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Host side
// ------------------------------------------------------------------------------------------------
// [B, S, H, D] tensor seen as 4-d (D, H, S, B); box = 64 columns of d x 1 head x `rows` rows x 1 batch.
static bool make_map(CUtensorMap* map, const void* ptr, int dtype, int B, int S, int H, int D, int rows) {
  const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)H, (cuuint64_t)S, (cuuint64_t)B};
  const cuuint64_t strides[3] = {(cuuint64_t)D * 2, (cuuint64_t)H * D * 2, (cuuint64_t)S * H * D * 2};
  const cuuint32_t box[4] = {64, 1, (cuuint32_t)rows, 1};
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  return cuTensorMapEncodeTiled(map, dtype == 0 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
            const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

struct Args {
  const void *q, *k, *v;
  void* o;
  float* lse;
  int B, Sq, Sk, Hq, Hkv, D, dtype, causal;
  float scale_log2;
  cudaStream_t stream;
};

template <int D, typename T> static int launch_mma(const Args& a) {
  constexpr int LD = D + 8;
  const int smem = (64 + 4 * 64) * LD * (int)sizeof(T);
  static bool configured = false;
  if (!configured) {
    if (cudaFuncSetAttribute(attn_mma_kernel<D, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess)
      return 3;
    configured = true;
  }
  dim3 grid((a.Sq + 63) / 64, a.Hq, a.B);
  const T *q = (const T*)a.q, *k = (const T*)a.k, *v = (const T*)a.v;
  T* o = (T*)a.o;
  float* lse = a.lse;
  int Sq = a.Sq, Sk = a.Sk, Hq = a.Hq, Hkv = a.Hkv, causal = a.causal;
  float sl2 = a.scale_log2;
  void* args[] = {&q, &k, &v, &o, &lse, &Sq, &Sk, &Hq, &Hkv, &causal, &sl2};
  return cudaLaunchKernel((const void*)attn_mma_kernel<D, T>, grid, dim3(128), args, smem, a.stream) == cudaSuccess ? 0 : 4;
}

// Persistent grid (one CTA per SM walking the tiles) or one CTA per tile (the hardware hands tiles to SMs as
// they free up). Persistent pays where tiles are short: harness full grid (v8, H200), the 24 non-causal
// scenarios with 256 < Sk <= 1024 or d > 64 with Sk <= 256: 1.087x geomean (Sk 113: 1.26x, 512: 1.03 to 1.13x,
// 1000/1024: 1.00 to 1.06x). It loses on causal masks (tiles of different lengths dealt out statically leave
// SMs idle at the end: 0.53x to 0.66x at S 4096..16384, bench of v7) and does not gain on longer keys.
static bool use_persistent(const Args& a) { return !a.causal && a.Sk <= 1024; }

template <int D, typename T> static int launch_wgmma(const Args& a) {
  using S = WgShape<D>;
  CUtensorMap mq, mk, mv;
  if (!make_map(&mq, a.q, a.dtype, a.B, a.Sq, a.Hq, D, S::BM) || !make_map(&mk, a.k, a.dtype, a.B, a.Sk, a.Hkv, D, S::BN) ||
      !make_map(&mv, a.v, a.dtype, a.B, a.Sk, a.Hkv, D, S::BN))
    return 5;
  static bool configured = false;
  if (!configured) {
    if (cudaFuncSetAttribute(attn_wgmma_kernel<D, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM) !=
            cudaSuccess ||
        cudaFuncSetAttribute(attn_wgmma_persistent_kernel<D, T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             S::SMEM) != cudaSuccess)
      return 3;
    configured = true;
  }
  T* o = (T*)a.o;
  float* lse = a.lse;
  int B = a.B, Sq = a.Sq, Sk = a.Sk, Hq = a.Hq, Hkv = a.Hkv, causal = a.causal;
  float sl2 = a.scale_log2;
  if (use_persistent(a)) {
    static int sms = 0;
    if (!sms) {
      int dev = 0;
      if (cudaGetDevice(&dev) != cudaSuccess ||
          cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
        return 3;
    }
    const long long ntiles = (long long)((a.Sq + S::BM - 1) / S::BM) * a.Hq * a.B;
    if (ntiles > 0x7fffffff) return 1;
    dim3 grid((unsigned)(ntiles > sms ? sms : ntiles));
    void* args[] = {&mq, &mk, &mv, &o, &lse, &B, &Sq, &Sk, &Hq, &Hkv, &causal, &sl2};
    return cudaLaunchKernel((const void*)attn_wgmma_persistent_kernel<D, T>, grid, dim3(S::THREADS), args, S::SMEM,
                            a.stream) == cudaSuccess
               ? 0
               : 4;
  }
  dim3 grid((a.Sq + S::BM - 1) / S::BM, a.Hq, a.B);
  void* args[] = {&mq, &mk, &mv, &o, &lse, &Sq, &Sk, &Hq, &Hkv, &causal, &sl2};
  return cudaLaunchKernel((const void*)attn_wgmma_kernel<D, T>, grid, dim3(S::THREADS), args, S::SMEM, a.stream) ==
                 cudaSuccess
             ? 0
             : 4;
}

template <typename T> static int dispatch(const Args& a, bool wg) {
  switch (a.D) {
    case 64: return wg ? launch_wgmma<64, T>(a) : launch_mma<64, T>(a);
    case 96: return wg ? launch_wgmma<96, T>(a) : launch_mma<96, T>(a);
    case 128: return wg ? launch_wgmma<128, T>(a) : launch_mma<128, T>(a);
    case 192: return wg ? launch_wgmma<192, T>(a) : launch_mma<192, T>(a);
    case 256: return wg ? launch_wgmma<256, T>(a) : launch_mma<256, T>(a);
  }
  return 2;
}

static bool device_is_sm90() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return major == 9 && minor == 0;
}

}  // namespace kseek

// variant: 0 = best available, 1 = mma.sync fallback, 2 = wgmma (fails with 6 where not sm_90)
extern "C" int kseek_attention_fwd_variant(int variant, const void* q, const void* k, const void* v, void* o,
                                           float* lse, int batch, int seqlen_q, int seqlen_k, int heads_q,
                                           int heads_kv, int head_dim, int dtype, int causal, float softmax_scale,
                                           cudaStream_t stream) {
  if (!q || !k || !v || !o || !lse) return 1;
  if (batch < 1 || seqlen_q < 1 || seqlen_k < 1 || heads_q < 1 || heads_kv < 1 || heads_q % heads_kv) return 1;
  if (dtype != 0 && dtype != 1) return 1;
  if (head_dim != 64 && head_dim != 96 && head_dim != 128 && head_dim != 192 && head_dim != 256) return 2;
  // 16-byte copies (cp.async and TMA) need 16-byte aligned bases
  if (((uintptr_t)q | (uintptr_t)k | (uintptr_t)v | (uintptr_t)o) & 15) return 1;
  kseek::Args a{q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, dtype, causal ? 1 : 0,
                softmax_scale * 1.4426950408889634f, stream};
  static const bool sm90 = kseek::device_is_sm90();
  // Very short key sequences: the wgmma CTA's fixed cost (barriers, 384 threads, 128-row TMA boxes that are
  // mostly zero fill) outweighs its speed. Measured on the H200 (results/bench_small_shapes_v1_vs_v4.json):
  // Sk = 1: 18 us (mma) vs 44 us; 256x256 d64: 51/42 us vs 60/67 us; 1000x113 causal: 32 vs 38 us; but
  // 113x113 and 1000x113 without mask, and every longer shape, stay faster on wgmma.
  const bool tiny = seqlen_k <= 64 || (seqlen_k <= 256 && (causal || head_dim == 64));
  bool wg = sm90 && !tiny;
  if (variant == 1) wg = false;
  if (variant == 2 && !sm90) return 6;
  return dtype == 0 ? kseek::dispatch<__nv_bfloat16>(a, wg) : kseek::dispatch<__half>(a, wg);
}

extern "C" int kseek_attention_fwd(const void* q, const void* k, const void* v, void* o, float* lse, int batch,
                                   int seqlen_q, int seqlen_k, int heads_q, int heads_kv, int head_dim, int dtype,
                                   int causal, float softmax_scale, cudaStream_t stream) {
  return kseek_attention_fwd_variant(0, q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim,
                                     dtype, causal, softmax_scale, stream);
}
