// attention_fwd_sm90.cu: FlashAttention forward for Hopper (sm_90a), one file, CUDA toolkit headers only.
// v42 (2026-12-07, session 62, written without a GPU; lab only): v38 with KSEEK_EXP2_POLY (0 by default: then it is
// v38's code): in blocks without a mask, the first KSEEK_EXP2_POLY of every 8 exponentials of P run on the FP32
// pipe (a cubic for 2^f, |f| <= 1/2, and round(x) added into the exponent bits; relative error 1.0e-4, a twentieth
// of bf16's half ulp) instead of MUFU.EX2. Nsight Compute at d128 (B 2 x 8192, H100) put 20% of v36's stall samples
// on MUFU.EX2, mostly "wait", rising from ~160 a MUFU at the start of the softmax to ~800 at its end, where
// FlashAttention-3 has 13% on the same number of exponentials; moving their order (v40) and their timing between
// the warpgroups (v41) took none of it away. A MUFU.EX2 takes a sub-partition's quarter-rate pipe for 8 cycles a
// warp; the FP32 pipe does the cubic's 8 instructions at full rate. FlashAttention-4 does this on Blackwell.
// v38 (2026-12-06): v37 with its knobs set from its compare (H100, 90 bf16 harness shapes, one process: TINY_D64
// 0 with the 128-row tile lifted 256 x 256 x 2 heads from 154 to 213 TFLOP/s non-causal and 93 to 106 causal; the
// 128-row tile at Sq 512 and 1024 gained 4% and 11% causal but lost 7% and 5% non-causal). d64 with 64 < Sk <= 256
// runs on the wgmma kernels (KSEEK_TINY_D64 0), and takes the 128-row tile where the 192-row one pads the query rows
// by more than KSEEK_D64_PAD_PCT % (6) causal, KSEEK_D64_PAD_PCT_FULL % (25) non-causal: causal Sq 512 and 1024 and
// every Sq 256 switch.
// v37 (2026-12-06, written without a GPU; by default the same dispatch as v36): two knobs for the cells where
// cuDNN leads most (v36's H200 grid: 256 x 256 x 2 heads, d64, at 0.62x cuDNN non-causal and 0.73x causal).
// KSEEK_TINY_D64 (1: v36): 0 sends d64 with 64 < Sk <= 256 to the wgmma kernels instead of mma.sync; that rule
// dates from v4 (2026-11-30), before the persistent kernel served short non-causal tiles. KSEEK_D64_PAD_PCT
// (-1: v36, always the 192-row tile): d64 takes a 128-row tile of two consumer warpgroups (TILE 1, as d96's)
// where the 192-row tile would pad the query rows by more than this many % beyond it (Sq 256: 384 rows for 256).
// v36 (2026-12-06, written without a GPU): v34 with O stored through shared memory in the persistent kernel too
// (KSEEK_TMA_STORE_O_P, 1 by default; 0: v34), where the staging buffer fits (d 64 and 128: 24 and 32 KB more).
// Nsight Compute on an H100 at d128, 32 x 512 x 16 heads, non-causal (the persistent kernel): store_rows' 32
// 4-byte STG a thread were 2,097,152 excessive L2 sectors, half the kernel's 4.2 M, and 6% of the stall samples
// waited on them (stall_lg); FlashAttention-3 there stores by STSM and TMA, 0 excessive, in 136 us against our
// 157. The persistent kernel's Q buffer holds the next tile's Q by then, so O gets a buffer of its own after the
// K/V ring; each warpgroup's store is left in flight and drained (its reads of shared memory) only before the
// warpgroup's next tile writes the buffer again, and at the kernel's end. Both kernels now wait only until the
// stores have read shared memory (v34's one-tile kernel waited for their writes). KSEEK_PERSIST_SK is screened
// again with it: the persistent kernel overlaps a tile's start (Q's and the first K's loads: 3% of the one-tile
// kernel's stall samples at S 2048) with the last tile's end.
// v34 (2026-12-06; on an H100 180/180, 1.015x FA3 over 90): v33 with O stored through shared memory in the
// one-tile kernel without a split (KSEEK_TMA_STORE_O, 1 by default; 0: v33): each consumer warpgroup packs its
// normalized rows, writes them by stmatrix into its own rows of Q's buffer (free once its last S = Q K^T is done;
// the other warpgroups read only their own rows of it) and one thread stores them with TMA, a 64-column slab a
// copy. store_rows wrote 4 bytes a thread an instruction, 8 rows of O apart by Hq * D elements each: the GEMM's
// lab found the same pattern was most of its epilogue (lab/gemm_bias_gelu/README.md, session 49).
// v33 (2026-12-06): v32 with KSEEK_DECODE_MIN_ROWS 3 by default ("v32m3" on an H100:
// 180/180 through the harness, GQA decode x1.067 of v30 over the 24-cell decode grid, MHA decode left to the tiles).
// v32 (2026-12-06): v31's decode arithmetic fed by a TMA ring (a producer warp, KSEEK_DECODE_STAGES blocks of K and
// V in flight a CTA) instead of register loads; the lab's versions README has its design and its H100 figures.
// v31 (2026-12-06; on an H100 correct and x0.86 of v30 on decode: not a step): v30 with attn_decode_kernel, a
// CUDA-core kernel for a KV head with at most KSEEK_DECODE_ROWS query rows, whose key ranges merge in a cluster.
// v30 (2026-12-05; on an H100 GQA decode +27%, MHA decode unchanged): v29 with KSEEK_IDLE_WG: in the one-tile kernel
// without a split, a consumer warpgroup whose 64 query rows all lie past Sq does nothing, and the K and V slots'
// empty barriers count only the warpgroups with rows. The test of the kernel README's hypothesis on decode (Sq 1
// against Sk 4096 at 3.48 TB/s): the 128-row tile pays full products for 127 padded rows.
// v29: v28's split-KV with the key ranges merged inside the kernel: the ranges of a tile run as one
// thread block cluster and combine their O through distributed shared memory (split_merge), in fp32, with no
// workspace and no second launch; the split is a template parameter, so that the kernels that do not split
// compile as v27's did.
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
//    attn_wgmma_persistent_kernel runs the same loop with one CTA per SM taking tiles from a ticket counter,
//    so that one tile's loads overlap the previous tile's end; it serves short key sequences (see use_persistent).
//  * attn_mma_kernel (the portable fallback): FlashAttention-2 style, 4 warps x 16 rows, mma.sync
//    m16n8k16 with ldmatrix from padded shared memory filled by cp.async.
// and a third computes it on CUDA cores where a KV head has only a few query rows (decode):
//  * attn_decode_kernel: a CTA per (batch, KV head, key range), a producer warp filling a TMA ring of K and V
//    blocks, consumer key groups of D/8 lanes each with its own online softmax, the ranges of a KV head merged
//    in a cluster (see its comment).
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

#ifndef KSEEK_EXP2_POLY
#define KSEEK_EXP2_POLY 0  // v42: of every 8 exponentials of P in an unmasked block, this many on the FP32 pipe
#endif
// 2^x without MUFU, for finite x (unmasked blocks only: -inf gives 2^-125, not 0). x = k + f with k = round(x)
// (1.5 * 2^23 added: the sum's low mantissa bits hold k) and |f| <= 1/2; 2^f by a cubic fitted for relative
// error (1.0e-4 at most), then k added into the exponent bits. x below -125 is taken as -125 (2^-125 beside a
// row sum of at least 1: nothing), so the exponent never wraps; above, x <= kLazyTau + a rounding.
__device__ __forceinline__ float poly_exp2(float x) {
  constexpr float kRound = 12582912.f;  // 1.5 * 2^23
  x = fmaxf(x, -125.f);
  const float j = x + kRound;
  const float f = x - (j - kRound);
  const float p = fmaf(fmaf(fmaf(0.05500894f, f, 0.24221098f), f, 0.6932829f), f, 1.f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(j) << 23));
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

// ---- thread block clusters (sm_90): the split-KV merge (split_merge)
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// Every thread of every CTA in the cluster arrives, then waits for all: the shared-memory writes before it (release)
// are visible to the reads after it in any CTA of the cluster (acquire).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// The address of the same shared-memory byte in the cluster's CTA `rank`, for ld.shared::cluster.
__device__ __forceinline__ uint32_t cluster_map(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ float ld_cluster_f32(uint32_t addr) {
  float x;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(x) : "r"(addr) : "memory");
  return x;
}
__device__ __forceinline__ float4 ld_cluster_f32x4(uint32_t addr) {
  float4 x;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(x.x), "=f"(x.y), "=f"(x.z), "=f"(x.w) : "r"(addr) : "memory");
  return x;
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
// The TMA store of one staged [rows][64] slab of O (4-d: d column, head, row, batch; nothing is written past the
// tensor's rows), its bulk group, and the wait until the stores have read their shared memory
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// until this thread's bulk stores have read their shared memory (the writes to global memory may still be on the way)
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// this thread's shared-memory writes made visible to the async proxy (the TMA store that reads them)
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// four 8 x 8 matrices of 16-bit values: lane l gives row l % 8 of matrix l / 8 its address; register i holds, as
// the mma fragment does, row lane / 4 of matrix i, columns 2 (lane % 4) and + 1 (the lower half the first)
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
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

__device__ __forceinline__ void wgmma_ss_n80_bf16(float (&d)[40], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}, %40, %41, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n96_bf16(float (&d)[48], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n112_bf16(float (&d)[56], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %58, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n112k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55}, %56, %57, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
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

__device__ __forceinline__ void wgmma_rs_n32_bf16(float (&d)[16], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n64_bf16(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n96_bf16(float (&d)[48], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, {%48, %49, %50, %51}, %52, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
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

__device__ __forceinline__ void wgmma_rsk_n128_bf16(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n64_f16(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n80_f16(float (&d)[40], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n80k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}, %40, %41, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n96_f16(float (&d)[48], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n112_f16(float (&d)[56], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %58, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n112k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55}, %56, %57, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
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

__device__ __forceinline__ void wgmma_rs_n32_f16(float (&d)[16], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n64_f16(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n96_f16(float (&d)[48], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, {%48, %49, %50, %51}, %52, p, 1, 1, 1;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
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

__device__ __forceinline__ void wgmma_rsk_n128_f16(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

// ---- GENERATED END

template <int N, typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int accumulate) {
  constexpr bool bf = std::is_same<T, __nv_bfloat16>::value;
  if constexpr (N == 64) { if constexpr (bf) wgmma_ss_n64_bf16(d, da, db, accumulate); else wgmma_ss_n64_f16(d, da, db, accumulate); }
  if constexpr (N == 80) { if constexpr (bf) wgmma_ss_n80_bf16(d, da, db, accumulate); else wgmma_ss_n80_f16(d, da, db, accumulate); }
  if constexpr (N == 96) { if constexpr (bf) wgmma_ss_n96_bf16(d, da, db, accumulate); else wgmma_ss_n96_f16(d, da, db, accumulate); }
  if constexpr (N == 112) { if constexpr (bf) wgmma_ss_n112_bf16(d, da, db, accumulate); else wgmma_ss_n112_f16(d, da, db, accumulate); }
  if constexpr (N == 128) { if constexpr (bf) wgmma_ss_n128_bf16(d, da, db, accumulate); else wgmma_ss_n128_f16(d, da, db, accumulate); }
  if constexpr (N == 176) { if constexpr (bf) wgmma_ss_n176_bf16(d, da, db, accumulate); else wgmma_ss_n176_f16(d, da, db, accumulate); }
  if constexpr (N == 192) { if constexpr (bf) wgmma_ss_n192_bf16(d, da, db, accumulate); else wgmma_ss_n192_f16(d, da, db, accumulate); }
}
template <int N, typename T>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  constexpr bool bf = std::is_same<T, __nv_bfloat16>::value;
  if constexpr (N == 32) { if constexpr (bf) wgmma_rs_n32_bf16(d, a, db, accumulate); else wgmma_rs_n32_f16(d, a, db, accumulate); }
  if constexpr (N == 64) { if constexpr (bf) wgmma_rs_n64_bf16(d, a, db, accumulate); else wgmma_rs_n64_f16(d, a, db, accumulate); }
  if constexpr (N == 96) { if constexpr (bf) wgmma_rs_n96_bf16(d, a, db, accumulate); else wgmma_rs_n96_f16(d, a, db, accumulate); }
  if constexpr (N == 128) { if constexpr (bf) wgmma_rs_n128_bf16(d, a, db, accumulate); else wgmma_rs_n128_f16(d, a, db, accumulate); }
  if constexpr (N == 192) { if constexpr (bf) wgmma_rs_n192_bf16(d, a, db, accumulate); else wgmma_rs_n192_f16(d, a, db, accumulate); }
  if constexpr (N == 256) { if constexpr (bf) wgmma_rs_n256_bf16(d, a, db, accumulate); else wgmma_rs_n256_f16(d, a, db, accumulate); }
}
// O += P V for one 16-key step, over the PVN columns of O that hold the head dim (PVN = DP but at d96, where
// KSEEK_PV96 keeps O at 96 columns instead of the 128 of its padded tile): one wgmma of N = PVN, whose B operand
// reads only the first half of V's second 64-column slab (a partial 128-byte swizzle atom: correct on the H200,
// bench.py check 56/56), or with KSEEK_PV96 = 2, N = 64 on V's first slab and N = 32 on the next. Both halves'
// accumulators lie in oacc in the order of a single N = 96 accumulator (4 floats per 8 columns).
// Measured (compare, H200, 2026-12-02, 6 bf16 d96 shapes): N = 96 x1.047 vs v15, 64 + 32 x0.960; 0 = v15's code.
#ifndef KSEEK_PV96
#define KSEEK_PV96 1
#endif
template <int PVN, int BN, typename T>
__device__ __forceinline__ void wgmma_pv(float (&oacc)[PVN / 2], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (PVN == 96 && KSEEK_PV96 == 2) {
    wgmma_rs<64, T>(reinterpret_cast<float(&)[32]>(oacc[0]), a, db, 1);
    wgmma_rs<32, T>(reinterpret_cast<float(&)[16]>(oacc[32]), a, db + (BN * 128) / 16, 1);
  } else {
    wgmma_rs<PVN, T>(oacc, a, db, 1);
  }
}
// A from registers, B K-major: S = Q K^T with Q held in registers
template <int N, typename T>
__device__ __forceinline__ void wgmma_rsk(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  constexpr bool bf = std::is_same<T, __nv_bfloat16>::value;
  static_assert(N == 128, "generate wgmma_rsk_n<N> with tools/gen_wgmma.py");
  if constexpr (bf) wgmma_rsk_n128_bf16(d, a, db, accumulate); else wgmma_rsk_n128_f16(d, a, db, accumulate);
}

constexpr float kLn2 = 0.69314718055994530942f;

// ------------------------------------------------------------------------------------------------
// Online softmax, shared by both kernels. A thread holds 2 rows (r = 0: lane/4, r = 1: lane/4 + 8) of a
// 16-row slab, NJ chunks of 8 columns each: s[j*4 + e], row e>>1, column 8j + 2(lane%4) + (e&1).
// softmax_scores turns raw scores into P = 2^(s*scale_log2 - m) (one FFMA + one MUFU per element), updates
// the running max m and the per-thread partial sum l, and returns alpha = 2^(m_old - m_new), which the
// caller applies to O when O is not being written by a wgmma in flight.
// ------------------------------------------------------------------------------------------------
// MASK is a template parameter so that the blocks that need no mask (all but the last one or two of a row of
// blocks) run a straight-line max: with a run-time flag, ptxas put a branch around the mask of every 8-column
// chunk, 32 taken branches and a wasted FMNMX per block in the unmasked loop (SASS of v11, d128).
// Keeps the softmax of block it ahead of wgmma.wait_group 0. ptxas, not the source order, decides where the wait
// lands: with nothing tying them, it put most of the exp2s after the wait (v13's SASS: 13 of 66 exp2s before it at
// d128, none in the persistent kernel), so the softmax waited for O += P V instead of overlapping it.
// A shared-memory store of the row sums (which depend on every exp2 of the block) just before the wait keeps them
// all ahead of it. That pays at d256 only (compare, H200, 2026-12-02: d256 x1.020, d128 x0.977, d64 x0.986, d96/192
// x0.992; the persistent kernel at d <= 192 the same with or without it): KSEEK_FENCE_DIMS is a mask of head dims,
// 1 = 64, 2 = 96, 4 = 128, 8 = 192, 16 = 256.
#ifndef KSEEK_FENCE_DIMS
#define KSEEK_FENCE_DIMS 16
#endif
template <int D> __host__ __device__ constexpr bool fence_softmax() {
  return (KSEEK_FENCE_DIMS >> (D == 64 ? 0 : D == 96 ? 1 : D == 128 ? 2 : D == 192 ? 3 : 4)) & 1;
}
template <int D> __device__ __forceinline__ void softmax_done(const float (&l)[2], uint32_t my_word) {
  if constexpr (fence_softmax<D>())  // each thread its own word: no two threads write one address
    asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(my_word), "f"(l[0] + l[1]) : "memory");
}

// LAZY: alpha is exactly 1 for a row whose maximum did not move, and a warp none of whose 16 rows moved skips O's
// rescale (multiplying by 1): the results are bit for bit those without it. With random scores a row's maximum
// moves in block j with probability 1/j, so a warp skips about half the blocks of a 4096-key row and four in five
// of a 16384-key row at d256 (64-key blocks). KSEEK_LAZY_TAU > 0 (log2 units; FlashAttention-4 takes 8) moves the
// maximum only when a block's passes it by more than that: P <= 2^TAU and almost no block rescales, but a row's
// largest P is no longer exactly 1, so bf16's rounding of it shows in O: in a float model of one 128-query,
// 8192-key d128 row of blocks, 1.2x the error of TAU = 0 with unit-variance inputs, but 2x to 4x where queries
// scaled 3x to 10x make a few keys dominate.
#ifndef KSEEK_LAZY_TAU
#define KSEEK_LAZY_TAU 8.f
#endif
constexpr float kLazyTau = KSEEK_LAZY_TAU;
template <int NJ, bool MASK, bool LAZY = false>
__device__ __forceinline__ void softmax_scores(float (&s)[NJ * 4], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                               float scale_log2, int row0, int col0, int Sk, int causal, int diag) {
  if constexpr (MASK) {
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = col0 + j * 8 + (e & 1);
        const int row = row0 + (e >> 1) * 8;
        if (col >= Sk || (causal && col > row + diag)) s[j * 4 + e] = -INFINITY;
      }
    }
  }
  // The two columns of a chunk are maxed together first, which halves the dependent chain per row without
  // the extra registers of independent partial maxima (those cost 1.1%: versions/README.md, v10).
  float mx[2] = {fmaxf(s[0], s[1]), fmaxf(s[2], s[3])};
#pragma unroll
  for (int j = 1; j < NJ; ++j) {
    mx[0] = fmaxf(mx[0], fmaxf(s[j * 4 + 0], s[j * 4 + 1]));
    mx[1] = fmaxf(mx[1], fmaxf(s[j * 4 + 2], s[j * 4 + 3]));
  }
  float neg_m[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float m_blk = quad_max(mx[r]) * scale_log2;
    const float m_new = LAZY ? (m_blk > m[r] + kLazyTau ? m_blk : m[r]) : fmaxf(m[r], m_blk);
    const float m_use = (m_new == -INFINITY) ? 0.f : m_new;  // a row with nothing visible yet keeps P = 0
    alpha[r] = (LAZY && m_new == m[r]) ? 1.f : fast_exp2(m[r] - m_use);
    m[r] = m_new;
    l[r] *= alpha[r];
    neg_m[r] = -m_use;
  }
#pragma unroll
  for (int j = 0; j < NJ; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float x = fmaf(s[j * 4 + e], scale_log2, neg_m[e >> 1]);
      const float p = (!MASK && (j * 4 + e) % 8 < KSEEK_EXP2_POLY) ? poly_exp2(x) : fast_exp2(x);
      s[j * 4 + e] = p;
      l[e >> 1] += p;
    }
  }
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
  if (need_mask)
    softmax_scores<NJ, true>(s, m, l, alpha, scale_log2, row0, col0, Sk, causal, diag);
  else
    softmax_scores<NJ, false>(s, m, l, alpha, scale_log2, row0, col0, Sk, causal, diag);
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

// KSEEK_TMA_STORE_O: store_rows' work through shared memory. The warpgroup's 64 rows of O, normalized and packed,
// go by stmatrix into its rows of Q's buffer (`slabs`: slab c of 64 columns at slabs + c * BM * 128, this
// warpgroup's rows from `row_base`, 128 bytes a row, swizzled as the TMA box wants: 16-byte chunk k of row r at
// chunk k ^ (r % 8), so the 8 rows of each 8 x 8 matrix fall in 8 different chunks), then its first thread stores
// the D / 64 slabs with TMA (rows past Sq are not written) and waits for them. The LSE as store_rows writes it.
// The barrier `bar_id` (128 threads) is the warpgroup's own.
// REUSE (the persistent kernel's own O buffer, written again by the warpgroup's next tile): the stores are left in
// flight; before writing the slabs, the thread that issued the last tile's waits until they have read them, and the
// barrier passes that on to the warpgroup; before the kernel exits it waits for the last ones' reads too.
// Either way the wait is for the reads of shared memory only (wait_group.read), not the writes to O: v34 waited
// for those (wait_group 0), and Nsight Compute on an H100 (d128, S 2048) put 1.3% of the one-tile kernel's stall
// samples on the cache invalidation (CCTL.IVALL) that follows that wait, each CTA holding its SM until then.
template <int NO, typename T, int BM, bool REUSE = false>
__device__ __forceinline__ void store_o_tma(const float (&o)[NO * 4], const float (&m)[2], float (&l)[2],
                                            const CUtensorMap* tm_o, uint32_t slabs, int row_base, float* lse_ptr,
                                            int row0, int Sq, int D, int h, int m_first, int b, int wi, int lane,
                                            int bar_id) {
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float lsum = quad_sum(l[r]);
    const int row = row0 + r * 8;
    inv[r] = lsum > 0.f ? 1.f / lsum : 0.f;
    if (row < Sq && (lane & 3) == 0) lse_ptr[row] = lsum > 0.f ? (m[r] + log2f(lsum)) * kLn2 : -INFINITY;
  }
  if constexpr (REUSE) {
    if (wi == 0 && lane == 0) bulk_wait_read();
    asm volatile("bar.sync %0, 128;\n" ::"r"(bar_id) : "memory");
  }
  const int i = lane >> 3, rr = lane & 7;  // the matrix of an x4 whose row rr this lane addresses
  const uint32_t row_addr = slabs + (uint32_t)(row_base + 16 * wi + 8 * (i & 1) + rr) * 128;  // row % 8 == rr
#pragma unroll
  for (int j2 = 0; j2 < NO / 2; ++j2) {  // column groups 2 j2 and 2 j2 + 1 (8 columns each) of O
    if (j2 * 16 < D) {
      const int j = 2 * j2, slab = j / 8, chunk = (j % 8) + (i >> 1);
      stmatrix_x4(row_addr + slab * BM * 128 + ((chunk ^ rr) << 4), pack2<T>(o[j * 4] * inv[0], o[j * 4 + 1] * inv[0]),
                  pack2<T>(o[j * 4 + 2] * inv[1], o[j * 4 + 3] * inv[1]),
                  pack2<T>(o[j * 4 + 4] * inv[0], o[j * 4 + 5] * inv[0]),
                  pack2<T>(o[j * 4 + 6] * inv[1], o[j * 4 + 7] * inv[1]));
    }
  }
  fence_proxy_async();  // each thread's writes, before the barrier that lets the first thread's stores read them
  asm volatile("bar.sync %0, 128;\n" ::"r"(bar_id) : "memory");
  if (wi == 0 && lane == 0) {
    for (int c = 0; c < D / 64; ++c) tma_store_4d(tm_o, slabs + c * BM * 128 + row_base * 128, c * 64, h, m_first, b);
    bulk_commit();
    if constexpr (!REUSE) bulk_wait_read();  // the CTA's shared memory stays until the stores have read it
  }
}

// Split-KV's merge (v29). The `splits` CTAs of a tile are one cluster, rank r over key range r. Each first leaves
// its range's O (normalized by its own row sums, in fp32) and the rows' LSE (log2 domain) in its own shared
// memory, over Q and the K/V stages (split_stage); then each merges the rows rl = r, r + splits, ... of the tile
// from every CTA's copy, reading them through distributed shared memory (split_merge):
//   O = sum_i w_i O_i / sum_i w_i,  w_i = 2^(lse_i - max_i lse_i),  LSE = (max lse + log2 sum w) ln 2,
// over the ranges that saw a key (lse_i = -inf gives w_i = 0). One warp per row, lane c owning columns 4c..4c+3.
template <int PVN> struct SplitPart {
  static constexpr int LDP = PVN + 8;  // floats a row: 8 more than PVN keeps a quad's float2 stores conflict-free
  static constexpr __host__ __device__ int bytes(int BM) { return BM * LDP * 4 + BM * 4; }
};
template <int NO, int PVN>
__device__ __forceinline__ void split_stage(const float (&o)[NO * 4], const float (&m)[2], const float (&l)[2],
                                            float* part, float* part_lse, int BM, int row_local, int lane) {
  constexpr int LDP = SplitPart<PVN>::LDP;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float lsum = quad_sum(l[r]);
    const float inv = lsum > 0.f ? 1.f / lsum : 0.f;
    const int rl = row_local + r * 8;
    float* dst = part + rl * LDP + 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < NO; ++j)
      *reinterpret_cast<float2*>(dst + j * 8) = make_float2(o[j * 4 + 2 * r] * inv, o[j * 4 + 2 * r + 1] * inv);
    if ((lane & 3) == 0) part_lse[rl] = lsum > 0.f ? m[r] + log2f(lsum) : -INFINITY;
  }
}
template <int PVN, typename T>
__device__ __forceinline__ void split_merge(uint32_t part, uint32_t part_lse, T* o_ptr, float* lse_ptr, int BM,
                                            int m0, int Sq, int Hq, int D, int splits, int rank, int warp,
                                            int nwarps, int lane) {
  constexpr int LDP = SplitPart<PVN>::LDP, CPL = (PVN + 127) / 128;  // float4 columns a lane
  for (int rl = rank + splits * warp; rl < BM && m0 + rl < Sq; rl += splits * nwarps) {
    float ls[8], mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      ls[i] = i < splits ? ld_cluster_f32(cluster_map(part_lse + 4 * rl, i)) : -INFINITY;
      mx = fmaxf(mx, ls[i]);
    }
    float4 acc[CPL];
#pragma unroll
    for (int c = 0; c < CPL; ++c) acc[c] = make_float4(0.f, 0.f, 0.f, 0.f);
    float wsum = 0.f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        if (i >= splits || ls[i] == -INFINITY) continue;
        const float w = exp2f(ls[i] - mx);
        wsum += w;
        const uint32_t src = cluster_map(part + 4 * rl * LDP, i);
#pragma unroll
        for (int c = 0; c < CPL; ++c) {
          const int col = 4 * lane + 128 * c;
          if (col < PVN) {
            const float4 x = ld_cluster_f32x4(src + 4 * col);
            acc[c].x += w * x.x, acc[c].y += w * x.y, acc[c].z += w * x.z, acc[c].w += w * x.w;
          }
        }
      }
    }
    const float inv = wsum > 0.f ? 1.f / wsum : 0.f;
    T* dst = o_ptr + (size_t)(m0 + rl) * Hq * D;
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      const int col = 4 * lane + 128 * c;
      if (col < D)
        *reinterpret_cast<uint2*>(dst + col) =
            make_uint2(pack2<T>(acc[c].x * inv, acc[c].y * inv), pack2<T>(acc[c].z * inv, acc[c].w * inv));
    }
    if (lane == 0) lse_ptr[m0 + rl] = wsum > 0.f ? (mx + log2f(wsum)) * kLn2 : -INFINITY;
  }
}

// ------------------------------------------------------------------------------------------------
// Decode (v32): few query rows against many keys (Sq x Hq/Hkv <= KSEEK_DECODE_ROWS rows a KV head: Sq 1 with MHA
// or GQA, a few draft tokens). v31 computed this on CUDA cores from register loads and lost to the tiles
// everywhere (H100: x0.86): its loads kept ~4 KB a warp in flight, where the tiles' TMA ring keeps tens of KB a
// CTA. v32 keeps v31's arithmetic and feeds it the tiles' way: a producer warp brings K and V blocks of
// 4096 / D keys (8 KB each) by TMA into a ring of KSEEK_DECODE_STAGES stages, completing full barriers that
// the four consumer warps wait on, each warp freeing a stage (its empty barrier) once it has read it.
// A CTA takes one (batch, KV head) and one key range; the ranges of a KV head are one thread block cluster and
// merge their rows through distributed shared memory at the end (as split_merge does). The consumer warps split
// into key groups of D/8 lanes: each lane holds 8 columns of every row's q, reads 16 bytes of K and of V a key
// from the stage, and each group runs its own online softmax over its 4 keys of every block, so no barrier of the
// CTA sits in the key loop; the groups' (m, l, O) merge in shared memory at the end. A score is reduced over its
// group's lanes by shuffles. At R rows a key costs 2R FMA a byte of K and V (4 rows at 4.8 TB/s: 19 TFLOP/s).
// ------------------------------------------------------------------------------------------------
#ifndef KSEEK_DECODE
#define KSEEK_DECODE 1
#endif
#ifndef KSEEK_DECODE_ROWS
#define KSEEK_DECODE_ROWS 4  // the most query rows a KV head (Sq x Hq / Hkv) the decode kernel takes (4 or 8)
#endif
#ifndef KSEEK_DECODE_MIN_ROWS
#define KSEEK_DECODE_MIN_ROWS 3  // the fewest (H100, 2026-12-06: 1-2 rows ran 2-8% slower than the tiles, 4 rows 22-42% faster)
#endif
#ifndef KSEEK_DECODE_MIN_SK
#define KSEEK_DECODE_MIN_SK 512  // the fewest keys it takes
#endif
#ifndef KSEEK_DECODE_STAGES
#define KSEEK_DECODE_STAGES 6  // K + V blocks in the ring, 16 KB each
#endif
// The ring at 8 rows a KV head, where 231 registers a thread leave one CTA an SM: 10 stages would hold the bytes
// in flight of two 6-stage CTAs (160 KB, beside the kernel's 41 KB of static shared memory at 8 rows).
#ifndef KSEEK_DECODE_STAGES_WIDE
#define KSEEK_DECODE_STAGES_WIDE 6
#endif
#ifndef KSEEK_DECODE_CTAS_PER_SM
#define KSEEK_DECODE_CTAS_PER_SM 4  // the key split aims at no more than this many CTAs an SM
#endif
constexpr int kDecThreads = 128;               // the consumer warps'
constexpr int kDecAll = kDecThreads + 32;      // and the producer warp

template <typename T> __device__ __forceinline__ void unpack8(const uint4& u, float (&f)[8]) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same<T, __nv_bfloat16>::value) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    } else {
      const float2 x = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
      f[2 * i] = x.x;
      f[2 * i + 1] = x.y;
    }
  }
}
template <typename T> __device__ __forceinline__ T from_float(float x) {
  if constexpr (std::is_same<T, __nv_bfloat16>::value) return __float2bfloat16_rn(x);
  else return __float2half_rn(x);
}

template <int D, int RM = 4> struct DecShape {
  static constexpr int LPK = D / 8;                    // lanes a key
  static constexpr int KPW = 32 / LPK;                 // keys a warp takes at once
  static constexpr int NG = kDecThreads / 32 * KPW;    // key groups a CTA
  static constexpr int NK = 4096 / D;                  // keys a block (a stage holds a K and a V block)
  static constexpr int U = NK / NG;                    // keys a group takes of a block (4)
  static constexpr int BLOCK_BYTES = NK * D * 2;       // 8 KB
  static constexpr int ST = RM > 4 ? KSEEK_DECODE_STAGES_WIDE : KSEEK_DECODE_STAGES;
  static constexpr int SMEM = 2 * ST * BLOCK_BYTES + 2 * ST * 8;  // the ring, then full[ST], empty[ST]
};

// One block of the ring: each group's U keys (kl + warp KPW + u NG of the block), scored against every row,
// then the group's online softmax and O. `j0` is the block's first key; a key past the range's end or a row's
// causal diagonal scores -inf.
template <int D, typename T, int RM>
__device__ __forceinline__ void decode_block(const unsigned char* sk, const unsigned char* sv, int j0, int k1,
                                             int key0, int c, const float (&qf)[RM][8], const int (&last)[RM],
                                             float (&m)[RM], float (&l)[RM], float (&acc)[RM][8]) {
  using S = DecShape<D>;
  float s[S::U][RM];
#pragma unroll
  for (int u = 0; u < S::U; ++u) {
    float kf[8];
    unpack8<T>(*reinterpret_cast<const uint4*>(sk + ((key0 + u * S::NG) * D + 8 * c) * 2), kf);
#pragma unroll
    for (int r = 0; r < RM; ++r) {
      float x = 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e) x = fmaf(qf[r][e], kf[e], x);
      s[u][r] = x;
    }
  }
#pragma unroll
  for (int off = S::LPK / 2; off >= 1; off >>= 1)
#pragma unroll
    for (int u = 0; u < S::U; ++u)
#pragma unroll
      for (int r = 0; r < RM; ++r) s[u][r] += __shfl_xor_sync(0xffffffffu, s[u][r], off);
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    float mx = m[r];
#pragma unroll
    for (int u = 0; u < S::U; ++u) {
      const int j = j0 + key0 + u * S::NG;
      if (j >= k1 || j > last[r]) s[u][r] = -INFINITY;
      mx = fmaxf(mx, s[u][r]);
    }
    const float base = mx == -INFINITY ? 0.f : mx;  // no key yet: every p is 0 and acc stays 0
    const float alpha = fast_exp2(m[r] - base);
    m[r] = mx;
    float ps = 0.f;
#pragma unroll
    for (int u = 0; u < S::U; ++u) {
      s[u][r] = fast_exp2(s[u][r] - base);
      ps += s[u][r];
    }
    l[r] = l[r] * alpha + ps;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[r][e] *= alpha;
  }
#pragma unroll
  for (int u = 0; u < S::U; ++u) {
    float vf[8];
    unpack8<T>(*reinterpret_cast<const uint4*>(sv + ((key0 + u * S::NG) * D + 8 * c) * 2), vf);
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] = fmaf(s[u][r], vf[e], acc[r][e]);
  }
}

// The merge of several (m, l, O) states of one row in the log2 domain: weights 2^(m_i - max m), a state with
// m_i = -inf (no key) weighing 0.
struct RowMerge {
  float mx = -INFINITY, sum = 0.f;
};

// grid (splits, Hkv, B), kDecAll threads: warps 0-3 consume, warp 4 produces; with SPLIT the `splits` CTAs of a
// KV head are one cluster along x. tmK, tmV: [B, Sk, Hkv, D] with boxes of D columns x NK keys, no swizzle.
template <int D, typename T, int RM, bool SPLIT>
__global__ void __launch_bounds__(kDecAll) attn_decode_kernel(const __grid_constant__ CUtensorMap tmK,
                                                              const __grid_constant__ CUtensorMap tmV,
                                                              const T* __restrict__ q, T* __restrict__ o,
                                                              float* __restrict__ lse, int Sq, int Sk, int Hq,
                                                              int Hkv, int causal, float scale_log2,
                                                              int split_keys) {
  using S = DecShape<D, RM>;
  extern __shared__ __align__(128) unsigned char dec_smem[];
  __shared__ float g_m[S::NG][RM], g_l[S::NG][RM];
  __shared__ __align__(16) float g_o[S::NG][RM][D];
  __shared__ __align__(16) float c_o[SPLIT ? RM : 1][SPLIT ? D : 4];  // this CTA's rows, normalized, for the cluster
  __shared__ float c_lse[RM];                                          // and their LSE (log2 domain)
  const int split = SPLIT ? blockIdx.x : 0, hk = blockIdx.y, b = blockIdx.z;
  const int G = Hq / Hkv, R = Sq * G;  // row r = i * G + g: query position i, query head hk * G + g
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int k0 = split * split_keys, k1 = min(Sk, k0 + split_keys);
  const int nblocks = (k1 - k0 + S::NK - 1) / S::NK;
  const uint32_t ring = smem_u32(dec_smem), bars = ring + 2 * S::ST * S::BLOCK_BYTES;
  auto full = [&](int s) { return bars + 8 * s; };
  auto empty = [&](int s) { return bars + 8 * (S::ST + s); };
  if (tid == 0) {
    for (int s = 0; s < S::ST; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), kDecThreads / 32);  // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp == kDecThreads / 32) {  // the producer warp: one lane issues every copy
    if (lane == 0)
      for (int it = 0; it < nblocks; ++it) {
        const int s = it % S::ST;
        mbar_wait(empty(s), ((it / S::ST) & 1) ^ 1);  // a fresh barrier passes parity 1 at once
        mbar_expect_tx(full(s), 2 * S::BLOCK_BYTES);
        tma_load_4d(ring + s * S::BLOCK_BYTES, &tmK, full(s), 0, hk, k0 + it * S::NK, b);
        tma_load_4d(ring + (S::ST + s) * S::BLOCK_BYTES, &tmV, full(s), 0, hk, k0 + it * S::NK, b);
      }
  } else {
    const int c = lane % S::LPK, grp = tid / S::LPK, key0 = warp * S::KPW + lane / S::LPK;
    float qf[RM][8], m[RM], l[RM], acc[RM][8];
    int last[RM];
#pragma unroll
    for (int r = 0; r < RM; ++r) {
      const int i = r / G, h = hk * G + r % G;
      last[r] = causal ? i + Sk - Sq : Sk - 1;
      if (r < R) {
        unpack8<T>(*reinterpret_cast<const uint4*>(q + (((size_t)b * Sq + i) * Hq + h) * D + 8 * c), qf[r]);
#pragma unroll
        for (int e = 0; e < 8; ++e) qf[r][e] *= scale_log2;
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) qf[r][e] = 0.f;
      }
      m[r] = -INFINITY, l[r] = 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] = 0.f;
    }
    for (int it = 0; it < nblocks; ++it) {
      const int s = it % S::ST;
      mbar_wait(full(s), (it / S::ST) & 1);
      decode_block<D, T, RM>(dec_smem + s * S::BLOCK_BYTES, dec_smem + (S::ST + s) * S::BLOCK_BYTES,
                             k0 + it * S::NK, k1, key0, c, qf, last, m, l, acc);
      __syncwarp();
      if (lane == 0) mbar_arrive(empty(s));
    }
#pragma unroll
    for (int r = 0; r < RM; ++r) {
      *reinterpret_cast<float4*>(&g_o[grp][r][8 * c]) = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
      *reinterpret_cast<float4*>(&g_o[grp][r][8 * c + 4]) = make_float4(acc[r][4], acc[r][5], acc[r][6], acc[r][7]);
      if (c == 0) g_m[grp][r] = m[r], g_l[grp][r] = l[r];
    }
  }
  __syncthreads();
  for (int idx = tid; tid < kDecThreads && idx < R * D; idx += kDecThreads) {  // the CTA's groups, merged
    const int r = idx / D, d = idx % D, i = r / G, h = hk * G + r % G;
    RowMerge w;
    for (int g = 0; g < S::NG; ++g) w.mx = fmaxf(w.mx, g_m[g][r]);
    float out = 0.f;
    if (w.mx != -INFINITY)
      for (int g = 0; g < S::NG; ++g) {
        const float wg = fast_exp2(g_m[g][r] - w.mx);
        w.sum += wg * g_l[g][r];
        out += wg * g_o[g][r][d];
      }
    out = w.sum > 0.f ? out / w.sum : 0.f;
    const float lse2 = w.sum > 0.f ? w.mx + log2f(w.sum) : -INFINITY;
    if constexpr (SPLIT) {
      c_o[r][d] = out;
      if (d == 0) c_lse[r] = lse2;
    } else {
      o[(((size_t)b * Sq + i) * Hq + h) * D + d] = from_float<T>(out);
      if (d == 0) lse[((size_t)b * Hq + h) * Sq + i] = lse2 == -INFINITY ? -INFINITY : lse2 * kLn2;
    }
  }
  if constexpr (SPLIT) {  // the cluster's ranges, merged: CTA `rank` takes the rows' columns rank*128 + tid, ...
    cluster_sync();
    const int splits = gridDim.x, rank = (int)cluster_rank();
    for (int idx = rank * kDecThreads + tid; tid < kDecThreads && idx < R * D; idx += splits * kDecThreads) {
      const int r = idx / D, d = idx % D, i = r / G, h = hk * G + r % G;
      const uint32_t lse_at = smem_u32(&c_lse[r]), o_at = smem_u32(&c_o[r][d]);
      RowMerge w;
      for (int x = 0; x < splits; ++x) w.mx = fmaxf(w.mx, ld_cluster_f32(cluster_map(lse_at, x)));
      float out = 0.f;
      if (w.mx != -INFINITY)
        for (int x = 0; x < splits; ++x) {
          const float wx = fast_exp2(ld_cluster_f32(cluster_map(lse_at, x)) - w.mx);
          w.sum += wx;
          out += wx * ld_cluster_f32(cluster_map(o_at, x));
        }
      out = w.sum > 0.f ? out / w.sum : 0.f;
      o[(((size_t)b * Sq + i) * Hq + h) * D + d] = from_float<T>(out);
      if (d == 0) lse[((size_t)b * Hq + h) * Sq + i] = w.sum > 0.f ? (w.mx + log2f(w.sum)) * kLn2 : -INFINITY;
    }
    cluster_sync();  // no CTA leaves while another still reads its shared memory
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
//   D 64: 192x128, D 96: 192x96 or 128x128 (see WgCfg<96>; 96 columns padded to 128 in shared memory by TMA's
//   zero fill, O and P V over 96 columns, see wgmma_pv), D 128: 128x128, D 192: 128x96, D 256: 128x64. Shared memory holds Q [NCH][128][64] and K, V [ST][NCH][BN][64],
//   each [rows][64] slab one TMA box with the 128-byte swizzle that wgmma reads directly.
// ------------------------------------------------------------------------------------------------
// KSEEK_LAZY_RESCALE: a mask of head dims (1 = 64, 2 = 96, 4 = 128, 8 = 192, 16 = 256) whose wgmma kernels skip
// O's rescale in a warp whose rows all kept their maxima (softmax_scores' LAZY).
#ifndef KSEEK_LAZY_RESCALE
#define KSEEK_LAZY_RESCALE 0x1c
#endif
// KSEEK_WG_SKIP: the same mask of head dims, whose one-tile kernel lets each consumer warpgroup stop at its own
// last causal block. Not d192: there the one-tile kernel was 5% slower with it on long rows even without a mask
// (harness, H200, 2026-12-02: v25 against v23), though a non-causal launch never takes the branch.
#ifndef KSEEK_WG_SKIP
#define KSEEK_WG_SKIP 0x17
#endif
// KSEEK_IDLE_WG (v30): in the one-tile kernel without a split, a consumer warpgroup whose 64 rows all lie past Sq
// does nothing at all: the K and V slots' empty barriers count the arrivals of the warpgroups that have rows only.
// At Sq 1 (decode) that is the second of two warpgroups (two of three in the 192-row tiles), which otherwise ran
// every product of every key block on rows no one reads; so too the last tile's second at Sq 3001 (23 x 128 + 57).
#ifndef KSEEK_TMA_STORE_O_P
#define KSEEK_TMA_STORE_O_P 1  // 1: the persistent kernel stores O through its own shared-memory buffer and TMA
#endif
#ifndef KSEEK_TMA_STORE_O
#define KSEEK_TMA_STORE_O 1  // 1: the one-tile kernel without a split stores O through shared memory and TMA
#endif
#ifndef KSEEK_IDLE_WG
#define KSEEK_IDLE_WG 1
#endif
// A head dim's tile: NCW consumer warpgroups of 64 rows, BN keys a block, ST stages; REG = the consumers'
// setmaxnreg budget. TILE picks one of a head dim's tiles (only d96 has two); the host picks it per shape.
template <int D, int TILE> struct WgCfg;
// d64, TILE 0: three consumer warpgroups (192-row tiles); TILE 1: two (128 rows, KSEEK_D64_PAD_PCT).
template <int TILE> struct WgCfg<64, TILE> {
  static constexpr int BN = 128, ST = 3, NCW = TILE == 0 ? 3 : 2, REG = NCW == 3 ? 160 : 240;
};
#ifndef KSEEK_D64_PAD_PCT
#define KSEEK_D64_PAD_PCT 6  // causal d64's 192-row tile while it pads the query rows by at most this many % more; -1: always
#endif
#ifndef KSEEK_D64_PAD_PCT_FULL
#define KSEEK_D64_PAD_PCT_FULL 25  // the same for non-causal d64 (the persistent kernel's 192-row tiles lead there)
#endif
#ifndef KSEEK_TINY_D64
#define KSEEK_TINY_D64 0  // 1: d64 with Sk <= 256 on mma.sync (v4's rule); 0: only Sk <= 64, as the other head dims
#endif
// d96, TILE 0: three consumer warpgroups (192-row tiles, as FlashAttention-3's at d96) with 96-key blocks.
// ptxas allocates a 512-thread kernel's registers at 128 a thread whatever setmaxnreg says: with 128-key blocks
// three consumers spill (240 bytes: S, P and the 96-column O do not fit), with 96 they fit, no spills (ptxas -v,
// CUDA 13.0). TILE 1: two consumers with 128-key blocks (v23's tile), for rows that 192 would pad too much:
// against it the 192-row tile gained 6 to 9% at S 4096 and 16384 but lost 5 to 9% at S 1024, which it pads by
// 12.5% (harness, H200, 2026-12-02). 176 keys measured no faster than 128 (2026-12-02).
template <int TILE> struct WgCfg<96, TILE> {
  static constexpr int NCW = TILE == 0 ? 3 : 2, BN = TILE == 0 ? 96 : 128, ST = 2, REG = NCW == 3 ? 160 : 240;
};
#ifndef KSEEK_D96_PAD_PCT
#define KSEEK_D96_PAD_PCT 6  // d96 takes the 192-row tile while it pads the query rows by at most this many % more
#endif
template <int TILE> struct WgCfg<128, TILE> { static constexpr int BN = 128, ST = 2, NCW = 2, REG = 240; };
#ifndef KSEEK_BN192
#define KSEEK_BN192 96
#endif
#ifndef KSEEK_BN256
#define KSEEK_BN256 64
#endif
template <int TILE> struct WgCfg<192, TILE> { static constexpr int BN = KSEEK_BN192, ST = 2, NCW = 2, REG = 240; };
template <int TILE> struct WgCfg<256, TILE> { static constexpr int BN = KSEEK_BN256, ST = 2, NCW = 2, REG = 240; };
// Q in registers for S = Q K^T (the RS form of wgmma) where the registers allow it: two consumer warpgroups and a
// 128-column Q (d 96 and 128: 24 or 32 more registers a thread). Q K^T then reads only K from shared memory.
#ifndef KSEEK_QREG
#define KSEEK_QREG 0
#endif

template <int D, int TILE> struct WgShape {
  using C = WgCfg<D, TILE>;
  static constexpr int NCW = C::NCW, REG = C::REG, THREADS = 128 * (NCW + 1);
  static constexpr bool QREG = KSEEK_QREG && NCW == 2 && D <= 128;
  static constexpr int BM = 64 * NCW, BN = C::BN, ST = C::ST;
  static constexpr int NCH = (D + 63) / 64, DP = NCH * 64;
  static constexpr int PVN = KSEEK_PV96 && D == 96 ? 96 : DP;  // O's columns (see wgmma_pv)
  static constexpr int DIM_BIT = D == 64 ? 0 : D == 96 ? 1 : D == 128 ? 2 : D == 192 ? 3 : 4;  // in the masks
  static constexpr bool LAZY = (KSEEK_LAZY_RESCALE >> DIM_BIT) & 1, WG_SKIP = (KSEEK_WG_SKIP >> DIM_BIT) & 1;
  static constexpr int Q_BYTES = NCH * BM * 128;
  static constexpr int KV_BYTES = NCH * BN * 128;  // one K (or V) stage
  // barriers: q_full, k/v full/empty per stage, and q_empty (the persistent kernel's); then the persistent
  // kernel's tile slot (4 ints: the producer tells the consumers which tile comes next) and softmax_done's words
  static constexpr int SMEM = 1024 /*alignment slack*/ + Q_BYTES + 2 * ST * KV_BYTES + 8 * (2 + 4 * ST) + 16 + 4 * THREADS;
  // the persistent kernel's O buffer (KSEEK_TMA_STORE_O_P): BM rows of the NCH slabs, after the K/V ring, where
  // it fits beside them in an SM's 227 KB (d 64 and 128; not d 192 or 256, nor d 96, whose O is no whole slabs)
  static constexpr int O_BYTES = NCH * BM * 128;
  static constexpr bool O_STAGED_P = KSEEK_TMA_STORE_O_P && D % 64 == 0 && SMEM + O_BYTES <= 227 * 1024;
  static constexpr int SMEM_P = SMEM + (O_STAGED_P ? O_BYTES : 0);
  static_assert(KV_BYTES % 1024 == 0 && (8 * (2 + 4 * ST)) % 16 == 0, "the tile slot must be 16-byte aligned");
};

// SPLIT: this launch is split-KV's, a cluster of `splits` CTAs per tile along z (kv_splits, split_merge).
template <int D, typename T, int TILE, bool SPLIT>
__global__ void __launch_bounds__(WgShape<D, TILE>::THREADS, 1) attn_wgmma_kernel(const __grid_constant__ CUtensorMap tmQ,
                                                            const __grid_constant__ CUtensorMap tmK,
                                                            const __grid_constant__ CUtensorMap tmV,
                                                            T* __restrict__ o, float* __restrict__ lse, int Sq,
                                                            int Sk_all, int Hq, int Hkv, int causal_all,
                                                            float scale_log2, int section, int splits,
                                                            int split_keys, const __grid_constant__ CUtensorMap tmO,
                                                            int o_tma) {
  using S = WgShape<D, TILE>;
  constexpr int BM = S::BM, BN = S::BN, ST = S::ST, NCH = S::NCH, PVN = S::PVN;
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
  const uint32_t scratch = bar + 8 * (2 + 4 * ST) + 16;  // softmax_done's words, one per thread

  // Causal tiles differ in length, and the block scheduler starts CTAs in the order of their linear index: that
  // order is the longest tiles first within sections of `section` (batch, head) pairs (the persistent kernel's
  // tile_at). Head by head (section = 1), a head's longest tile starts only after the heads before it, and at
  // S 8192, d256 the SMs that took the last heads' long tiles ran 9% past the others (tools/timeline.py). A
  // section that fills about one wave keeps the CTAs that run together on a few heads' K and V in L2.
  int mblk = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  if (!SPLIT && causal_all) {  // a split launch fills less than a wave: its order does not matter
    const int nmb = gridDim.x, nhb = gridDim.y * gridDim.z;
    const int t = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const int first_hb = (t / (section * nmb)) * section, r = t - first_hb * nmb;
    const int width = min(section, nhb - first_hb), hb = first_hb + r % width;
    mblk = nmb - 1 - r / width;
    h = hb % Hq;
    b = hb / Hq;
  }
  // Split-KV (kv_splits): blockIdx.z runs over (batch, key range) pairs, a cluster per tile. This CTA's keys are
  // the range `split` (its rank in the cluster), from kb0, of at most split_keys; only the last range keeps the
  // causal mask (the host splits only where the others lie wholly left of every row's diagonal).
  const int split = SPLIT ? (int)cluster_rank() : 0;
  if (SPLIT) b = blockIdx.z / splits;
  const int kb0 = SPLIT ? split * split_keys : 0;
  const int Sk = SPLIT ? min(split_keys, Sk_all - kb0) : Sk_all;
  const int causal = SPLIT ? causal_all && split == splits - 1 : causal_all;
  const int hk = h / (Hq / Hkv);
  const int m0 = mblk * BM;
  const int tid = threadIdx.x, wg = tid >> 7;
  const int diag = Sk - Sq;
  const int n_end = causal ? min(Sk, m0 + BM + diag) : Sk;
  const int nblocks = n_end > 0 ? (n_end + BN - 1) / BN : 0;
  // The consumer warpgroups with at least one query row (m0 < Sq: the grid has ceil(Sq / BM) query blocks). A
  // split keeps them all: its merge's barriers count every consumer thread.
  const int busy_wgs = (KSEEK_IDLE_WG && !SPLIT) ? max(1, min(S::NCW, (Sq - m0 + 63) / 64)) : S::NCW;

  if (tid == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < ST; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), 4 * busy_wgs);  // one arrival per consumer warp that has rows
      mbar_init(v_empty(s), 4 * busy_wgs);
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
          tma_load_4d(sK + s * S::KV_BYTES + c * BN * 128, &tmK, k_full(s), c * 64, hk, kb0 + it * BN, b);
        mbar_wait(v_empty(s), ((it / ST) & 1) ^ 1);
        mbar_expect_tx(v_full(s), S::KV_BYTES);
        for (int c = 0; c < NCH; ++c)
          tma_load_4d(sV + s * S::KV_BYTES + c * BN * 128, &tmV, v_full(s), c * 64, hk, kb0 + it * BN, b);
      }
    }
    if constexpr (SPLIT) {  // the producer's arrivals at the consumers' two cluster barriers (below)
      cluster_sync();
      cluster_sync();
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(S::REG));
    // which 64-row slice of the CTA's queries; the shuffle tells the compiler it is warp-uniform, so the
    // descriptors below live in uniform registers
    const int cw = __shfl_sync(0xffffffffu, wg, 0) - 1;
    // Rows all past Sq: no product, no arrival (the empty barriers do not count this warpgroup), no store, and no
    // barrier of the CTA after this point that would wait for it.
    if (cw >= busy_wgs) return;
    const Desc dq = desc_base(sQ + cw * 64 * 128, 16, 1024), dk = desc_base(sK, 16, 1024),
               dv = desc_base(sV, BN * 128, 1024);
    const int wi = (tid >> 5) & 3, lane = tid & 31;
    const int row0 = m0 + cw * 64 + wi * 16 + (lane >> 2);

    float oacc[PVN / 2];
#pragma unroll
    for (int i = 0; i < PVN / 2; ++i) oacc[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

    // Software pipeline inside the warpgroup: while the softmax of block it runs on the CUDA cores,
    // the tensor cores work on O += P(it-1) V(it-1), issued just before it. S(it) = Q K(it)^T is issued
    // first, so it is ready when the softmax needs it.
    uint32_t pa[BN / 16][4];
    float sacc[BN / 2];
    uint32_t qa[S::QREG ? D / 16 : 1][4];
    // This warp's 16 rows of Q as the m64k16 A fragments of each k-step (ldmatrix.x4 from the 128-byte
    // swizzled TMA tile: 16-byte chunk c of row r sits at chunk c ^ (r % 8)).
    auto load_q = [&]() {
      const int qr = cw * 64 + wi * 16 + (lane & 15);
#pragma unroll
      for (int kk = 0; kk < (S::QREG ? D / 16 : 0); ++kk) {
        const int chunk = (kk & 3) * 2 + (lane >> 4);
        ldmatrix_x4(qa[kk], sQ + (kk >> 2) * BM * 128 + qr * 128 + ((chunk ^ (qr & 7)) << 4));
      }
    };
    auto issue_qk = [&](int st) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        // K-major operands: stepping 16 elements along K inside a swizzled 128-byte row is +32 bytes
        const uint64_t db = desc_at(dk, st * (S::KV_BYTES / 16) + ((kk >> 2) * BN * 128 + (kk & 3) * 32) / 16);
        if constexpr (S::QREG) {
          wgmma_rsk<BN, T>(sacc, qa[kk], db, kk > 0);
        } else {
          const uint64_t da = desc_at(dq, ((kk >> 2) * BM * 128 + (kk & 3) * 32) / 16);
          wgmma_ss<BN, T>(sacc, da, db, kk > 0);
        }
      }
    };
    auto issue_pv = [&](int st) {
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        // V tile is [key][d]: N-major B. 16 keys = two 8-row groups = 2048 bytes; the next 64 columns
        // of d sit in the next slab, BN*128 bytes on (LBO); 8-key groups are 1024 bytes apart (SBO).
        const uint64_t db = desc_at(dv, st * (S::KV_BYTES / 16) + kk * (2048 / 16));
        wgmma_pv<PVN, BN, T>(oacc, pa[kk], db);
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
    // Blocks it < first_masked need no mask: they end inside Sk and, when causal, at or left of every row's
    // diagonal (it * BN + BN - 1 <= m0 + diag). The mask is only ever needed from some block on.
    const int first_masked = causal ? min(Sk / BN, max(m0 + diag + 1, 0) / BN) : Sk / BN;
    // With the causal mask this warpgroup's 64 rows see no key past m0 + 64 * (cw + 1) - 1 + diag, so it may stop
    // before the CTA's last block (nblocks counts the CTA's last row): d256's first warpgroup skips one 64-key
    // block in every tile. A skipped block adds exactly nothing (every score -inf, alpha 1): the results are the
    // same bit for bit. It never leaves a K or V slot without its arrivals for a block the producer reuses: it
    // skips only the CTA's last blocks, at most ceil(64 (NCW - 1) / BN) <= ST of them (the assert), and in this
    // kernel a slot is reused only by the block ST later; so too a warpgroup that sees no key at all (nb = 0)
    // occurs only in a CTA of at most ST blocks.
    static_assert((64 * (S::NCW - 1) + BN - 1) / BN <= ST, "a warpgroup could skip a block whose slot is reused");
    int nb = nblocks;
    if (S::WG_SKIP && causal) {
      const int wg_end = min(Sk, m0 + 64 * (cw + 1) + diag);
      nb = min(nblocks, wg_end > 0 ? (wg_end + BN - 1) / BN : 0);
    }

    if (nb > 0) {
      mbar_wait(q_full, 0);
      if constexpr (S::QREG) load_q();
      mbar_wait(k_full(0), 0);
      wgmma_fence();
      issue_qk(0);
      wgmma_commit();
      wgmma_wait<0>();
      reg_fence(sacc);
      if (lane == 0) mbar_arrive(k_empty(0));
      float alpha[2];
      // The first block gets its own unmasked copy where that measured faster: d 64, 96, 192, 256 gain 1 to 6%
      // (compare, H200, 2026-12-01); at d 128 the same code was 2 to 5% slower on long rows and 14 to 28% slower
      // with few query blocks against long keys (Sq 113..256, Sk 3001..8192), cause not found (the unmasked loop's
      // SASS is the same); there block 0 always runs the masked copy (versions/README.md, v12 -> v13).
      if (D != 128 && first_masked > 0)
        softmax_scores<BN / 8, false, S::LAZY>(sacc, m, l, alpha, scale_log2, row0, 2 * (lane & 3), Sk, causal, diag);
      else
        softmax_scores<BN / 8, true, S::LAZY>(sacc, m, l, alpha, scale_log2, row0, 2 * (lane & 3), Sk, causal, diag);
      pack_p();
    }
    // Two passes over the key blocks, unrolled so that each has its own copy of the loop body with the mask
    // known at compile time: the blocks without a mask, then the rest.
    int it = 1;
#pragma unroll
    for (int pass = 0; pass < 2; ++pass)
    for (const int it_end = pass == 0 ? min(first_masked, nb) : nb; it < it_end; ++it) {
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
      if (pass == 0)
        softmax_scores<BN / 8, false, S::LAZY>(sacc, m, l, alpha, scale_log2, row0, it * BN + 2 * (lane & 3), Sk, causal, diag);
      else
        softmax_scores<BN / 8, true, S::LAZY>(sacc, m, l, alpha, scale_log2, row0, it * BN + 2 * (lane & 3), Sk, causal, diag);
      softmax_done<D>(l, scratch + 4 * tid);
      wgmma_wait<0>();
      reg_fence(oacc);
      if (lane == 0) mbar_arrive(v_empty(sp));
      if (!S::LAZY || __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) rescale_o<PVN / 8>(oacc, alpha);
      pack_p();
    }
    if (nb > 0) {
      const int sp = (nb - 1) % ST;
      mbar_wait(v_full(sp), ((nb - 1) / ST) & 1);
      reg_fence(oacc);
      wgmma_fence();
      issue_pv(sp);
      wgmma_commit();
      wgmma_wait<0>();
      reg_fence(oacc);
      if (lane == 0) mbar_arrive(v_empty(sp));
    }
    if constexpr (!SPLIT) {
      bool stored = false;
      if constexpr (KSEEK_TMA_STORE_O && D % 64 == 0) {
        if (o_tma) {  // tmO is O's map (launch_wgmma: O 16-byte aligned)
          store_o_tma<PVN / 8, T, BM>(oacc, m, l, &tmO, sQ, cw * 64, lse + ((size_t)b * Hq + h) * Sq, row0, Sq, D, h,
                                      m0 + cw * 64, b, wi, lane, 2 + cw);
          stored = true;
        }
      }
      if (!stored)
        store_rows<PVN / 8, T>(oacc, m, l, o + ((size_t)b * Sq * Hq + h) * D, lse + ((size_t)b * Hq + h) * Sq, row0,
                              Sq, Hq, D, lane);
    } else {
      // Q and the K/V stages become this range's O: once every consumer warpgroup is past its last wgmma (so
      // too every TMA copy, all of which some consumer waited for), no one reads them.
      static_assert(SplitPart<PVN>::bytes(BM) <= S::Q_BYTES + 2 * ST * S::KV_BYTES, "split_stage's O does not fit");
      asm volatile("bar.sync 1, %0;\n" ::"n"(128 * S::NCW) : "memory");
      float* part = reinterpret_cast<float*>(smem_raw + (sQ - raw));
      float* part_lse = part + BM * SplitPart<PVN>::LDP;
      split_stage<PVN / 8, PVN>(oacc, m, l, part, part_lse, BM, cw * 64 + wi * 16 + (lane >> 2), lane);
      cluster_sync();  // every range's O is in its CTA's shared memory
      split_merge<PVN, T>(sQ, sQ + 4 * BM * SplitPart<PVN>::LDP, o + ((size_t)b * Sq * Hq + h) * D,
                          lse + ((size_t)b * Hq + h) * Sq, BM, m0, Sq, Hq, D, splits, split, (tid >> 5) - 4,
                          4 * S::NCW, lane);
      cluster_sync();  // no CTA leaves while another may still read its shared memory
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Persistent variant of attn_wgmma_kernel, for short non-causal key sequences (see use_persistent). The
// per-tile loop body is the same as above; the two stay separate functions because folding both launches into
// one kernel (versions/v8_persistent_short.cu) made the one-tile-per-CTA path 2-3% slower on every shape
// (0.973x of v5 over the 90 bf16 harness shapes, bench), for a reason not yet found.
// ------------------------------------------------------------------------------------------------
template <int D, typename T, int TILE>
__global__ void __launch_bounds__(WgShape<D, TILE>::THREADS, 1)
    attn_wgmma_persistent_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                                 const __grid_constant__ CUtensorMap tmV, T* __restrict__ o, float* __restrict__ lse,
                                 int B, int Sq, int Sk, int Hq, int Hkv, int causal, float scale_log2,
                                 int* __restrict__ tickets, int section, const __grid_constant__ CUtensorMap tmO,
                                 int o_tma) {
  using S = WgShape<D, TILE>;
  constexpr int BM = S::BM, BN = S::BN, ST = S::ST, NCH = S::NCH, PVN = S::PVN;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t sQ = (raw + 1023) & ~1023u;  // the 128-byte swizzle pattern repeats every 1024 bytes
  const uint32_t sK = sQ + S::Q_BYTES;
  const uint32_t sV = sK + ST * S::KV_BYTES;
  const uint32_t sO = sV + ST * S::KV_BYTES;  // O_STAGED_P: O's own buffer (1024-aligned: KV_BYTES % 1024 == 0)
  const uint32_t bar = sO + (S::O_STAGED_P ? S::O_BYTES : 0);
  const uint32_t q_full = bar;
  // Q's buffer is free again once every consumer warp has computed the tile's last S = Q K^T: the producer
  // then brings the next tile's Q while the consumers finish the softmax, the last O += P V and the stores.
  const uint32_t q_empty = bar + 8 * (1 + 4 * ST);
  const uint32_t tile_slot = bar + 8 * (2 + 4 * ST);  // int4 {m0, h, b, nblocks}; nblocks < 0: no more tiles
  const uint32_t scratch = tile_slot + 16;            // softmax_done's words, one per thread
  auto k_full = [&](int s) { return bar + 8 * (1 + s); };
  auto v_full = [&](int s) { return bar + 8 * (1 + ST + s); };
  // K and V slots are released separately: a K slot is free as soon as S = Q K^T has been computed, which
  // lets the producer bring K(it+1) while O += P V(it-1) still reads V.
  auto k_empty = [&](int s) { return bar + 8 * (1 + 2 * ST + s); };
  auto v_empty = [&](int s) { return bar + 8 * (1 + 3 * ST + s); };

  // Tiles: (query block, head, batch). One CTA per SM; its first tile is blockIdx.x, each next one the next ticket
  // of a counter (gridDim.x + atomicAdd), taken by the producer as it starts a tile, so an SM that finishes early
  // takes more tiles: with a static deal (tile blockIdx.x + k * gridDim.x) causal tiles of unequal length left
  // SMs idle (v7: 0.53x to 0.66x at S 4096..16384). The order is the longest tiles first (causal: the last query
  // blocks), in sections of `section` (batch, head) pairs whose K and V fit in L2 together, so the CTAs running
  // at one time share them; without a mask every tile is as long, and a section is one head, query blocks fastest.
  // The ring of K/V stages, and Q, run on from one tile into the next, so the next tile's loads overlap this
  // one's last blocks and its stores instead of every CTA starting with an idle load.
  const int nmb = (Sq + BM - 1) / BM;
  const int nhb = Hq * B;
  const int ntiles = nmb * nhb;
  const int tid = threadIdx.x, wg = tid >> 7;
  const int diag = Sk - Sq;
  struct Tile { int m0, h, b, nblocks; };
  auto tile_at = [&](int t) {
    const int per_section = section * nmb, first_hb = (t / per_section) * section;
    const int width = min(section, nhb - first_hb), r = t - (t / per_section) * per_section;
    const int rank = causal ? r / width : r % nmb;          // 0 = the longest query block
    const int hb = first_hb + (causal ? r % width : r / nmb);
    Tile x;
    x.h = hb % Hq;
    x.b = hb / Hq;
    x.m0 = (causal ? nmb - 1 - rank : rank) * BM;  // causal: the last query blocks see the most keys
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
      int g = 0, ti = 0;  // K/V blocks and tiles handed out so far: ring slot and barrier parities
      for (int t = blockIdx.x;; ++ti) {
        const Tile x = t < ntiles ? tile_at(t) : Tile{0, 0, 0, -1};
        // The consumers read the slot right after q_full completes and arrive on q_empty only after that.
        mbar_wait(q_empty, (ti & 1) ^ 1);  // a fresh barrier passes parity 1 at once
        asm volatile("st.shared.v4.s32 [%0], {%1, %2, %3, %4};\n" ::"r"(tile_slot), "r"(x.m0), "r"(x.h), "r"(x.b),
                     "r"(x.nblocks) : "memory");
        if (x.nblocks <= 0) {
          mbar_arrive(q_full);  // nothing to load: the arrival alone completes the phase (and publishes the slot)
          if (x.nblocks < 0) break;
        } else {
          mbar_expect_tx(q_full, S::Q_BYTES);
          for (int c = 0; c < NCH; ++c) tma_load_4d(sQ + c * BM * 128, &tmQ, q_full, c * 64, x.h, x.m0, x.b);
        }
        // the next ticket, taken now so that its latency hides under this tile's loads; the last ticket of the
        // launch (one past the end for every CTA: ntiles tickets in all) puts the counter back to 0 for the next
        const int ticket = atomicAdd(tickets, 1);
        if (ticket == ntiles - 1) atomicExch(tickets, 0);
        const int next = gridDim.x + ticket;
        const int hk = x.h / (Hq / Hkv);
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
        t = next;
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(S::REG));
    const int cw = __shfl_sync(0xffffffffu, wg, 0) - 1;  // which 64-row slice (warp-uniform, as above)
    const Desc dq = desc_base(sQ + cw * 64 * 128, 16, 1024), dk = desc_base(sK, 16, 1024),
               dv = desc_base(sV, BN * 128, 1024);
    const int wi = (tid >> 5) & 3, lane = tid & 31;

    float oacc[PVN / 2];
    uint32_t pa[BN / 16][4];
    float sacc[BN / 2];
    uint32_t qa[S::QREG ? D / 16 : 1][4];
    auto load_q = [&]() {  // as in attn_wgmma_kernel
      const int qr = cw * 64 + wi * 16 + (lane & 15);
#pragma unroll
      for (int kk = 0; kk < (S::QREG ? D / 16 : 0); ++kk) {
        const int chunk = (kk & 3) * 2 + (lane >> 4);
        ldmatrix_x4(qa[kk], sQ + (kk >> 2) * BM * 128 + qr * 128 + ((chunk ^ (qr & 7)) << 4));
      }
    };
    int g = 0, ti = 0;  // as the producer counts them
    for (;; ++ti) {
      mbar_wait(q_full, ti & 1);
      // Lane 0 reads the slot and is the lane that later arrives on q_empty, so the read is ordered before the
      // producer's next write by that thread's own release; the shuffle gives the tile to the other lanes.
      Tile x{0, 0, 0, 0};
      if (lane == 0)
        asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(x.m0), "=r"(x.h), "=r"(x.b), "=r"(x.nblocks) : "r"(tile_slot) : "memory");
      x.m0 = __shfl_sync(0xffffffffu, x.m0, 0);
      x.h = __shfl_sync(0xffffffffu, x.h, 0);
      x.b = __shfl_sync(0xffffffffu, x.b, 0);
      x.nblocks = __shfl_sync(0xffffffffu, x.nblocks, 0);
      if (x.nblocks < 0) break;
      const int m0 = x.m0, nblocks = x.nblocks;
      if (nblocks == 0 && lane == 0) mbar_arrive(q_empty);  // no key for any row: the slot and Q are free now
      const int row0 = m0 + cw * 64 + wi * 16 + (lane >> 2);
#pragma unroll
      for (int i = 0; i < PVN / 2; ++i) oacc[i] = 0.f;
      float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

      // Software pipeline inside the warpgroup: while the softmax of block it runs on the CUDA cores,
      // the tensor cores work on O += P(it-1) V(it-1), issued just before it. S(it) = Q K(it)^T is issued
      // first, so it is ready when the softmax needs it.
      auto issue_qk = [&](int st) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          // K-major operands: stepping 16 elements along K inside a swizzled 128-byte row is +32 bytes
          const uint64_t db = desc_at(dk, st * (S::KV_BYTES / 16) + ((kk >> 2) * BN * 128 + (kk & 3) * 32) / 16);
          if constexpr (S::QREG) {
            wgmma_rsk<BN, T>(sacc, qa[kk], db, kk > 0);
          } else {
            const uint64_t da = desc_at(dq, ((kk >> 2) * BM * 128 + (kk & 3) * 32) / 16);
            wgmma_ss<BN, T>(sacc, da, db, kk > 0);
          }
        }
      };
      auto issue_pv = [&](int st) {
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
          // V tile is [key][d]: N-major B. 16 keys = two 8-row groups = 2048 bytes; the next 64 columns
          // of d sit in the next slab, BN*128 bytes on (LBO); 8-key groups are 1024 bytes apart (SBO).
          const uint64_t db = desc_at(dv, st * (S::KV_BYTES / 16) + kk * (2048 / 16));
          wgmma_pv<PVN, BN, T>(oacc, pa[kk], db);
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
      // as in attn_wgmma_kernel: blocks before first_masked need no mask
      const int first_masked = causal ? min(Sk / BN, max(m0 + diag + 1, 0) / BN) : Sk / BN;

      if (nblocks > 0) {
        const int s0 = g % ST;
        if constexpr (S::QREG) {
          load_q();  // Q's buffer is free for the next tile as soon as it is in registers
          __syncwarp();
          if (lane == 0) mbar_arrive(q_empty);
        }
        mbar_wait(k_full(s0), (g / ST) & 1);
        wgmma_fence();
        issue_qk(s0);
        wgmma_commit();
        wgmma_wait<0>();
        reg_fence(sacc);
        if (lane == 0) {
          mbar_arrive(k_empty(s0));
          if (!S::QREG && nblocks == 1) mbar_arrive(q_empty);
        }
        float alpha[2];
        if (first_masked > 0)
          softmax_scores<BN / 8, false, S::LAZY>(sacc, m, l, alpha, scale_log2, row0, 2 * (lane & 3), Sk, causal, diag);
        else
          softmax_scores<BN / 8, true, S::LAZY>(sacc, m, l, alpha, scale_log2, row0, 2 * (lane & 3), Sk, causal, diag);
        pack_p();
      }
      int it = 1;  // two passes, as in attn_wgmma_kernel: unmasked blocks, then the rest
#pragma unroll
      for (int pass = 0; pass < 2; ++pass)
      for (const int it_end = pass == 0 ? min(first_masked, nblocks) : nblocks; it < it_end; ++it) {
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
          if (!S::QREG && it == nblocks - 1) mbar_arrive(q_empty);
        }
        float alpha[2];
        if (pass == 0)
          softmax_scores<BN / 8, false, S::LAZY>(sacc, m, l, alpha, scale_log2, row0, it * BN + 2 * (lane & 3), Sk, causal,
                                        diag);
        else
          softmax_scores<BN / 8, true, S::LAZY>(sacc, m, l, alpha, scale_log2, row0, it * BN + 2 * (lane & 3), Sk, causal,
                                       diag);
        softmax_done<D>(l, scratch + 4 * tid);
        wgmma_wait<0>();
        reg_fence(oacc);
        if (lane == 0) mbar_arrive(v_empty(sp));
        if (!S::LAZY || __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) rescale_o<PVN / 8>(oacc, alpha);
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
      }
      bool stored = false;
      if constexpr (S::O_STAGED_P) {
        if (o_tma) {  // tmO is O's map (launch_wgmma: O 16-byte aligned)
          store_o_tma<PVN / 8, T, BM, true>(oacc, m, l, &tmO, sO, cw * 64, lse + ((size_t)x.b * Hq + x.h) * Sq, row0,
                                            Sq, D, x.h, m0 + cw * 64, x.b, wi, lane, 2 + cw);
          stored = true;
        }
      }
      if (!stored)
        store_rows<PVN / 8, T>(oacc, m, l, o + ((size_t)x.b * Sq * Hq + x.h) * D, lse + ((size_t)x.b * Hq + x.h) * Sq,
                              row0, Sq, Hq, D, lane);
    }
    // the last tile's stores read shared memory that the CTA's exit gives up (store_o_tma's REUSE)
    if (S::O_STAGED_P && o_tma && wi == 0 && lane == 0) bulk_wait_read();
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

// The decode kernel (v31): where a KV head has at most KSEEK_DECODE_ROWS query rows against enough keys, at the
// head dims whose 8-column chunks fill a warp (64, 128, 256).
static bool use_decode(const Args& a) {
  const long long rows = (long long)a.Sq * (a.Hq / a.Hkv);
  return KSEEK_DECODE && rows >= KSEEK_DECODE_MIN_ROWS && rows <= KSEEK_DECODE_ROWS && a.Sk >= KSEEK_DECODE_MIN_SK &&
         (a.D == 64 || a.D == 128 || a.D == 256);
}

// Key ranges a KV head: as many as keep the launch in one wave of `per_sm` CTAs an SM (the kernel's occupancy,
// at most KSEEK_DECODE_CTAS_PER_SM), at most 8 (the portable cluster) and at least 256 keys a range.
static int decode_splits(const Args& a, int sms, int per_sm) {
  if (per_sm > KSEEK_DECODE_CTAS_PER_SM) per_sm = KSEEK_DECODE_CTAS_PER_SM;
  const long long heads = (long long)a.B * a.Hkv;
  long long splits = (long long)per_sm * sms / heads;
  if (splits > 8) splits = 8;
  if (splits > a.Sk / 256) splits = a.Sk / 256;
  return splits < 1 ? 1 : (int)splits;
}

// K or V ([B, S, H, D]) for the decode kernel's ring: boxes of all D columns x `rows` keys of one head, no swizzle.
static bool make_rows_map(CUtensorMap* map, const void* ptr, int dtype, int B, int S, int H, int D, int rows) {
  const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)H, (cuuint64_t)S, (cuuint64_t)B};
  const cuuint64_t strides[3] = {(cuuint64_t)D * 2, (cuuint64_t)H * D * 2, (cuuint64_t)S * H * D * 2};
  const cuuint32_t box[4] = {(cuuint32_t)D, 1, (cuuint32_t)rows, 1};
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  return cuTensorMapEncodeTiled(map, dtype == 0 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
            const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int D, typename T, int RM> static int launch_decode_rows(const Args& a, int sms) {
  using S = DecShape<D, RM>;
  CUtensorMap mk, mv;
  if (!make_rows_map(&mk, a.k, a.dtype, a.B, a.Sk, a.Hkv, D, S::NK) ||
      !make_rows_map(&mv, a.v, a.dtype, a.B, a.Sk, a.Hkv, D, S::NK))
    return 5;
  static int per_sm = 0;  // the split kernel's CTAs an SM (the one without a split has no fewer)
  if (!per_sm) {
    if (cudaFuncSetAttribute(attn_decode_kernel<D, T, RM, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             S::SMEM) != cudaSuccess ||
        cudaFuncSetAttribute(attn_decode_kernel<D, T, RM, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             S::SMEM) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, attn_decode_kernel<D, T, RM, true>, kDecAll,
                                                      S::SMEM) != cudaSuccess ||
        per_sm < 1) {
      per_sm = 0;
      return 3;
    }
  }
  const T* q = (const T*)a.q;
  T* o = (T*)a.o;
  float* lse = a.lse;
  int Sq = a.Sq, Sk = a.Sk, Hq = a.Hq, Hkv = a.Hkv, causal = a.causal;
  float sl2 = a.scale_log2;
  const int want = decode_splits(a, sms, per_sm);
  int split_keys = (a.Sk + want - 1) / want;
  const int splits = (a.Sk + split_keys - 1) / split_keys;
  void* args[] = {&mk, &mv, &q, &o, &lse, &Sq, &Sk, &Hq, &Hkv, &causal, &sl2, &split_keys};
  if (a.B > 65535 || a.Hkv > 65535) return 1;
  if (splits == 1)
    return cudaLaunchKernel((const void*)attn_decode_kernel<D, T, RM, false>, dim3(1, a.Hkv, a.B), dim3(kDecAll),
                            args, S::SMEM, a.stream) == cudaSuccess
               ? 0
               : 4;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(splits, a.Hkv, a.B);
  cfg.blockDim = dim3(kDecAll);
  cfg.dynamicSmemBytes = S::SMEM;
  cfg.stream = a.stream;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = (unsigned)splits;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelExC(&cfg, (const void*)attn_decode_kernel<D, T, RM, true>, args) == cudaSuccess ? 0 : 4;
}

template <int D, typename T> static int launch_decode(const Args& a) {
  static int sms = 0;
  if (!sms) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
      return 3;
  }
  const int rows = a.Sq * (a.Hq / a.Hkv);
  if (rows == 1) return launch_decode_rows<D, T, 1>(a, sms);
  if (rows == 2) return launch_decode_rows<D, T, 2>(a, sms);
  if (rows <= 4) return launch_decode_rows<D, T, 4>(a, sms);
#if KSEEK_DECODE_ROWS >= 8
  if (rows <= 8) return launch_decode_rows<D, T, 8>(a, sms);
#endif
  return 2;
}

// Persistent grid (one CTA per SM taking tiles) or one CTA per tile (the hardware hands tiles to SMs as they free
// up). Persistent pays where tiles are short: v8 (H200, harness), the 24 non-causal scenarios with Sk <= 1024:
// 1.087x geomean (Sk 113: 1.26x, 512: 1.03 to 1.13x, 1000/1024: 1.00 to 1.06x).
#ifndef KSEEK_PERSIST_SK
#define KSEEK_PERSIST_SK 1024  // longest key sequence served by the persistent kernel without a mask
#endif
#ifndef KSEEK_PERSIST_CAUSAL_SK
#define KSEEK_PERSIST_CAUSAL_SK 3072  // and with the causal mask (head dims up to 192, and enough tiles)
#endif
#ifndef KSEEK_SECTION_MB
#define KSEEK_SECTION_MB 24  // K and V bytes of one section of causal tiles (H200: 50 MB of L2); 0: one head
#endif
#ifndef KSEEK_SECTION1_MAX
#define KSEEK_SECTION1_MAX 8  // the most (batch, head) pairs in a section of the one-tile kernel's causal order
#endif
// With the causal mask the dynamic deal pays on short rows (compare, H200, 2026-12-02, against one CTA per tile:
// S 512 x1.20 to 1.27, S 1000/1024 x1.07 to 1.15, S 2048 x1.01 to 1.06, S 3001 x1.01 to 1.05; S 4096 x0.97 to 1.02,
// longer rows lose up to 14%), but not at d256 (x0.96 to 0.99 from S 1024 on), nor where there are too few tiles to
// deal (Sq 113 against Sk 3001: 64 tiles, x0.92).
// Split-KV: where the one-tile kernel would leave over half the SMs without a CTA (Sq 113 to 256 against
// thousands of keys: 64 CTAs for 132 SMs), each (batch, head, query block) runs as a cluster of `splits` CTAs over
// key ranges of split_keys (a whole number of key blocks), which merge their O in shared memory (split_merge).
// With the causal mask every range but the last must be wholly visible to every row (it ends at or before key
// Sk - Sq), so that only the last one needs the mask.
#ifndef KSEEK_SPLIT_KV
#define KSEEK_SPLIT_KV 1
#endif
#ifndef KSEEK_SPLIT_MIN_KEYS
#define KSEEK_SPLIT_MIN_KEYS 512  // the fewest keys a range may hold
#endif
struct KvSplit {
  int splits, split_keys;
};
// max_clusters(n): how many clusters of n CTAs the GPU runs at once (0: none, or unknown); a split is taken only
// if all of the launch's clusters run in one wave.
template <typename F> static KvSplit kv_splits(const Args& a, long long ntiles, int sms, int bn, F max_clusters) {
  KvSplit none{1, a.Sk};
  if (!KSEEK_SPLIT_KV || ntiles * 2 > sms) return none;
  int splits = (int)(sms / ntiles);
  if (splits > 8) splits = 8;  // the portable cluster size
  if (splits > a.Sk / KSEEK_SPLIT_MIN_KEYS) splits = a.Sk / KSEEK_SPLIT_MIN_KEYS;
  for (; splits >= 2; --splits) {
    const int per = (a.Sk + splits - 1) / splits, keys = (per + bn - 1) / bn * bn;
    const int used = (a.Sk + keys - 1) / keys;  // rounding up to whole blocks can leave a range empty
    if (used < 2) continue;
    if (a.causal && (long long)(used - 1) * keys > (long long)a.Sk - a.Sq + 1) continue;
    if (ntiles > max_clusters(used)) continue;
    return KvSplit{used, keys};
  }
  return none;
}

static bool use_persistent(const Args& a, long long ntiles, int sms) {
  if (!a.causal) return a.Sk <= KSEEK_PERSIST_SK;
  return a.D <= 192 && a.Sk <= KSEEK_PERSIST_CAUSAL_SK && ntiles >= 2LL * sms;
}

// The persistent kernel's ticket counters: each launch takes the next of 64, and its last ticket puts it back to
// 0, so launches on different streams at the same time use different counters (up to 64 in flight at once).
__device__ int g_tickets[64];

template <int D, typename T, int TILE> static int launch_wgmma(const Args& a) {
  using S = WgShape<D, TILE>;
  CUtensorMap mq, mk, mv;
  if (!make_map(&mq, a.q, a.dtype, a.B, a.Sq, a.Hq, D, S::BM) || !make_map(&mk, a.k, a.dtype, a.B, a.Sk, a.Hkv, D, S::BN) ||
      !make_map(&mv, a.v, a.dtype, a.B, a.Sk, a.Hkv, D, S::BN))
    return 5;
  static bool configured = false;
  if (!configured) {
    if (cudaFuncSetAttribute(attn_wgmma_kernel<D, T, TILE, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             S::SMEM) != cudaSuccess ||
        cudaFuncSetAttribute(attn_wgmma_kernel<D, T, TILE, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             S::SMEM) != cudaSuccess ||
        cudaFuncSetAttribute(attn_wgmma_persistent_kernel<D, T, TILE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             S::SMEM_P) != cudaSuccess)
      return 3;
    configured = true;
  }
  T* o = (T*)a.o;
  float* lse = a.lse;
  int B = a.B, Sq = a.Sq, Sk = a.Sk, Hq = a.Hq, Hkv = a.Hkv, causal = a.causal;
  float sl2 = a.scale_log2;
  static int sms = 0;
  if (!sms) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
      return 3;
  }
  const long long ntiles = (long long)((a.Sq + S::BM - 1) / S::BM) * a.Hq * a.B;
  // KSEEK_TMA_STORE_O(_P): O's map (boxes of 64 columns x one consumer warpgroup's 64 rows), where TMA can store
  // into O (a 16-byte aligned base; D % 64 == 0, so every row starts on 16 bytes too); else store_rows
  CUtensorMap mo = {};
  const bool o_aligned = D % 64 == 0 && (reinterpret_cast<uintptr_t>(a.o) & 15) == 0;
  const bool o_map = (KSEEK_TMA_STORE_O || S::O_STAGED_P) && o_aligned && make_map(&mo, a.o, a.dtype, a.B, a.Sq, a.Hq, D, 64);
  if (use_persistent(a, ntiles, sms)) {
    if (ntiles > 0x7fffffff) return 1;
    static int* tickets = nullptr;
    if (!tickets && cudaGetSymbolAddress((void**)&tickets, g_tickets) != cudaSuccess) return 3;
    static unsigned launches = 0;
    int* counter = tickets + (__atomic_fetch_add(&launches, 1u, __ATOMIC_RELAXED) % 64);
    const long long kv_bytes = 4LL * a.Sk * D;  // one (batch, head)'s K and V, 2 bytes an element
    int section = (int)(KSEEK_SECTION_MB * 1048576LL / kv_bytes);
    section = section < 1 ? 1 : (section > a.Hq * a.B ? a.Hq * a.B : section);
    dim3 grid((unsigned)(ntiles > sms ? sms : ntiles));
    int o_tma_p = S::O_STAGED_P && o_map;
    void* args[] = {&mq, &mk, &mv, &o, &lse, &B, &Sq, &Sk, &Hq, &Hkv, &causal, &sl2, &counter, &section, &mo, &o_tma_p};
    return cudaLaunchKernel((const void*)attn_wgmma_persistent_kernel<D, T, TILE>, grid, dim3(S::THREADS), args,
                            S::SMEM_P, a.stream) == cudaSuccess
               ? 0
               : 4;
  }
  // The one-tile kernel's causal sections: as many (batch, head) pairs as make about one wave of CTAs, at most
  // KSEEK_SECTION1_MAX (measured with the timeline, H200, 2026-12-02: sections of all heads lost 4 to 18% to L2).
  const int nmb = (a.Sq + S::BM - 1) / S::BM;
  int section1 = (sms + nmb / 2) / nmb;
  section1 = section1 < 1 ? 1 : (section1 > KSEEK_SECTION1_MAX ? KSEEK_SECTION1_MAX : section1);
  if (section1 > a.Hq * a.B) section1 = a.Hq * a.B;
  // The split launch's cluster shape: (1, 1, splits), the ranges of one tile along z.
  auto cluster_config = [&](int splits, cudaLaunchAttribute* attr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(nmb, a.Hq, a.B * splits);
    cfg.blockDim = dim3(S::THREADS);
    cfg.dynamicSmemBytes = S::SMEM;
    cfg.stream = a.stream;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = 1;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = (unsigned)splits;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
  };
  static int cluster_capacity[9] = {};  // per cluster size; -1 once a query failed (then no split of that size)
  auto max_clusters = [&](int n) {
    if (cluster_capacity[n] == 0) {
      cudaLaunchAttribute attr;
      const cudaLaunchConfig_t cfg = cluster_config(n, &attr);
      int count = 0;
      cluster_capacity[n] =
          cudaOccupancyMaxActiveClusters(&count, (const void*)attn_wgmma_kernel<D, T, TILE, true>, &cfg) == cudaSuccess &&
                  count > 0
              ? count
              : -1;
      if (cluster_capacity[n] < 0) cudaGetLastError();  // clear it: the launch without a split goes on
    }
    return cluster_capacity[n];
  };
  const KvSplit ks = kv_splits(a, ntiles, sms, S::BN, max_clusters);
  int splits = ks.splits, split_keys = ks.split_keys;
  int o_tma = KSEEK_TMA_STORE_O && splits == 1 && o_map;
  void* args[] = {&mq, &mk, &mv, &o, &lse, &Sq, &Sk, &Hq, &Hkv, &causal, &sl2, &section1, &splits, &split_keys, &mo,
                  &o_tma};
  if (splits == 1) {
    dim3 grid(nmb, a.Hq, a.B);
    return cudaLaunchKernel((const void*)attn_wgmma_kernel<D, T, TILE, false>, grid, dim3(S::THREADS), args, S::SMEM,
                            a.stream) == cudaSuccess
               ? 0
               : 4;
  }
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = cluster_config(splits, &attr);
  return cudaLaunchKernelExC(&cfg, (const void*)attn_wgmma_kernel<D, T, TILE, true>, args) == cudaSuccess ? 0 : 4;
}

// The 192-row tile (d64, d96), unless it pads the query rows by more than pad_pct % beyond the 128-row tile's
// (pad_pct < 0: always).
static bool wide_tile(int Sq, int pad_pct) {
  const long long rows192 = (Sq + 191LL) / 192 * 192, rows128 = (Sq + 127LL) / 128 * 128;
  return pad_pct < 0 || rows192 * 100 <= rows128 * (100 + pad_pct);
}

template <typename T> static int dispatch(const Args& a, bool wg, bool decode) {
  if (decode) {
    switch (a.D) {
      case 64: return launch_decode<64, T>(a);
      case 128: return launch_decode<128, T>(a);
      case 256: return launch_decode<256, T>(a);
    }
    return 2;
  }
  switch (a.D) {
    case 64:
      if (!wg) return launch_mma<64, T>(a);
      return wide_tile(a.Sq, a.causal ? KSEEK_D64_PAD_PCT : KSEEK_D64_PAD_PCT_FULL) ? launch_wgmma<64, T, 0>(a)
                                                                                     : launch_wgmma<64, T, 1>(a);
    case 96:
      return !wg ? launch_mma<96, T>(a) : wide_tile(a.Sq, KSEEK_D96_PAD_PCT) ? launch_wgmma<96, T, 0>(a) : launch_wgmma<96, T, 1>(a);
    case 128: return wg ? launch_wgmma<128, T, 0>(a) : launch_mma<128, T>(a);
    case 192: return wg ? launch_wgmma<192, T, 0>(a) : launch_mma<192, T>(a);
    case 256: return wg ? launch_wgmma<256, T, 0>(a) : launch_mma<256, T>(a);
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

// variant: 0 = best available, 1 = mma.sync fallback, 2 = wgmma (fails with 6 where not sm_90), 3 = the decode
// kernel (fails with 2 where it does not take the shape, 6 where not sm_90)
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
  // 113x113 and 1000x113 without mask, and every longer shape, stay faster on wgmma. Since the persistent kernel
  // took causal tiles (v15), 113x113 causal is too: 46 TFLOP/s on mma.sync against 121 without the mask on wgmma
  // (v25, compare, H200, 2026-12-02), so causal goes to mma.sync only where queries outnumber keys.
#ifndef KSEEK_TINY_CAUSAL_SQUARE
#define KSEEK_TINY_CAUSAL_SQUARE 0  // 1: every causal Sk <= 256 on mma.sync, as up to v25
#endif
  const bool tiny_causal = causal && (KSEEK_TINY_CAUSAL_SQUARE || seqlen_q > seqlen_k);
  const bool tiny = seqlen_k <= 64 || (seqlen_k <= 256 && (tiny_causal || (KSEEK_TINY_D64 && head_dim == 64)));
  bool wg = sm90 && !tiny;
  if (variant == 1) wg = false;
  if ((variant == 2 || variant == 3) && !sm90) return 6;
  const bool decode_fits = kseek::use_decode(a);
  if (variant == 3 && !decode_fits) return 2;
  const bool decode = sm90 && decode_fits && (variant == 0 || variant == 3);
  return dtype == 0 ? kseek::dispatch<__nv_bfloat16>(a, wg, decode) : kseek::dispatch<__half>(a, wg, decode);
}

extern "C" int kseek_attention_fwd(const void* q, const void* k, const void* v, void* o, float* lse, int batch,
                                   int seqlen_q, int seqlen_k, int heads_q, int heads_kv, int head_dim, int dtype,
                                   int causal, float softmax_scale, cudaStream_t stream) {
  return kseek_attention_fwd_variant(0, q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim,
                                     dtype, causal, softmax_scale, stream);
}
