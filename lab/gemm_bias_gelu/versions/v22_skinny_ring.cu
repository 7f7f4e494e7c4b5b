// gemm_bias_gelu v22 (lab only; from v19, the release): out = gelu(A @ W^T + bias) for Hopper (sm_90a), one file, CUDA toolkit headers only
// (no CUTLASS, CuTe or cuBLAS). Issue 35. The line of versions (lab/gemm_bias_gelu/README.md has the numbers):
//  * v1: TMA + wgmma, a producer warpgroup and two consumer warpgroups sharing each 128 x 128 tile (cooperative),
//    persistent; 0.880x cuBLAS over the 18 scenarios on an H200: the main loop ran near peak, but each tile cost
//    ~6.6 us outside it (the epilogue, ~30 instructions an output with erff, the tensor cores idle meanwhile).
//  * v2: ping-pong consumers (each its own tile, main loops in turns, one's epilogue under the other's main loop),
//    stages to fill shared memory, gemm_skinny (mma.sync) for small m, and a GELU knob: with the tanh form 1.23x
//    eager / cuBLASLt's best on 13 scenarios, with erff 1.07x; the ping-pong kernel lost on shapes of one tile a
//    CTA (one warpgroup then does all the work).
//  * v3: ping-pong only where some CTA gets two or more tiles, else cooperative; GELU through erfc(t) = 1 / P(t)^16
//    (Abramowitz-Stegun 7.1.28, |error| <= 3e-7 on erf: within half a bf16 ulp of the exact GELU for v > -3.82,
//    where |gelu| > 2.6e-4; ~16 instructions an output; KSEEK_GELU 0 erff, 1 tanh.approx); an epilogue without
//    bounds checks on full tiles; KSEEK_SK_WARPS. 1.024x cuBLAS over the 18 scenarios (no difference: 0.988-1.07).
//  * v4 (the release): v3 with 5 stages instead of as many as fit (7 at BN 128) and KSEEK_GROUP_M 4 instead of 8,
//    the two knobs that each moved the large shapes in v3's screen (8192^3: 1.857 ms -> 1.548 and 1.770 ms).
//  * v7: v4 with cuBLAS's tile on the large shapes: 256 x 128 cooperative, each consumer warpgroup
//    128 x 128 (cuBLAS's kernel there: nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA, 4 stages of 64 k, clusters
//    1 x 2). Nsight Compute at 8192^3 on an H100 (2026-12-06) put v4's ping-pong 128 x 128 tiles at 80% of the
//    L2's throughput and 58% of DRAM's, cuBLAS's at 63% and 29%. Taken where k >= KSEEK_BIG_MIN_K and the big
//    tiles fill the SMs KSEEK_BIG_FILL percent (KSEEK_BIG_TILES 0: v4's dispatch); variant 10 forces it. On an
//    H100: 7 to 12% faster than v4 on the four large shapes, 0.86x to 0.91x cuBLASLt's epilogue there.
//  * v8 (this file): v7's big tiles in clusters of KSEEK_BIG_CLUSTER (2) CTAs along n, as cuBLAS runs them (its
//    "1x2"): the pair's tiles (tm, tn) and (tm, tn + 1) read the same A k-blocks, so each CTA copies half of A's
//    256 rows, multicast into both, and its own W: a CTA's L2 reads a k-block go from 48 KB to 32 KB. v5 tried
//    clusters along m at 128 x 128 (W shared: 32 KB -> 24 KB) and lost 1 to 3%. Barriers as v5's: empty[s]
//    counts the reading warps of both CTAs (each consumer warp arrives on the empty barrier of every CTA of its
//    cluster), so a producer's copy into the peer's stage waits for the peer's readers too; full[s] expects the
//    shares of A that start before m and the CTA's own W (none for a tile column past n); a cluster barrier after
//    the barriers' init and one before exit. Where the driver places no cluster, v7's kernel. Written without a
//    GPU (nvcc 13.0: 168 registers, no spills; one UTMALDG.2D.MULTICAST and no MEMBAR in the main loop). On an
//    H100: correct, sanitizers clean, the clusters inside the noise (8192^3 1.506 ms against v7's 1.519).
//  * v9: v8 and KSEEK_PHASES (0 by default: the same code as v8): 1 makes each CTA log where its time
//    goes (globaltimer at its start and end; per consumer warpgroup, the SM's cycles waiting for its turn, for a
//    tile's first k-block, in the main loops and in the epilogues), read by kseek_gemm_phases()
//    (lab/gemm_bias_gelu/tools/phases.py prints them). Nsight Compute had 2048^3 at 1.5x cuBLAS's time with the
//    same 128 CTAs of 256 x 128 tiles (42.9 us against 28.3), and could not say in which phase. The log did: on an
//    H100, a consumer's epilogue took 8.5 us of a 256 x 128 tile's 30 (the main loop ran at 99% of the tensor
//    peak), and 6 us of each 128 x 128 tile at 8192 x 3072 x 768, as long as its main loop. Without the GELU
//    (KSEEK_GELU 3, a measurement only) the epilogue took as long: the cost is the stores. Each st.global of
//    4 bytes a thread writes 8 rows of out: 128 of them a thread a tile.
//  * v10: the epilogue through shared memory (KSEEK_TMA_STORE, 1 by default): each warpgroup's tile
//    goes out in slabs of 64 columns, each written to a staged slab by stmatrix (four 8 x 8 matrices of bf16 an
//    instruction, straight from the accumulator's fragment: 32 a thread a 128 x 128 tile, not 128 stores) and
//    stored by one TMA store, which writes nothing past m or n (no bounds checks). Where n % 8 != 0 or out is
//    not 16-byte aligned, v9's epilogue. v6 staged its tile with 4-byte st.shared (as many as v4's stores). On
//    an H100: 199/199 shape checks, 18/18, sanitizers clean; 8192 x 3072 x 768 0.109 -> 0.078 ms, 2048^3 0.040
//    -> 0.034, the large squares 4 to 10% faster; 1.066x the best library over 18 (v8: no difference).
//  * v11: v10's dispatch as its screens advised on an H100. The big tiles from k >= 2048
//    (KSEEK_BIG_MIN_K; 4096 where the epilogue stores from registers, KSEEK_BIG_MIN_K_REGS: 4095^3 lost 2%) where
//    they fill 90% of the SMs (KSEEK_BIG_FILL; 2048^3 is 128 tiles on 132): 2048 x 8192 x 2048 5% and 2048^3 2 to
//    4% faster. 8 stages for the narrow tiles (KSEEK_NARROW_STAGES; cuBLAS runs 8 there): 1024^3 7% faster.
//    On an H100: 199/199, 18/18, sanitizers clean, 1.073x the best library (1.04x to 1.10x).
//  * v12: the epilogue where TMA cannot store into out (n % 8 != 0, or out not 16-byte aligned: the
//    odd shapes) stages each slab as v10 does, then each warp copies whole rows of it out, 32 lanes on 32
//    consecutive columns (KSEEK_ODD_STAGE, 1 by default; 0: v11's stores from registers, 2-byte ones where n is
//    odd, each instruction writing 8 rows). v10's phase log had 4095^3's epilogue at 22 us a 128 x 128 tile
//    against 27 us of main loop. And the big tiles without clusters by default (KSEEK_BIG_CLUSTER 1: v7's kernel):
//    v8's screen on an H100 had the pair 11% slower at 4096 x 4097 x 4096 and 2% at 4096^3, 1 to 2% faster at
//    8192^3 and 4096 x 11008 x 4096; v10 and v11 kept v8's default (2). KSEEK_BIAS_PREFETCH (0 by default, for
//    the screen): each tile's bias loaded at its start and kept in shared memory, where the epilogue's first
//    loads of it waited on L2. Written without a GPU.
//  * v13: v12 with the GELU in 12 instructions and a reciprocal instead of 15 (nvcc 13's SASS
//    after the bias add; KSEEK_GELU 4, the default; 2 is v12's). The phase log of v12 on an H100 had the
//    activation at 2.6 of the 4.3 us of a 2048^3 big tile's epilogue and at 2.9 of each ping-pong tile's 5.1 us
//    at 8192 x 3072 x 768 (KSEEK_GELU 3 against 2). The same A-S 7.1.28 erfc, rewritten: gelu(v) = max(v, 0) -
//    |v| q with q = erfc(|v| / sqrt(2)) / 2 (for v < 0 that is v q, for v >= 0 v - v q: no select, and no
//    cancellation where v < 0; FFMA takes |v| as an operand), and 1 / sqrt(2) and the 1 / 2 folded into the
//    polynomial's coefficients (a_i 2^(1/16) 2^(-i/2): (2^(1/16) P)^16 = 2 P^16). The same values to float32
//    rounding: of 2,000,001 points of [-8, 8] with |gelu| > 2.6e-4, v12's form rounds to another bf16 than the
//    exact GELU on 9,050 and this one on 9,057; the two differ on 69 (numpy's float32, rcp exact).
//  * v14: v13 and two knobs for a measurement, both off by default (v13's dispatch and values). At 1000^3 the main
//    loop ran at 28% of the tensor peak where 1024^3's, the same 128 tiles of 16 k-blocks, ran at 83% (phase
//    logs of v10 and v12 on H100s). Its rows are 2000 bytes, so 7 of every 8 rows of a TMA box start off a
//    128-byte line. KSEEK_PAD_K 1: where k % 64 != 0, both operands go through the repack into rows of k
//    rounded up to 64 (zeros past k), so every box row is one aligned 128-byte line. KSEEK_L2_PROMO (3: 256
//    bytes, as before; 2: 128, 1: 64, 0: none): the tensor maps' L2 promotion, which on an unaligned row may
//    fetch lines that no box reads. The repack copies 16 bytes a load where a row's chunks are whole (k % 8 == 0
//    and a 16-byte aligned source: only KSEEK_PAD_K's copies).
//  * v15: v14's knobs set as its screen and phase log on an H100 advised. Padded rows put 1000^3's
//    main loop at 3.15 us instead of 8.2 (81% of the tensor peak), but repacking both aligned operands cost more
//    than that (0.0159 against 0.0154 ms); where the repack runs anyway (k % 8 != 0, as 333 x 777 x 999) padding
//    its rows to 64 made the shape 10% faster (0.0150 against 0.0168 ms). So KSEEK_PAD_K 2 (the default): pad
//    only where an operand is repacked anyway. No L2 promotion (KSEEK_L2_PROMO 0): 1000^3 0.0144 against 0.0154
//    ms, its main loop 7.0 against 8.2 us with 128 bytes; the other screened shapes inside the noise.
//  * v16: v15 with the GEMM launched after a repack as a programmatic dependent launch (KSEEK_PDL, 1
//    by default; 0: v15). The repack and the GEMM were two launches one after the other: at 1000^3 with padded
//    rows (KSEEK_PAD_K 1) the repack cost ~6 us where its 8 MB of traffic takes ~3 at the copy rate. Now the repack
//    lets its dependents launch at its start (griddepcontrol.launch_dependents), so the GEMM's CTAs set up their
//    barriers and registers while it runs, and every thread of the GEMM waits (griddepcontrol.wait: the repack
//    complete and its writes visible) before the first copy or any other access to global memory but the phase
//    log (whose CTA spans then include the wait). No deadlock: the GEMM launches only once every CTA of the repack
//    has run the trigger or exited, so no repack CTA is left waiting for an SM that a waiting GEMM CTA holds. Only
//    after our own repack; where the launch with the attribute fails, the plain launch. Written without a GPU.
//  * v17: v16 with the repack of unaligned rows (k % 8 != 0, or a base off 16 bytes: 4095^3, 8192 x
//    8192 x 4095, 333 x 777 x 999) reading 16-byte words (KSEEK_REPACK_WIDE, 1 by default; 0: v16). v16 built
//    each 16-byte chunk of the copy from 16 two-byte loads, each warp instruction touching 16 sectors for 64
//    useful bytes; 4095^3 ran 67 us longer than 4096^3, of which moving its 128 MB through the repack at the
//    copy rate is ~43. Now a chunk comes from the one or two aligned words of the row that hold it (two coalesced
//    loads, a select of words and a funnel shift), the second read only where the chunk reaches into it, and no
//    word past the tensor's last one (that chunk keeps v16's loads). Written without a GPU. On an H100
//    (2026-12-06, one call's screen): the wide repack inside the noise (4095^3 0.2616 against 0.2640 ms without
//    it); the dependent launch 333 x 777 x 999 0.0133 against 0.0153 ms but 4095^3 0.300 against 0.262 ms (phase
//    log: the main loop 121.6 against 99.1 us a CTA with it).
//  * v18: v17 with the dependent launch only where the GEMM is one wave (KSEEK_PDL 2, the default: no
//    more tile units than resident CTAs, so a launch gap is a share of the call worth saving; 1: after every
//    repack, v17; 0: never) and the producer's waits for a free stage sleeping on the barrier (KSEEK_WAIT_HINT 1,
//    the default: try_wait's suspend-time hint; 0: polling, v17). Attention's Nsight Compute profile on an H100
//    showed its polling producer warp issuing 46M of the kernel's 525M warp instructions, slots taken from the
//    consumer warps that share its scheduler. On an H100 (2026-12-06): 4095^3 0.2605 ms (v17's rule 0.2988),
//    333 x 777 x 999 0.0133 ms (no dependent launch 0.0152); the sleeping wait inside the noise; 199/199 shape
//    checks, 18/18, sanitizers clean, 1.145x the best library over the full set.
//  * v19 (released): v18 with these comments brought up to date; the code is v18's (the same cubin).
//  * v22 (this file; lab only, written without a GPU): decode-like m (2..KSEEK_SMALL_M) on wide, long problems
//    through gemm_skinny_ring: W streamed through a ring of TMA stages in shared memory instead of loaded straight
//    into registers, as cuBLASLt's kernel at m = 16 does (Nsight Compute, session 57: its warps waited on loads
//    14.1 of every 18.7 cycles, gemm_skinny's 19.5 of 24.7; twice the bytes in flight a warp, v20, moved nothing).
//    A cluster of KSEEK_RING_SPLIT CTAs shares one 16 x 128 tile of out, each CTA an equal share of k; the
//    partial sums meet through distributed shared memory in rank order (deterministic). KSEEK_RING 0: v19.
//
// Math:   out[i, j] = gelu(sum_p a[i, p] * w[j, p] + bias[j]),  gelu(v) = v/2 * (1 + erf(v / sqrt(2)))
// Layout: a [m, k] row-major, w [n, k] (nn.Linear's weight), bias [n], out [m, n]; bf16 in and out, fp32
//         accumulation, one rounding to bf16 at the end (round to nearest even). Legacy default stream.
//
// Four kernels:
//  * gemm_wgmma<BN, PP, TM, CL> (m > KSEEK_SMALL_M and m*n*k > KSEEK_TINY): a persistent CTA of 3 warpgroups (384 threads)
//    per SM taking 128 x BN tiles of out (BN = KSEEK_BN, or 64 where KSEEK_BN's tiles would leave SMs idle) in a
//    grouped order (KSEEK_GROUP_M tile rows at a time, so that the CTAs running together share A's and W's tiles
//    in L2). Warpgroup 0 is the producer: one thread issues the TMA copies of A [128 x 64] and W [BN x 64]
//    k-blocks (128-byte swizzle, zero fill past every edge) into a ring of ST stages, each guarded by two
//    mbarriers (full: the copy engine's bytes landed; empty: its consumers finished reading it). Warpgroups 1 and
//    2 are the consumers: ping-pong (PP, where the tiles outnumber the SMs), warpgroup c takes the CTA's tiles c,
//    c + 2, ..., 2 wgmma m64nBNk16 a k-step (rows 0-63 and 64-127); cooperative (one tile a CTA, or
//    KSEEK_PINGPONG 0), both take every tile, 64 rows each. On the large shapes (k >= KSEEK_BIG_MIN_K and enough
//    tiles, big_tiles_fit) the tiles are 256 x 128, cooperative, each consumer 128 rows (cuBLAS's tile). One
//    commit group per k-block with one group left in flight; then the epilogue (+ bias, GELU, one rounding to
//    bf16): each warpgroup's tile written by stmatrix into staged slabs of 64 columns in shared memory and
//    stored by TMA (KSEEK_TMA_STORE; where n % 8 != 0 or out is off 16 bytes, the warps copy the slabs out by
//    rows, KSEEK_ODD_STAGE). setmaxnreg moves registers from the producer to the consumers. After a repack,
//    where the GEMM is one wave, it is a programmatic dependent launch of the repack (KSEEK_PDL).
//  * gemm_skinny (m <= KSEEK_SMALL_M or m*n*k <= KSEEK_TINY, k % 8 == 0, a and w 16-byte aligned, m >= 2): a CTA
//    of KSEEK_SK_WARPS warps owns 16 rows x 16 columns of out; each warp takes an equal contiguous share of k in
//    chunks of 64 and runs mma.sync
//    m16n8k16 on fragments loaded straight from global memory (16-byte loads; a fixed permutation of k inside
//    each 32-element step, the same for A and W, so every lane's 16 bytes feed two mma), then the warps' sums
//    meet in shared memory in a fixed order (deterministic).
//  * gemm_small (the same shapes where skinny cannot read: k % 8 != 0 or unaligned, and k == 0): CUDA cores. A
//    CTA of 256 threads owns 4 columns of out and up to MR (1 or 16) rows; its threads split k, then reduce.
//  * repack: TMA needs a 16-byte aligned base and row strides that are multiples of 16 bytes. Where k % 8 != 0 or
//    a / w is not 16-byte aligned, that operand is copied into a zero-padded [rows, kp] scratch (kp = k rounded
//    up to 8; a cudaMalloc'd buffer kept between calls and grown when too small; both operands in one launch), then
//    the aligned path runs.
//
// Invariants of gemm_wgmma (read these before changing it):
//  * Shared memory: [ST][128][64] bf16 of A, then [ST][BN][64] of W, then full[ST], empty[ST] (8-byte mbarriers).
//    Each stage of A and W starts on a 1024-byte boundary: the 128-byte swizzle repeats every 8 rows of 128 bytes
//    (16-byte chunk c of row r sits at chunk c ^ (r % 8)), and the wgmma descriptors assume that phase.
//  * Descriptors (K-major, 128-byte swizzle): start address >> 4, LBO 16 (unused when swizzled K-major), SBO
//    1024 (one group of 8 rows of 128 bytes), mode 1 (128 B) in bits 62-63. Stepping 16 elements along k inside
//    the 128-byte row is +32 bytes on the start address; rows 64-127 of A start 64 * 128 bytes on.
//  * Barrier phases: the producer walks the CTA's tiles j = 0, 1, ... and their k-blocks, counting k-blocks in
//    `it` (tile j's k-block kb is it = j * kblocks + kb); stage s = it % ST, round = it / ST. full[s] (count 1:
//    the producer's arrive.expect_tx, plus the TMA transaction bytes) completes once per round: consumers wait
//    parity round & 1. empty[s] (count: lane 0 of each warp that reads the stage, 4 ping-pong, 8 cooperative)
//    completes once per round after those reads: the producer waits parity (round & 1) ^ 1, which a fresh barrier
//    passes at once (round 0).
//  * A parity wait cannot tell round r from round r - 2: a consumer may wait for k-block it only once k-block
//    it - ST has landed. Cooperative consumers read every k-block in order, so that holds. Ping-pong consumers skip
//    the other's tiles: warpgroup c starts tile j's main loop only after the other finished tile j - 1's (named
//    barrier 1 + c: bar.sync by the waiting warpgroup, bar.arrive by the other; 256 threads), so every earlier
//    k-block has landed. That turn-taking is also what makes the epilogues overlap the other's main loop.
//  * A stage is released only after the wgmma that read it completed: k-block kb's empty arrive follows
//    wgmma.wait_group 1 issued after k-block kb+1's commit (or wait_group 0 at the tile's end).
//  * The TMA box is always full-size in shared memory (out-of-range elements are zero-filled), so every full[s]
//    expects exactly A_BYTES + B_BYTES; the zero rows/columns contribute nothing to the tile, and the epilogue
//    never stores past m or n.
//  * Accumulator fragment of m64nNk16 (per wgmma): warp wi of the warpgroup holds rows 16 wi + lane / 4 (+ 8),
//    and acc[4 j + 2 r + e] is row (lane / 4 + 8 r), column 8 j + 2 (lane % 4) + e.
//
// Compile-time knobs (screened by lab/gemm_bias_gelu/device_run.sh screen): KSEEK_PINGPONG (0 never, 1 where
// the tiles outnumber the SMs, 2 always), KSEEK_BN (64, 128; 192 and 256 are cooperative only: a ping-pong
// warpgroup holds BN accumulators a thread), KSEEK_STAGES, KSEEK_GELU, KSEEK_GROUP_M, KSEEK_SMALL_M, KSEEK_TINY,
// KSEEK_SKINNY, KSEEK_SKINNY_MIN_M, KSEEK_SK_WARPS, KSEEK_NARROW_TILES, KSEEK_PERSIST (0: a CTA a tile).
//
// Link with -lcuda (cuTensorMapEncodeTiled): kernels/load.py's build and the harness do.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#ifndef KSEEK_PINGPONG
#define KSEEK_PINGPONG 1  // ping-pong (a tile per consumer warpgroup) 0: never, 1: where tiles > SMs, 2: always
#endif
#ifndef KSEEK_BN
#define KSEEK_BN 128  // the wide tile's columns
#endif
// KSEEK_STAGES: k-blocks in flight; by default 5, or as many as shared memory holds where fewer (4 at BN 256)
#ifndef KSEEK_GELU
#define KSEEK_GELU 4  // 0: erff; 1: the tanh form, tanh.approx.f32; 2: erf through A-S 7.1.28 (exact to bf16);
                      // 4: 2 in 12 instructions, not 15 (v13)
#endif
#if KSEEK_GELU == 3 && !KSEEK_PHASES
#error "KSEEK_GELU 3 (no activation) is a measurement of tools/phases.py, in KSEEK_PHASES builds only"
#endif
#ifndef KSEEK_GROUP_M
#define KSEEK_GROUP_M 4  // tile rows walked together in the persistent order (L2 reuse of W's tiles)
#endif
#ifndef KSEEK_SMALL_M
#define KSEEK_SMALL_M 16  // m up to this takes gemm_skinny (or gemm_small)
#endif
#ifndef KSEEK_TINY
#define KSEEK_TINY (1 << 22)  // m * n * k up to this too (launch-bound sizes: 128^3 is 2^21)
#endif
#ifndef KSEEK_SKINNY
#define KSEEK_SKINNY 1  // 0: those shapes take gemm_small (CUDA cores) instead
#endif
#ifndef KSEEK_SKINNY_MIN_M
#define KSEEK_SKINNY_MIN_M 2  // m below this takes gemm_small even where gemm_skinny could (m = 1: 16.3 us vs 17.9)
#endif
#ifndef KSEEK_RING
#define KSEEK_RING 1  // 1: gemm_skinny_ring where ring_fits (below); 0: gemm_skinny there, as v19
#endif
#ifndef KSEEK_RING_SPLIT
#define KSEEK_RING_SPLIT 4  // gemm_skinny_ring's CTAs a cluster, each a share of k (1, 2, 4 or 8)
#endif
#ifndef KSEEK_RING_STAGES
#define KSEEK_RING_STAGES 8  // its k-blocks in flight a CTA (18 KB each)
#endif
#ifndef KSEEK_RING_MIN_N
#define KSEEK_RING_MIN_N 1024  // the ring only where n and k are at least these (the scenarios' m = 16 x 4096 x
#endif
#ifndef KSEEK_RING_MIN_K
#define KSEEK_RING_MIN_K 1024  // 4096); smaller problems keep gemm_skinny
#endif
#ifndef KSEEK_SK_WARPS
#define KSEEK_SK_WARPS 8  // gemm_skinny's warps a CTA, each an equal share of k (8 or 16)
#endif
#ifndef KSEEK_PERSIST
#define KSEEK_PERSIST 1  // 1: one CTA per SM looping over tiles; 0: one CTA per tile
#endif
#ifndef KSEEK_NARROW_TILES
#define KSEEK_NARROW_TILES 1  // 128 x 64 tiles where the WIDE ones number fewer than this x the SMs (0: never)
#endif
#ifndef KSEEK_BIG_TILES
#define KSEEK_BIG_TILES 1  // 256 x 128 cooperative tiles on the large shapes (below, big_tiles_fit); 0: never
#endif
#ifndef KSEEK_BIG_CLUSTER
#define KSEEK_BIG_CLUSTER 1  // CTAs a cluster along n for the big tiles, sharing A's k-blocks by multicast (1: none)
#endif
#ifndef KSEEK_BIG_MIN_K
#define KSEEK_BIG_MIN_K 2048  // where k is at least this (the cooperative epilogue is not hidden: short k loses)
#endif
#ifndef KSEEK_BIG_MIN_K_REGS
#define KSEEK_BIG_MIN_K_REGS 4096  // the same where the epilogue stores from registers (no TMA store: n % 8 != 0)
#endif
#ifndef KSEEK_BIG_FILL
#define KSEEK_BIG_FILL 90  // and the big tiles number this percent of the SMs or more (2048^3: 128 tiles on 132)
#endif
#ifndef KSEEK_NARROW_STAGES
#define KSEEK_NARROW_STAGES 8  // at most this many stages for the narrow tiles (cuBLAS runs 8 at 1000^3)
#endif
#ifndef KSEEK_TMA_STORE
#define KSEEK_TMA_STORE 1  // 1: the epilogue stages out in shared memory (stmatrix) and stores it with TMA; 0: v9's
#endif
#ifndef KSEEK_PDL
#define KSEEK_PDL 2  // 2: the GEMM after a repack is a programmatic dependent launch of it where it is one wave; 1:
                     // after every repack (v16); 0: two plain launches
#endif
#ifndef KSEEK_WAIT_HINT
#define KSEEK_WAIT_HINT 1  // 1: the producer's waits for a free stage sleep on the barrier (try_wait's time hint); 0: poll
#endif
#ifndef KSEEK_REPACK_WIDE
#define KSEEK_REPACK_WIDE 1  // 1: the repack reads unaligned rows by aligned 16-byte words (v17); 0: 2 bytes a load
#endif
#ifndef KSEEK_PAD_K
#define KSEEK_PAD_K 2  // where k % 64 != 0, both operands repacked into rows of k rounded up to 64: 1 always,
                       // 2 where an operand is repacked anyway (v15), 0 never (v14's default)
#endif
#ifndef KSEEK_L2_PROMO
#define KSEEK_L2_PROMO 0  // the tensor maps' L2 promotion: 0 none (v15), 1 64 bytes, 2 128, 3 256 (v14)
#endif
#ifndef KSEEK_BIAS_PREFETCH
#define KSEEK_BIAS_PREFETCH 0  // 1: each tile's bias loaded at the tile's start, kept in shared memory for its epilogue
#endif
#ifndef KSEEK_ODD_STAGE
#define KSEEK_ODD_STAGE 1  // 1: where TMA cannot store into out, the slabs are staged and copied out by rows
#endif
#ifndef KSEEK_PRODUCER_REGS
#define KSEEK_PRODUCER_REGS 40
#endif
#ifndef KSEEK_CONSUMER_REGS
#define KSEEK_CONSUMER_REGS 232  // 128 * 40 + 256 * 232 <= 65536
#endif

#ifndef KSEEK_PHASES
#define KSEEK_PHASES 0
#endif

namespace kseek_gemm {

#if KSEEK_PHASES
// per CTA (blockIdx.x < PHASE_CTAS): [0] globaltimer (ns) at its start, [1 + c] at consumer c's end; from [3 + 5 c]
// consumer c's SM cycles waiting for its turn, for a tile's first k-block, in main loops, in epilogues; its tiles
constexpr int PHASE_CTAS = 1024, PHASE_SLOTS = 13;
__device__ unsigned long long phase_log[PHASE_CTAS][PHASE_SLOTS];
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
#define KSEEK_PHASE(x) x
#else
#define KSEEK_PHASE(x)
#endif

constexpr int BM = 128, BK = 64;  // BM: every tile's rows but the big tiles' (BIG_TM)
constexpr int BIG_TM = 256;
constexpr int WIDE = KSEEK_BN, NARROW = 64;  // the tile's columns: WIDE, or NARROW where WIDE leaves SMs idle
constexpr int NCONS = 2;                    // consumer warpgroups
constexpr int THREADS = 128 * (NCONS + 1);  // + the producer warpgroup
constexpr int SMEM_LIMIT = 232448;          // an H100/H200 CTA's dynamic shared memory (227 KiB)
template <int BN, bool PP, int TM_ = BM, int CL = 1> struct Tile {
  static constexpr int TM = TM_;                      // the tile's rows (a ping-pong warpgroup takes all 128)
  static constexpr int A_BYTES = TM * BK * 2;          // one stage of A: TM rows of 128 bytes
  static constexpr int B_BYTES = BN * BK * 2;          // one stage of W: BN rows of 128 bytes
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int ROWS = PP ? TM : TM / NCONS;  // the rows a consumer warpgroup computes
  static constexpr int MSUB = ROWS / 64;              // m64 wgmmas a consumer issues per k-step
  // KSEEK_TMA_STORE: a consumer's staged slabs of out, [ROWS][64] bf16 each, OUT_BUFS of them (2 where that costs
  // no stage, so that one slab is written while the store of the one before reads; else 1), after the stages
  static constexpr int OUT_SLAB = ROWS * 128;
  // KSEEK_BIAS_PREFETCH: each consumer's copy of its tile's BN bias values, after the staged slabs
  static constexpr int BIAS_BYTES = KSEEK_BIAS_PREFETCH && KSEEK_TMA_STORE ? NCONS * BN * 2 : 0;
  static constexpr int fit(int out_bytes) {
    return (SMEM_LIMIT - 1024 - 128 - BIAS_BYTES - out_bytes) / STAGE_BYTES;
  }
  static constexpr int CAP = BN == 64 ? KSEEK_NARROW_STAGES : 5;  // 7 lost to 5 at 8192^3 (v3's screen)
  static constexpr int capped(int stages) { return stages > CAP ? CAP : stages; }
  static constexpr int OUT_BUFS = !KSEEK_TMA_STORE                                          ? 0
                                  : capped(fit(2 * NCONS * OUT_SLAB)) == capped(fit(0)) ? 2
                                                                                            : 1;
  static constexpr int OUT_BYTES = OUT_BUFS * NCONS * OUT_SLAB;
#ifdef KSEEK_STAGES
  static constexpr int ST = KSEEK_STAGES;
#else
  static constexpr int ST = capped(fit(OUT_BYTES));  // 1 KiB alignment slack, 16 B a stage
#endif
  static constexpr int SMEM = 1024 /* alignment slack */ + ST * STAGE_BYTES + OUT_BYTES + BIAS_BYTES + 2 * ST * 8;
  static constexpr int READERS = (PP ? 4 : 4 * NCONS) * CL;  // warps that read each stage, in every CTA of the cluster
  static constexpr int A_ROWS = TM / CL;  // the rows of A's k-block one CTA copies (its TMA box), multicast to all
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "BN: a wgmma N and a TMA box side (<= 256)");
  static_assert(!PP || BN <= 128, "ping-pong: BN accumulators a thread; 192 and 256 would spill");
  static_assert(MSUB * BN <= 256, "a consumer's accumulators: 2 x 128 or 1 x 256 columns at most");
  static_assert(TM == 128 || (TM == 256 && !PP), "rows: 128, or 256 cooperative (a TMA box side is <= 256)");
  static_assert(CL == 1 || (CL == 2 && !PP), "clusters of 2 CTAs for the cooperative kernel only");
  static_assert(A_ROWS % 8 == 0, "each CTA's share of A starts on a swizzle phase (8 rows of 128 bytes)");
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "every stage must keep the swizzle's 1024-byte phase");
  static_assert(ST >= 2 && SMEM <= SMEM_LIMIT, "at least 2 stages, within an H100/H200 CTA's shared memory");
};
static_assert(128 * KSEEK_PRODUCER_REGS + 128 * NCONS * KSEEK_CONSUMER_REGS <= 65536, "register file");

// ------------------------------------------------------------------------------------------------
// PTX helpers (adapted from kernels/attention_fwd_sm90/attention_fwd_sm90.cu)
// ------------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
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
// the same wait with try_wait's suspend-time hint: the warp sleeps until the phase completes (or the hint's time
// passes) instead of issuing a poll every few cycles (KSEEK_WAIT_HINT, the producer's waits for a free stage)
__device__ __forceinline__ void mbar_wait_free(uint32_t bar, uint32_t parity) {
  if (!KSEEK_WAIT_HINT) return mbar_wait(bar, parity);
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done) : "r"(bar), "r"(parity), "n"(0x989680) : "memory");
  } while (!done);
}
// 2-d tile copy global -> shared, completing on `bar` (c0: the element along k, c1: the row)
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
// The same copy landing in every CTA of the cluster named in `mask` (at the same shared-memory offset in each), each
// completing on its own mbarrier at `bar`'s offset (v5's)
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                                      uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "h"(mask)
      : "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster (release/acquire: what each did before is seen after)
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// The same without the release: after fence.mbarrier_init.release.cluster, which orders the barriers' init
__device__ __forceinline__ void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;\nbarrier.cluster.wait;\n" ::: "memory");
}
// Arrive on the mbarrier at `bar`'s offset in the cluster's CTA `rank` (this one included), with the default
// semantics (release at CTA scope): the reads it releases are wgmma's, complete at wgmma.wait_group (v5: a
// .release.cluster arrive compiles to MEMBAR.ALL.GPU before every arrive)
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads/writes of the accumulator registers across wgmma issue/wait: wgmma writes
// them asynchronously, after its asm statement has "returned".
template <int N> __device__ __forceinline__ void reg_fence(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// Shared-memory matrix descriptor, 128-byte swizzle, in its two 32-bit words: bits 0-13 start address >> 4,
// 16-29 LBO >> 4, 32-45 SBO >> 4, 62-63 the swizzle mode (1 = 128 B). Only the low word moves between k-steps
// and stages (valid while the start address stays under 256 KiB, which shared memory always does).
struct Desc {
  uint32_t lo, hi;
};
__device__ __forceinline__ Desc desc_base(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return {((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16), (sbo >> 4) | (1u << 30)};
}
__device__ __forceinline__ uint64_t desc_at(Desc d, uint32_t offset16) {  // offset16: bytes / 16 from the base
  return ((uint64_t)d.hi << 32) | (d.lo + offset16);
}

// ---- generated wgmma wrappers (tools/gen_wgmma.py): GENERATED BEGIN
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n192(float (&d)[96], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
    : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_ss_n256(float (&d)[128], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
    : "l"(da), "l"(db), "r"(accumulate));
}

// ---- GENERATED END

template <int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int accumulate) {
  if constexpr (N == 64) wgmma_ss_n64(d, da, db, accumulate);
  if constexpr (N == 128) wgmma_ss_n128(d, da, db, accumulate);
  if constexpr (N == 192) wgmma_ss_n192(d, da, db, accumulate);
  if constexpr (N == 256) wgmma_ss_n256(d, da, db, accumulate);
}

// Named barriers 1 and 2: the ping-pong consumers' turns (bar.sync waits for the 256 arrivals: this warpgroup's
// 128 and the other's bar.arrive)
__device__ __forceinline__ void turn_wait(int id) { asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory"); }
__device__ __forceinline__ void turn_pass(int id) { asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory"); }
// one consumer warpgroup's 128 threads (named barriers 3 and 4; 1 and 2 are the ping-pong turns)
__device__ __forceinline__ void warpgroup_sync(int id) { asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory"); }

// The TMA store of one staged slab (2-d: c0 the column, c1 the row; nothing is written past m or n), its bulk
// group, and the waits: until at most N groups are still reading shared memory, or until every store is done
template <int N> __device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Programmatic dependent launch (KSEEK_PDL): the waiting side blocks until the grids it depends on have completed
// and their writes are visible (a no-op in a grid launched without the attribute); the other side lets its
// dependents launch now, before it ends (what they may touch before they wait is theirs to keep to)
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// this thread's shared-memory writes made visible to the async proxy (the TMA store that reads them)
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ unsigned short ld_shared_u16(uint32_t addr) {
  unsigned short v;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t ld_shared_u32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void st_shared_u16(uint32_t addr, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(addr), "h"(v) : "memory");
}
// four 8 x 8 matrices of bf16: lane l gives row l % 8 of matrix l / 8 its address; register i holds, as the mma
// fragment does, row lane / 4 of matrix i, columns 2 (lane % 4) and + 1 (the lower half the first)
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, const uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]), "r"(r[1]),
               "r"(r[2]), "r"(r[3])
               : "memory");
}

__device__ __forceinline__ float gelu(float v) {
#if KSEEK_GELU == 1
  // v/2 (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))): tanh.approx.f32's error (~2^-11) is below bf16's rounding
  const float h = 0.5f * v, u = v * fmaf(0.0356774081f, v * v, 0.7978845608f);
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
  return fmaf(h, t, h);
#elif KSEEK_GELU == 2
  // erfc(t) = 1 / (1 + a1 t + ... + a6 t^6)^16 for t = |v| / sqrt(2) (Abramowitz & Stegun 7.1.28, |error| <= 3e-7;
  // the power overflows to inf and its reciprocal to 0 far out); gelu = v/2 erfc(t) for v < 0, v - v/2 erfc(t)
  // else: the negative tail keeps its relative accuracy (no 1 - erf cancellation)
  const float t = fabsf(v) * 0.70710678118654752f;
  float p = fmaf(fmaf(fmaf(fmaf(fmaf(4.30638e-5f, t, 2.765672e-4f), t, 1.520143e-4f), t, 9.2705272e-3f), t,
                      4.22820123e-2f), t, 7.05230784e-2f);
  p = fmaf(p, t, 1.f);
  p *= p;
  p *= p;
  p *= p;
  p *= p;
  float e;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(p));
  const float h = 0.5f * v * e;
  return v < 0.f ? h : v - h;
#elif KSEEK_GELU == 4
  // 2's erfc in 12 instructions and the reciprocal: q = erfc(|v| / sqrt(2)) / 2 = 1 / (2^(1/16) P(|v| /
  // sqrt(2)))^16, the two constants in the coefficients (b_0 = 2^(1/16), b_i = a_i 2^(1/16) 2^(-i/2)); gelu(v) =
  // max(v, 0) - |v| q: v q for v < 0, v - v q for v >= 0. Far out the power overflows to inf and q to 0.
  const float t = fabsf(v);
  float p = fmaf(fmaf(fmaf(fmaf(fmaf(5.621299664e-6f, t, 5.105520901e-5f), t, 3.968613701e-5f), t, 3.422739239e-3f), t,
                      2.207699846e-2f), t, 5.207516304e-2f);
  p = fmaf(p, t, 1.044273782f);
  p *= p;
  p *= p;
  p *= p;
  p *= p;
  float q;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(q) : "f"(p));
  return fmaf(-t, q, fmaxf(v, 0.f));
#elif KSEEK_GELU == 3
  return v;  // not GELU: for tools/phases.py only, the epilogue's cost without the activation (wrong results)
#else
  return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
#endif
}

// Tile t of the persistent order: groups of KSEEK_GROUP_M tile rows, column by column inside a group (the CTAs
// that run at the same time read a few rows of A and a band of W's columns, which stay in L2).
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = KSEEK_GROUP_M * tiles_n;
  const int g = t / per_group, first = g * KSEEK_GROUP_M;
  const int rows = min(tiles_m - first, KSEEK_GROUP_M);
  const int r = t - g * per_group;
  tm = first + r % rows;
  tn = r / rows;
}

// ------------------------------------------------------------------------------------------------
// gemm_wgmma: TMA + wgmma, producer warpgroup + 2 consumer warpgroups, persistent over 128 x BN tiles
// ------------------------------------------------------------------------------------------------
// KSEEK_BIAS_PREFETCH: the warpgroup's thread t (t < BN) loaded bias[col_first + t] at the tile's start (0 past n),
// `mine`; here, after the main loop, it lands in the warpgroup's copy (sbias), which the barrier publishes. A
// thread's reads of the copy for the tile before all lie before barriers of that tile's epilogue, so no write here
// can overtake them.
template <int BN>
__device__ __forceinline__ void stage_bias(uint32_t sbias, unsigned short mine, int t, int cw) {
  if (t < BN) st_shared_u16(sbias + 2 * t, mine);
  warpgroup_sync(3 + cw);
}

// The bias of this lane's column pairs in the slab from column col0: b[q] for columns col0 + 8 q + 2 (lane % 4)
// and + 1, 0 past n. From the warpgroup's copy where there is one (sbias != 0), else from global memory, a pair a
// load where bias is 4-byte aligned (bias2).
__device__ __forceinline__ void slab_bias(float2 (&b)[8], const __nv_bfloat16* __restrict__ bias, uint32_t sbias,
                                          bool bias2, int n, int col_first, int col0, int lane) {
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const int col = col0 + 8 * q + 2 * (lane & 3);
    if (sbias) {  // the copy holds 0 past n
      const uint32_t pair = ld_shared_u32(sbias + 2 * (col - col_first));
      b[q] = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&pair));
    } else if (col >= n) {
      b[q] = make_float2(0.f, 0.f);
    } else if (bias2) {
      b[q] = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(bias + col));
    } else {
      b[q] = make_float2(__bfloat162float(bias[col]), col + 1 < n ? __bfloat162float(bias[col + 1]) : 0.f);
    }
  }
}

// One slab's outputs (columns 64 slab.. of the warpgroup's tile) + bias, GELU, rounded to bf16 and packed as the
// stmatrix x4 instructions take them: pk[ms][q2][x] is matrix x of the q2-th x4 of rows 64 ms.., that is rows
// 8 (x % 2).. of the warp's 16, column group 2 q2 + x / 2 of the slab (b[q]: the bias of column group q, this
// lane's pair). slab must be known at compile time (an unrolled loop), or acc goes to local memory.
template <int BN, int MSUB>
__device__ __forceinline__ void pack_slab(const float (&acc)[MSUB][BN / 2], const float2 (&b)[8], int slab,
                                          uint32_t (&pk)[MSUB][4][4]) {
#pragma unroll
  for (int ms = 0; ms < MSUB; ++ms) {
#pragma unroll
    for (int q2 = 0; q2 < 4; ++q2) {
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int q = 2 * q2 + (x >> 1), jj = 8 * slab + q, r = x & 1;
        const __nv_bfloat162 v = __floats2bfloat162_rn(gelu(acc[ms][4 * jj + 2 * r] + b[q].x),
                                                       gelu(acc[ms][4 * jj + 2 * r + 1] + b[q].y));
        pk[ms][q2][x] = *reinterpret_cast<const uint32_t*>(&v);
      }
    }
  }
}

// KSEEK_TMA_STORE's epilogue of one consumer warpgroup (rows row_first.., columns col_first.. of out): + bias, GELU,
// one rounding to bf16, then slab by slab of 64 columns: the slab's values packed in registers, stmatrix into a
// staged buffer, one TMA store by the warpgroup's first thread. The buffer has the TMA box's 128-byte swizzle
// (16-byte chunk c of row r at chunk c ^ (r % 8)), so the 8 rows of each 8 x 8 matrix land in 8 different chunks:
// no bank conflict. Buffers rotate over the warpgroup's slabs (`slabs` counts them, over its tiles): before one is
// written again, the store that read it last must have read it (at most OUT_BUFS - 1 groups still reading). bias2:
// bias is 4-byte aligned (one load a pair). n % 8 == 0 here, so col < n, col even, has col + 1 < n.
template <int BN, int MSUB, int OUT_BUFS>
__device__ __forceinline__ void epilogue_tma(const float (&acc)[MSUB][BN / 2], const CUtensorMap* tm_out,
                                             uint32_t bufs, const __nv_bfloat16* __restrict__ bias, int m, int n,
                                             int row_first, int col_first, int cw, int wi, int lane, bool bias2,
                                             uint32_t sbias, unsigned short bias_mine, int& slabs) {
  constexpr int SLAB = MSUB * 64 * 128;
  const bool leader = wi == 0 && lane == 0;
  if (sbias) stage_bias<BN>(sbias, bias_mine, 32 * wi + lane, cw);
  const int i = lane >> 3, rr = lane & 7;  // the matrix of an x4 whose row rr this lane addresses
#pragma unroll
  for (int slab = 0; slab < BN / 64; ++slab) {
    const int col0 = col_first + 64 * slab;
    if (row_first >= m || col0 >= n) break;  // the same in every thread of the warpgroup
    float2 b[8];
    slab_bias(b, bias, sbias, bias2, n, col_first, col0, lane);
    uint32_t pk[MSUB][4][4];
    pack_slab<BN, MSUB>(acc, b, slab, pk);
    const uint32_t buf = bufs + (uint32_t)(slabs % OUT_BUFS) * SLAB;
    if (leader) bulk_wait_read<OUT_BUFS - 1>();  // the store that last read this buffer has read it
    warpgroup_sync(3 + cw);
#pragma unroll
    for (int ms = 0; ms < MSUB; ++ms) {
      const int row = ms * 64 + 16 * wi + 8 * (i & 1) + rr;  // row % 8 == rr
#pragma unroll
      for (int q2 = 0; q2 < 4; ++q2)
        stmatrix_x4(buf + row * 128 + (((2 * q2 + (i >> 1)) ^ rr) << 4), pk[ms][q2]);
    }
    fence_proxy_async();  // each thread's writes, before the barrier that lets the leader's store read them
    warpgroup_sync(3 + cw);
    if (leader) {
      tma_store_2d(tm_out, buf, col0, row_first);
      bulk_commit();
    }
    ++slabs;
  }
}

// KSEEK_ODD_STAGE's epilogue, where TMA cannot store into out (n % 8 != 0 or out not 16-byte aligned): each slab of
// 64 columns packed and staged by stmatrix as epilogue_tma stages it, then copied out row by row, warp wi taking
// rows wi, wi + 4, ..., its 32 lanes 32 consecutive columns: one 2-byte store a lane, 64 contiguous bytes a warp
// (rows of an odd n start on any 2-byte boundary). Nothing is written past m or n. The first barrier keeps a slab
// from overwriting a buffer whose last slab some warp still reads; the second makes the slab's writes visible.
template <int BN, int MSUB, int OUT_BUFS>
__device__ __forceinline__ void epilogue_staged(const float (&acc)[MSUB][BN / 2], uint32_t bufs,
                                                const __nv_bfloat16* __restrict__ bias,
                                                __nv_bfloat16* __restrict__ out, int m, int n, int row_first,
                                                int col_first, int cw, int wi, int lane, uint32_t sbias,
                                                unsigned short bias_mine, int& slabs) {
  constexpr int SLAB = MSUB * 64 * 128, ROWS = MSUB * 64;
  if (sbias) stage_bias<BN>(sbias, bias_mine, 32 * wi + lane, cw);
  const int i = lane >> 3, rr = lane & 7;  // the matrix of an x4 whose row rr this lane addresses
  unsigned short* const out16 = reinterpret_cast<unsigned short*>(out);
#pragma unroll  // acc's index must be known at compile time, or acc goes to local memory
  for (int slab = 0; slab < BN / 64; ++slab) {
    const int col0 = col_first + 64 * slab;
    if (row_first >= m || col0 >= n) break;  // the same in every thread of the warpgroup
    float2 b[8];
    slab_bias(b, bias, sbias, false, n, col_first, col0, lane);  // bias may sit on any 2-byte boundary here
    uint32_t pk[MSUB][4][4];
    pack_slab<BN, MSUB>(acc, b, slab, pk);
    const uint32_t buf = bufs + (uint32_t)(slabs % OUT_BUFS) * SLAB;
    warpgroup_sync(3 + cw);  // every warp has copied out the slab this buffer held before
#pragma unroll
    for (int ms = 0; ms < MSUB; ++ms) {
      const int row = ms * 64 + 16 * wi + 8 * (i & 1) + rr;  // row % 8 == rr
#pragma unroll
      for (int q2 = 0; q2 < 4; ++q2) stmatrix_x4(buf + row * 128 + (((2 * q2 + (i >> 1)) ^ rr) << 4), pk[ms][q2]);
    }
    warpgroup_sync(3 + cw);  // the slab is written
    const int cols = min(64, n - col0), rows = min(ROWS, m - row_first);
#pragma unroll 4
    for (int row = wi; row < rows; row += 4) {
      unsigned short* const dst = out16 + (size_t)(row_first + row) * n + col0;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int c = lane + 32 * half;  // chunk c / 8 of the row sits at chunk (c / 8) ^ (row % 8)
        if (c < cols) dst[c] = ld_shared_u16(buf + row * 128 + ((((c >> 3) ^ (row & 7)) << 4) | ((c & 7) << 1)));
      }
    }
    ++slabs;
  }
}

template <int BN, bool PP, int TM_, int CL>
__global__ void __launch_bounds__(THREADS, 1)
    gemm_wgmma(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
               const __grid_constant__ CUtensorMap tmOut, const __nv_bfloat16* __restrict__ bias, __nv_bfloat16* __restrict__ out, int m, int n, int kblocks,
               int tiles_m, int tiles_n, int vec_out) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // a build without sm_90a's features (-arch=sm_90a's compute_90 PTX too): never chosen on an sm_90a GPU
#else
  using T = Tile<BN, PP, TM_, CL>;
  constexpr int ST = T::ST, MSUB = T::MSUB, A_BYTES = T::A_BYTES, B_BYTES = T::B_BYTES, TM = T::TM;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t sA = (raw + 1023) & ~1023u;  // the swizzle pattern repeats every 1024 bytes
  const uint32_t sB = sA + ST * A_BYTES;
  const uint32_t sOut = sB + ST * B_BYTES;  // KSEEK_TMA_STORE's staged slabs (each 1024-byte aligned)
  const uint32_t sBias = sOut + T::OUT_BYTES;  // KSEEK_BIAS_PREFETCH's copies of the tiles' bias
  const uint32_t bar = sBias + T::BIAS_BYTES;
  auto full = [&](int s) { return bar + 8 * s; };
  auto empty = [&](int s) { return bar + 8 * (ST + s); };
  // The cluster's units of 1 tile row x CL tile columns (CL = 1: a unit is a tile); every CTA of a cluster walks
  // the same ones, rank r taking the unit's column r (past n where tiles_n is not a multiple of CL: its W is not
  // copied and nothing is stored, but its share of A is, for the others)
  const int units_n = (tiles_n + CL - 1) / CL, units = tiles_m * units_n;
  const int cid = (int)blockIdx.x / CL, clusters = (int)gridDim.x / CL;
  const int rank = CL > 1 ? (int)cluster_rank() : 0;
  const int jtiles = (units - cid + clusters - 1) / clusters;  // this cluster's units (>= 1)
  auto coords = [&](int j, int& tm, int& tn) {
    tile_coords(cid + j * clusters, tiles_m, units_n, tm, tn);
    tn = tn * CL + rank;
  };
  const int tid = threadIdx.x, wg = tid >> 7;

  KSEEK_PHASE(if (tid == 0 && blockIdx.x < PHASE_CTAS) phase_log[blockIdx.x][0] = global_ns());
  if (tid == 0) {
    for (int s = 0; s < ST; ++s) {
      mbar_init(full(s), 1);             // the producer's arrive.expect_tx (+ the copies' bytes)
      mbar_init(empty(s), T::READERS);   // lane 0 of every warp that reads the stage
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (CL > 1) {
    cluster_sync_relaxed();  // the peer's barriers exist before any copy or arrive reaches them
  } else {
    __syncthreads();
  }
  grid_dependency_wait();  // KSEEK_PDL: the repack's rows written, before any copy reads them

  if (wg == 0) {
    // Producer warpgroup: gives its registers to the consumers; one thread issues every copy.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(KSEEK_PRODUCER_REGS));
    if (tid == 0) {
      int it = 0;  // k-blocks issued so far, over all of this CTA's tiles
      for (int j = 0; j < jtiles; ++j) {
        int tm, tn;
        coords(j, tm, tn);
        // What lands in each CTA's stage: the shares of A's rows that start before m (a share wholly past m is
        // copied by no CTA, so that no copy depends on how TMA counts a box with no element inside the tensor;
        // every CTA of the cluster counts the same ones), and its own W unless its tile column lies past n
        const int a_shares = min(CL, (m - tm * TM + T::A_ROWS - 1) / T::A_ROWS);
        const bool w_rows = tn < tiles_n;
        const uint32_t stage_bytes = a_shares * T::A_ROWS * BK * 2 + (w_rows ? B_BYTES : 0);
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
          const int s = it % ST;
          // round 0: a fresh barrier passes parity 1 at once; with clusters, empty[s] counts the readers of every
          // CTA, so the stage is free in the peer too before this copy writes into it
          mbar_wait_free(empty(s), ((it / ST) & 1) ^ 1);
          mbar_expect_tx(full(s), stage_bytes);
          if constexpr (CL > 1) {
            if (rank < a_shares)
              tma_load_2d_multicast(sA + s * A_BYTES + rank * T::A_ROWS * 128, &tmA, full(s), kb * BK,
                                    tm * TM + rank * T::A_ROWS, (uint16_t)((1u << CL) - 1));
          } else {
            tma_load_2d(sA + s * A_BYTES, &tmA, full(s), kb * BK, tm * TM);
          }
          if (w_rows) tma_load_2d(sB + s * B_BYTES, &tmW, full(s), kb * BK, tn * BN);
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(KSEEK_CONSUMER_REGS));
    // which consumer; the shuffle tells the compiler it is warp-uniform
    const int cw = __shfl_sync(0xffffffffu, wg, 0) - 1;
    const int wi = (tid >> 5) & 3, lane = tid & 31;
    const int row0 = PP ? 0 : cw * T::ROWS;  // the first of the tile's rows this warpgroup computes
    const Desc da = desc_base(sA + row0 * 128, 16, 1024), db = desc_base(sB, 16, 1024);
    // a stage is read: one arrive a warp on its empty barrier in every CTA of the cluster
    auto release = [&](int s) {
      if (lane == 0) {
        if constexpr (CL > 1) {
#pragma unroll
          for (int r = 0; r < CL; ++r) mbar_arrive_cluster(empty(s), r);
        } else {
          mbar_arrive(empty(s));
        }
      }
    };
    float acc[MSUB][BN / 2];
    int slabs = 0;  // slabs this warpgroup staged (KSEEK_TMA_STORE): they rotate over its OUT_BUFS buffers
    KSEEK_PHASE(unsigned long long ph[5] = {}; long long t_mark = clock64();)
    for (int j = PP ? cw : 0; j < jtiles; j += PP ? 2 : 1) {
      int tm, tn;
      coords(j, tm, tn);
      // KSEEK_BIAS_PREFETCH: thread t of the warpgroup loads the tile's bias value t now; the load completes
      // under the main loop, and the epilogue takes the value from the warpgroup's copy in shared memory
      unsigned short bias_mine = 0;
      const uint32_t sbias = T::BIAS_BYTES && (vec_out & 4 || KSEEK_ODD_STAGE) ? sBias + cw * BN * 2 : 0;
      if (sbias && (tid & 127) < BN && tn * BN + (tid & 127) < n)
        bias_mine = reinterpret_cast<const unsigned short*>(bias)[tn * BN + (tid & 127)];
      if (PP && j > 0) turn_wait(1 + cw);  // the other warpgroup's main loop of tile j - 1 is done
      KSEEK_PHASE(long long t_now = clock64(); ph[0] += t_now - t_mark; t_mark = t_now; ++ph[4];)
      int it = j * kblocks;                              // the producer's count at this tile's first k-block
      for (int kb = 0; kb < kblocks; ++kb, ++it) {
        const int s = it % ST;
        mbar_wait(full(s), (it / ST) & 1);
        KSEEK_PHASE(if (kb == 0) { t_now = clock64(); ph[1] += t_now - t_mark; t_mark = t_now; })
#pragma unroll
        for (int ms = 0; ms < MSUB; ++ms) reg_fence(acc[ms]);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
#pragma unroll
          for (int ms = 0; ms < MSUB; ++ms) {
            // K-major operands: 16 elements along k inside a swizzled 128-byte row is +32 bytes
            wgmma_ss<BN>(acc[ms], desc_at(da, (s * A_BYTES + ms * 64 * 128 + kk * 32) / 16),
                         desc_at(db, (s * B_BYTES + kk * 32) / 16), kb > 0 || kk > 0);  // first: overwrite acc
          }
        }
        wgmma_commit();
#pragma unroll
        for (int ms = 0; ms < MSUB; ++ms) reg_fence(acc[ms]);
        wgmma_wait<1>();  // every group but this k-block's is complete: k-block kb - 1's stage is read
#pragma unroll
        for (int ms = 0; ms < MSUB; ++ms) reg_fence(acc[ms]);
        if (kb > 0) release((it - 1) % ST);
      }
      wgmma_wait<0>();
#pragma unroll
      for (int ms = 0; ms < MSUB; ++ms) reg_fence(acc[ms]);
      release((it - 1) % ST);  // the tile's last stage (kblocks >= 1 on this path)
      if (PP && j + 1 < jtiles) turn_pass(1 + ((j + 1) & 1));  // tile j + 1's warpgroup may start
      KSEEK_PHASE(t_now = clock64(); ph[2] += t_now - t_mark; t_mark = t_now;)

      if constexpr (T::OUT_BUFS > 0) {
        if (vec_out & 4) {  // n % 8 == 0 and out 16-byte aligned: tmOut is out's map
          epilogue_tma<BN, MSUB, T::OUT_BUFS>(acc, &tmOut, sOut + cw * T::OUT_BUFS * T::OUT_SLAB, bias, m, n,
                                              tm * TM + row0, tn * BN, cw, wi, lane, vec_out & 2, sbias, bias_mine,
                                              slabs);
          KSEEK_PHASE(t_now = clock64(); ph[3] += t_now - t_mark; t_mark = t_now;)
          continue;
        }
        if (KSEEK_ODD_STAGE) {  // where TMA cannot store into out: staged, copied out by rows
          epilogue_staged<BN, MSUB, T::OUT_BUFS>(acc, sOut + cw * T::OUT_BUFS * T::OUT_SLAB, bias, out, m, n,
                                                 tm * TM + row0, tn * BN, cw, wi, lane, sbias, bias_mine, slabs);
          KSEEK_PHASE(t_now = clock64(); ph[3] += t_now - t_mark; t_mark = t_now;)
          continue;
        }
      }

      // Epilogue from registers: + bias, GELU, one rounding to bf16. vec_out bit 0: n even and out 4-byte aligned,
      // so the pair (col, col + 1) is one aligned 4-byte store; bit 1: bias 4-byte aligned too (one load). Full
      // tiles with both bits: no bounds checks; else every store is checked against m and n.
      const int row_base = tm * TM + row0 + wi * 16 + (lane >> 2);
      const int col_base = tn * BN + 2 * (lane & 3);
      if (vec_out == 3 && tm * TM + TM <= m && tn * BN + BN <= n) {
#pragma unroll
        for (int jj = 0; jj < BN / 8; ++jj) {
          const int col = col_base + 8 * jj;
          const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(bias + col));
#pragma unroll
          for (int ms = 0; ms < MSUB; ++ms) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              const int row = row_base + 64 * ms + 8 * r;
              *reinterpret_cast<__nv_bfloat162*>(out + (size_t)row * n + col) = __floats2bfloat162_rn(
                  gelu(acc[ms][4 * jj + 2 * r] + b.x), gelu(acc[ms][4 * jj + 2 * r + 1] + b.y));
            }
          }
        }
        KSEEK_PHASE(t_now = clock64(); ph[3] += t_now - t_mark; t_mark = t_now;)
        continue;
      }
#pragma unroll
      for (int jj = 0; jj < BN / 8; ++jj) {
        const int col = col_base + 8 * jj;
        if (col < n) {
          const float b0 = __bfloat162float(bias[col]);
          const float b1 = col + 1 < n ? __bfloat162float(bias[col + 1]) : 0.f;
#pragma unroll
          for (int ms = 0; ms < MSUB; ++ms) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              const int row = row_base + 64 * ms + 8 * r;
              if (row < m) {
                const float v0 = gelu(acc[ms][4 * jj + 2 * r] + b0), v1 = gelu(acc[ms][4 * jj + 2 * r + 1] + b1);
                __nv_bfloat16* p = out + (size_t)row * n + col;
                if (vec_out & 1) {
                  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(v0, v1);
                } else {
                  p[0] = __float2bfloat16(v0);
                  if (col + 1 < n) p[1] = __float2bfloat16(v1);
                }
              }
            }
          }
        }
      }
      KSEEK_PHASE(t_now = clock64(); ph[3] += t_now - t_mark; t_mark = t_now;)
    }
    if constexpr (T::OUT_BUFS > 0) {
      if ((tid & 127) == 0) bulk_wait_all();  // the warpgroup's stores are done before its shared memory goes
    }
#if KSEEK_PHASES
    if ((tid & 127) == 0 && blockIdx.x < PHASE_CTAS) {
      phase_log[blockIdx.x][1 + cw] = global_ns();
      for (int q = 0; q < 5; ++q) phase_log[blockIdx.x][3 + 5 * cw + q] = ph[q];
    }
#endif
  }
  if constexpr (CL > 1) cluster_sync();  // the peer's consumers may still arrive on this CTA's empty barriers
#endif
}

// ------------------------------------------------------------------------------------------------
// gemm_small: CUDA cores, for m <= KSEEK_SMALL_M (decode-like), k == 0 and tiny problems
// ------------------------------------------------------------------------------------------------
constexpr int SMALL_THREADS = 256, SMALL_WARPS = SMALL_THREADS / 32, SMALL_COLS = 4;

__device__ __forceinline__ void unpack8(uint4 r, float (&f)[8]) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

// A warp's reduce-scatter of N values per lane (N a power of 2): each step halves the values a lane holds and
// adds its partner's matching half (lanes with bit O set keep the upper half). Once one value is left, plain xor
// sums. Afterwards lane L holds, in v[i] for i < max(N / 32, 1), the warp's sum of value
// i + max(N / 32, 1) * (L >> S), S = 5 - log2(N / max(N / 32, 1)) (see small_index).
template <int C, int O, int N>
__device__ __forceinline__ void fold(float (&v)[N], int lane) {
  if constexpr (O >= 1) {
    if constexpr (C >= 2) {
      constexpr int H = C / 2;
      const bool upper = (lane & O) != 0;
#pragma unroll
      for (int i = 0; i < H; ++i) {
        const float send = upper ? v[i] : v[i + H];
        const float keep = upper ? v[i + H] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
      }
      fold<H, O / 2, N>(v, lane);
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], O);
      fold<1, O / 2, N>(v, lane);
    }
  }
}
__host__ __device__ constexpr int ilog2(int x) { return x <= 1 ? 0 : 1 + ilog2(x / 2); }

template <int MR, bool VEC>
__global__ void __launch_bounds__(SMALL_THREADS)
    gemm_small(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ w,
               const __nv_bfloat16* __restrict__ bias, __nv_bfloat16* __restrict__ out, int m, int n, int k) {
  constexpr int N = MR * SMALL_COLS;  // outputs of the CTA: acc[r * SMALL_COLS + c] is row i0 + r, column j0 + c
  constexpr int CF = N >= 32 ? N / 32 : 1, S = 5 - ilog2(N / CF);
  __shared__ float red[SMALL_WARPS][N];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int j0 = blockIdx.x * SMALL_COLS, i0 = blockIdx.y * MR;
  const int rows = min(MR, m - i0), cols = min(SMALL_COLS, n - j0);
  const uint16_t* a16 = reinterpret_cast<const uint16_t*>(a);
  const uint16_t* w16 = reinterpret_cast<const uint16_t*>(w);
  float acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = 0.f;

  if constexpr (VEC) {  // k % 8 == 0, a and w 16-byte aligned: 8 elements a thread per step
    for (int p = threadIdx.x * 8; p < k; p += SMALL_THREADS * 8) {
      float wv[SMALL_COLS][8];
#pragma unroll
      for (int c = 0; c < SMALL_COLS; ++c) {
        if (c < cols) {
          unpack8(__ldg(reinterpret_cast<const uint4*>(w16 + (size_t)(j0 + c) * k + p)), wv[c]);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) wv[c][e] = 0.f;
        }
      }
#pragma unroll
      for (int r = 0; r < MR; ++r) {
        if (r < rows) {
          float av[8];
          unpack8(__ldg(reinterpret_cast<const uint4*>(a16 + (size_t)(i0 + r) * k + p)), av);
#pragma unroll
          for (int c = 0; c < SMALL_COLS; ++c)
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[r * SMALL_COLS + c] = fmaf(av[e], wv[c][e], acc[r * SMALL_COLS + c]);
        }
      }
    }
  } else {  // any alignment, any k: element by element
    for (int p = threadIdx.x; p < k; p += SMALL_THREADS) {
      float wv[SMALL_COLS];
#pragma unroll
      for (int c = 0; c < SMALL_COLS; ++c)
        wv[c] = c < cols ? __uint_as_float((uint32_t)__ldg(w16 + (size_t)(j0 + c) * k + p) << 16) : 0.f;
#pragma unroll
      for (int r = 0; r < MR; ++r) {
        if (r < rows) {
          const float av = __uint_as_float((uint32_t)__ldg(a16 + (size_t)(i0 + r) * k + p) << 16);
#pragma unroll
          for (int c = 0; c < SMALL_COLS; ++c) acc[r * SMALL_COLS + c] = fmaf(av, wv[c], acc[r * SMALL_COLS + c]);
        }
      }
    }
  }

  fold<N, 16, N>(acc, lane);
  if ((lane & ((1 << S) - 1)) == 0) {
#pragma unroll
    for (int i = 0; i < CF; ++i) red[warp][i + CF * (lane >> S)] = acc[i];
  }
  __syncthreads();
  if (threadIdx.x < N) {
    const int r = threadIdx.x / SMALL_COLS, c = threadIdx.x % SMALL_COLS;
    if (r < rows && c < cols) {
      float sum = 0.f;
#pragma unroll
      for (int q = 0; q < SMALL_WARPS; ++q) sum += red[q][threadIdx.x];  // the same order every call
      out[(size_t)(i0 + r) * n + j0 + c] = __float2bfloat16(gelu(sum + __bfloat162float(bias[j0 + c])));
    }
  }
}

// ------------------------------------------------------------------------------------------------
// repack: src [rows, k] (any 2-byte alignment) -> dst [rows, kp] (kp % 8 == 0, 16-byte aligned), zeros past k
// ------------------------------------------------------------------------------------------------
struct RepackJob {
  const uint16_t* src;
  uint16_t* dst;
  int rows;
};

// KSEEK_REPACK_WIDE: the 16 bytes that start `shift` bytes (even, 0 to 14) into the aligned word w0[0], from
// w0[0] and, only where they reach into it, w0[1]; elements from `valid` (1 to 8) on read as zero. The words are
// chosen by the shift's two upper bits (whole words), then each output word is a funnel shift of two of them by
// the last 0 or 2 bytes.
__device__ __forceinline__ uint4 unaligned_chunk(const uint4* w0, unsigned shift, int valid) {
  const uint4 lo = w0[0];
  const uint4 hi = shift + 2 * valid > 16 ? w0[1] : make_uint4(0u, 0u, 0u, 0u);
  const bool two = shift & 8, one = shift & 4;  // whole words to skip: 2 and 1
  const uint32_t v[6] = {two ? lo.z : lo.x, two ? lo.w : lo.y, two ? hi.x : lo.z,
                         two ? hi.y : lo.w, two ? hi.z : hi.x, two ? hi.w : hi.y};
  uint32_t w[5];
#pragma unroll
  for (int j = 0; j < 5; ++j) w[j] = one ? v[j + 1] : v[j];
  const unsigned bits = (shift & 3) * 8;  // 0 or 16
  uint32_t o[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t keep = (2 * j < valid ? 0x0000FFFFu : 0u) | (2 * j + 1 < valid ? 0xFFFF0000u : 0u);
    o[j] = __funnelshift_r(w[j], w[j + 1], bits) & keep;
  }
  return make_uint4(o[0], o[1], o[2], o[3]);
}
// blockIdx.y: which of the (one or two) operands
__global__ void __launch_bounds__(256) repack(RepackJob job0, RepackJob job1, int k, int kp) {
  if (KSEEK_PDL) launch_dependents();  // the GEMM may launch and set up; it waits for this grid before reading
  const RepackJob job = blockIdx.y ? job1 : job0;
  const uint16_t* __restrict__ src = job.src;
  uint16_t* __restrict__ dst = job.dst;
  const long long per_row = kp / 8, total = (long long)job.rows * per_row;
  // rows of whole 16-byte chunks (k % 8 == 0, src 16-byte aligned, so every chunk before k is whole)
  const bool whole = k % 8 == 0 && (reinterpret_cast<uintptr_t>(src) & 15) == 0;
  const uint16_t* end = src + (long long)job.rows * k;  // one past the tensor's last element
  for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < total;
       c += (long long)gridDim.x * blockDim.x) {
    const long long row = c / per_row;
    const int p0 = (int)(c - row * per_row) * 8;
    const uint16_t* s = src + row * k;
    uint4* to = reinterpret_cast<uint4*>(dst + row * kp + p0);
    if (whole) {  // KSEEK_PAD_K's copies of aligned rows: 16 bytes a load, zeros past k
      *to = p0 < k ? *reinterpret_cast<const uint4*>(s + p0) : make_uint4(0u, 0u, 0u, 0u);
      continue;
    }
    const int valid = k - p0 < 8 ? k - p0 : 8;  // this chunk's elements inside the row
    if (valid <= 0) {
      *to = make_uint4(0u, 0u, 0u, 0u);
      continue;
    }
    const uintptr_t at = reinterpret_cast<uintptr_t>(s + p0);
    const uint4* w0 = reinterpret_cast<const uint4*>(at & ~static_cast<uintptr_t>(15));
    // the aligned word that holds the chunk's first byte lies inside the tensor (its base's allocation starts
    // on 16 bytes or more; its end is checked here), and w0[1] is read only for bytes of this row
    if (KSEEK_REPACK_WIDE && reinterpret_cast<uintptr_t>(w0 + 1) <= reinterpret_cast<uintptr_t>(end)) {
      *to = unaligned_chunk(w0, static_cast<unsigned>(at & 15), valid);
      continue;
    }
    uint32_t v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t lo = p0 + 2 * i < k ? s[p0 + 2 * i] : 0u, hi = p0 + 2 * i + 1 < k ? s[p0 + 2 * i + 1] : 0u;
      v[i] = lo | (hi << 16);
    }
    *to = make_uint4(v[0], v[1], v[2], v[3]);
  }
}


// ------------------------------------------------------------------------------------------------
// gemm_skinny: mma.sync m16n8k16 for m <= KSEEK_SMALL_M and tiny problems (k % 8 == 0, a and w 16-byte aligned)
// ------------------------------------------------------------------------------------------------
constexpr int SK_WARPS = KSEEK_SK_WARPS, SK_THREADS = 32 * SK_WARPS, SK_ROWS = 16, SK_COLS = 16;

// D += A B, A 16 x 16 row-major (a0: row g, k 2q..2q+1; a1: row g + 8; a2, a3: k + 8), B 16 x 8 K-major (b0: col g,
// k 2q..2q+1; b1: k + 8), D (c0, c1: row g, cols 2q, 2q + 1; c2, c3: row g + 8), g = lane / 4, q = lane % 4
__device__ __forceinline__ void mma_16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                          uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// 16 bytes from global memory where `pred`, else zeros. An asm volatile, so that the loads of a step stay ahead of
// its mma (also asm volatile) and all are in flight at once: the compiler interleaved plain loads with the mma.
__device__ __forceinline__ uint4 ld16(const uint4* p, bool pred) {
  uint4 v;
  asm volatile(
      "{\n.reg .pred q;\nsetp.ne.b32 q, %5, 0;\nmov.b32 %0, 0;\nmov.b32 %1, 0;\nmov.b32 %2, 0;\nmov.b32 %3, 0;\n"
      "@q ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n}\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "r"((int)pred));
  return v;
}

// Each lane loads 8 consecutive elements (16 bytes) of its rows at p = base + 8 q of a 32-element step; words 0, 1
// of them are the mma's k 2q..2q+1 and 2q+8..2q+9 of one k16 step, words 2, 3 of the next. A and W use the same
// permutation of k, so each step's sum is over the same 16 elements of k.
__global__ void __launch_bounds__(SK_THREADS)
    gemm_skinny(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ w,
                const __nv_bfloat16* __restrict__ bias, __nv_bfloat16* __restrict__ out, int m, int n, int k) {
  __shared__ float red[SK_WARPS][SK_ROWS][SK_COLS];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int j0 = blockIdx.x * SK_COLS, i0 = blockIdx.y * SK_ROWS;
  const int chunks = (k + 63) >> 6;  // of 64 elements; warp `warp` takes chunks [c0, c1)
  const int c0 = (int)((long long)chunks * warp / SK_WARPS), c1 = (int)((long long)chunks * (warp + 1) / SK_WARPS);
  const bool ra0 = i0 + g < m, ra1 = i0 + g + 8 < m, wb0 = j0 + g < n, wb1 = j0 + g + 8 < n;
  // row pointers (row 0 where the row is past the edge: never read, but a valid address); k % 8 == 0 and 16-byte
  // aligned bases make every row 16-byte aligned
  const uint4* pa0 = reinterpret_cast<const uint4*>(a + (size_t)(ra0 ? i0 + g : 0) * k);
  const uint4* pa1 = reinterpret_cast<const uint4*>(a + (size_t)(ra1 ? i0 + g + 8 : 0) * k);
  const uint4* pw0 = reinterpret_cast<const uint4*>(w + (size_t)(wb0 ? j0 + g : 0) * k);
  const uint4* pw1 = reinterpret_cast<const uint4*>(w + (size_t)(wb1 ? j0 + g + 8 : 0) * k);
  float acc[2][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][e] = 0.f;

  // Software-pipelined by hand: chunk c + 1's loads are issued before chunk c's mma, so a warp keeps 8 16-byte loads
  // a lane in flight (ptxas otherwise sinks each load next to its mma, and only ~3 are in flight).
  constexpr int H = 2;  // 32-element steps a chunk
  uint4 va0[H], va1[H], vw0[H], vw1[H];
#pragma unroll
  for (int u = 0; u < H; ++u) {
    const int p = c0 * 64 + u * 32 + 8 * q;
    const bool in = c0 < c1 && p < k;  // k % 8 == 0: the lane's 8 elements are all in or all out
    va0[u] = ld16(pa0 + (p >> 3), in && ra0);
    va1[u] = ld16(pa1 + (p >> 3), in && ra1);
    vw0[u] = ld16(pw0 + (p >> 3), in && wb0);
    vw1[u] = ld16(pw1 + (p >> 3), in && wb1);
  }
  for (int c = c0; c < c1; ++c) {
    uint4 na0[H], na1[H], nw0[H], nw1[H];
#pragma unroll
    for (int u = 0; u < H; ++u) {
      const int p = (c + 1) * 64 + u * 32 + 8 * q;
      const bool in = c + 1 < c1 && p < k;
      na0[u] = ld16(pa0 + (p >> 3), in && ra0);
      na1[u] = ld16(pa1 + (p >> 3), in && ra1);
      nw0[u] = ld16(pw0 + (p >> 3), in && wb0);
      nw1[u] = ld16(pw1 + (p >> 3), in && wb1);
    }
#pragma unroll
    for (int u = 0; u < H; ++u) {
      mma_16816(acc[0], va0[u].x, va1[u].x, va0[u].y, va1[u].y, vw0[u].x, vw0[u].y);
      mma_16816(acc[0], va0[u].z, va1[u].z, va0[u].w, va1[u].w, vw0[u].z, vw0[u].w);
      mma_16816(acc[1], va0[u].x, va1[u].x, va0[u].y, va1[u].y, vw1[u].x, vw1[u].y);
      mma_16816(acc[1], va0[u].z, va1[u].z, va0[u].w, va1[u].w, vw1[u].z, vw1[u].w);
    }
#pragma unroll
    for (int u = 0; u < H; ++u) {
      va0[u] = na0[u];
      va1[u] = na1[u];
      vw0[u] = nw0[u];
      vw1[u] = nw1[u];
    }
  }
#pragma unroll
  for (int gi = 0; gi < 2; ++gi) {
    red[warp][g][8 * gi + 2 * q] = acc[gi][0];
    red[warp][g][8 * gi + 2 * q + 1] = acc[gi][1];
    red[warp][g + 8][8 * gi + 2 * q] = acc[gi][2];
    red[warp][g + 8][8 * gi + 2 * q + 1] = acc[gi][3];
  }
  __syncthreads();
  const int row = threadIdx.x / SK_COLS, col = threadIdx.x % SK_COLS;  // the first 256 threads: the 16 x 16 outputs
  if (threadIdx.x < SK_ROWS * SK_COLS && i0 + row < m && j0 + col < n) {
    float sum = 0.f;
#pragma unroll
    for (int q2 = 0; q2 < SK_WARPS; ++q2) sum += red[q2][row][col];  // the same order every call
    out[(size_t)(i0 + row) * n + j0 + col] = __float2bfloat16(gelu(sum + __bfloat162float(bias[j0 + col])));
  }
}
static_assert(SK_THREADS >= SK_ROWS * SK_COLS, "one thread an output in the reduction");

// ------------------------------------------------------------------------------------------------
// gemm_skinny_ring (v22): m <= KSEEK_SMALL_M with W through a ring of TMA stages in shared memory
// ------------------------------------------------------------------------------------------------
// A cluster of RING_SPLIT CTAs owns 16 rows x RING_BN columns of out; CTA rank r streams k-blocks [kb r / S,
// kb (r + 1) / S) of its W rows and of A's 16 rows, one producer lane issuing the copies (both boxes 128-byte
// swizzled, as the wgmma kernel's), four consumer warps each running mma.sync on 32 of the W rows with fragments
// from ldmatrix. Then each CTA's partial tile goes to its shared memory, and rank r sums its share of the columns
// over the cluster's CTAs in rank order (the same order every call), adds the bias and stores gelu of it.
constexpr int RING_BN = 128, RING_ROWS = 16, RING_ST = KSEEK_RING_STAGES, RING_SPLIT = KSEEK_RING_SPLIT;
constexpr int RING_CONSUMERS = 4, RING_THREADS = 32 * (RING_CONSUMERS + 1);  // + one producer warp
constexpr int RING_W_BYTES = RING_BN * BK * 2, RING_A_BYTES = RING_ROWS * BK * 2;  // a stage: 16 KB + 2 KB
constexpr int RING_PART_BYTES = RING_ROWS * RING_BN * 4;                             // the partial tile, fp32
constexpr int RING_SMEM = 1024 + RING_ST * (RING_W_BYTES + RING_A_BYTES) + RING_PART_BYTES + 16 * RING_ST;
static_assert(RING_SPLIT == 1 || RING_SPLIT == 2 || RING_SPLIT == 4 || RING_SPLIT == 8, "a portable cluster size");
static_assert(RING_BN % RING_SPLIT == 0 && RING_BN == 32 * RING_CONSUMERS, "each consumer warp: 32 W rows");
static_assert(RING_SMEM <= SMEM_LIMIT, "the ring fits in shared memory");

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
// 16-byte chunk `chunk` of row `row` of a 128-byte swizzled box at `base` (1024-byte aligned)
__device__ __forceinline__ uint32_t swz128(uint32_t base, int row, int chunk) {
  return base + row * 128 + ((chunk ^ (row & 7)) << 4);
}
// the fp32 at `addr`'s offset in the shared memory of the cluster's CTA `rank`
__device__ __forceinline__ float ld_cluster_f32(uint32_t addr, uint32_t rank) {
  uint32_t remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
__device__ __forceinline__ void ring_cluster_sync() {
  if constexpr (RING_SPLIT > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }
}

// One consumer warp's k-block: 4 steps of k16, each one A fragment and two x4 loads of W (4 blocks of 8 columns)
__device__ __forceinline__ void ring_block(float (&acc)[4][4], uint32_t sw, uint32_t sa, int cw, int lane) {
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk) {
    uint32_t a0, a1, a2, a3;  // rows (lane & 7) + 8 ((lane >> 3) & 1), k chunk 2 kk + (lane >> 4)
    ldsm_x4(swz128(sa, (lane & 7) + 8 * ((lane >> 3) & 1), 2 * kk + (lane >> 4)), a0, a1, a2, a3);
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      uint32_t b0, b1, b2, b3;  // W rows 32 cw + 16 p + (lane & 7) + 8 (lane >> 4), k chunk 2 kk + ((lane >> 3) & 1)
      ldsm_x4(swz128(sw, 32 * cw + 16 * p + (lane & 7) + 8 * (lane >> 4), 2 * kk + ((lane >> 3) & 1)), b0, b1, b2,
              b3);
      mma_16816(acc[2 * p], a0, a1, a2, a3, b0, b1);
      mma_16816(acc[2 * p + 1], a0, a1, a2, a3, b2, b3);
    }
  }
}

// rank's share of the tile's columns: summed over the cluster in rank order, + bias, gelu, stored
__device__ __forceinline__ void ring_epilogue(uint32_t spart, const __nv_bfloat16* __restrict__ bias,
                                              __nv_bfloat16* __restrict__ out, int m, int n, int m0, int n0,
                                              int rank) {
  constexpr int COLS = RING_BN / RING_SPLIT;
  for (int idx = threadIdx.x; idx < RING_ROWS * COLS; idx += RING_THREADS) {
    const int row = idx / COLS, col = rank * COLS + idx % COLS;
    const uint32_t at = spart + (row * RING_BN + col) * 4;
    float sum = 0.f;
#pragma unroll
    for (int src = 0; src < RING_SPLIT; ++src)
      sum += RING_SPLIT > 1 ? ld_cluster_f32(at, src) : __uint_as_float(ld_shared_u32(at));
    if (m0 + row < m && n0 + col < n)
      out[(size_t)(m0 + row) * n + n0 + col] = __float2bfloat16(gelu(sum + __bfloat162float(bias[n0 + col])));
  }
}

__global__ void __launch_bounds__(RING_THREADS, 1)
    gemm_skinny_ring(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                     const __nv_bfloat16* __restrict__ bias, __nv_bfloat16* __restrict__ out, int m, int n,
                     int kblocks) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t sW = (smem_u32(smem_raw) + 1023) & ~1023u;  // the swizzle pattern repeats every 1024 bytes
  const uint32_t sA = sW + RING_ST * RING_W_BYTES;
  const uint32_t sPart = sA + RING_ST * RING_A_BYTES;
  const uint32_t bar = sPart + RING_PART_BYTES;
  auto full = [&](int s) { return bar + 8 * s; };
  auto empty = [&](int s) { return bar + 8 * (RING_ST + s); };
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int rank = RING_SPLIT > 1 ? (int)cluster_rank() : 0;
  const int n0 = (int)(blockIdx.x / RING_SPLIT) * RING_BN, m0 = (int)blockIdx.y * RING_ROWS;
  const int kb0 = (int)((long long)kblocks * rank / RING_SPLIT);
  const int kb1 = (int)((long long)kblocks * (rank + 1) / RING_SPLIT);
  if (tid == 0) {
    for (int s = 0; s < RING_ST; ++s) {
      mbar_init(full(s), 1);                // the producer's arrive.expect_tx (+ the copies' bytes)
      mbar_init(empty(s), RING_CONSUMERS);  // lane 0 of every consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (warp == RING_CONSUMERS) {
    if (lane == 0) {  // the producer: every box starts inside the tensor (m0 < m, n0 < n, kb * BK < k)
      for (int kb = kb0, it = 0; kb < kb1; ++kb, ++it) {
        const int s = it % RING_ST;
        mbar_wait_free(empty(s), ((it / RING_ST) & 1) ^ 1);  // round 0: a fresh barrier passes parity 1 at once
        mbar_expect_tx(full(s), RING_W_BYTES + RING_A_BYTES);
        tma_load_2d(sW + s * RING_W_BYTES, &tmW, full(s), kb * BK, n0);
        tma_load_2d(sA + s * RING_A_BYTES, &tmA, full(s), kb * BK, m0);
      }
    }
  } else {
    float acc[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
    for (int kb = kb0, it = 0; kb < kb1; ++kb, ++it) {
      const int s = it % RING_ST;
      mbar_wait(full(s), (it / RING_ST) & 1);
      ring_block(acc, sW + s * RING_W_BYTES, sA + s * RING_A_BYTES, warp, lane);
      __syncwarp();
      if (lane == 0) mbar_arrive(empty(s));
    }
    // the partial tile: acc[j] holds rows g and g + 8, columns 32 warp + 8 j + 2 q and the next
    float* part = reinterpret_cast<float*>(smem_raw + (sPart - smem_u32(smem_raw)));
    const int g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = 32 * warp + 8 * j + 2 * q;
      *reinterpret_cast<float2*>(part + g * RING_BN + col) = make_float2(acc[j][0], acc[j][1]);
      *reinterpret_cast<float2*>(part + (g + 8) * RING_BN + col) = make_float2(acc[j][2], acc[j][3]);
    }
  }
  ring_cluster_sync();  // every CTA's partial tile written
  ring_epilogue(sPart, bias, out, m, n, m0, n0, rank);
  ring_cluster_sync();  // no CTA leaves while a peer still reads its partial tile
}

// ------------------------------------------------------------------------------------------------
// Host side
// ------------------------------------------------------------------------------------------------
int sm_count() {
  static int sms = 0;
  if (!sms) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
      sms = 132;
  }
  return sms;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

int launch_small(const __nv_bfloat16* a, const __nv_bfloat16* w, const __nv_bfloat16* bias, __nv_bfloat16* out, int m,
                 int n, int k) {
  const bool vec = k % 8 == 0 && aligned16(a) && aligned16(w);
  const int mr = (m == 1 && vec) ? 1 : 16;
  const long long gy = (m + mr - 1) / mr;
  if (gy > 65535) return 2;
  const dim3 grid((unsigned)((n + SMALL_COLS - 1) / SMALL_COLS), (unsigned)gy);
  if (mr == 1)
    gemm_small<1, true><<<grid, SMALL_THREADS>>>(a, w, bias, out, m, n, k);  // the legacy default stream
  else if (vec)
    gemm_small<16, true><<<grid, SMALL_THREADS>>>(a, w, bias, out, m, n, k);
  else
    gemm_small<16, false><<<grid, SMALL_THREADS>>>(a, w, bias, out, m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}

bool skinny_fits(const void* a, const void* w, int m, int k) {
  return k % 8 == 0 && aligned16(a) && aligned16(w) && (m + SK_ROWS - 1) / SK_ROWS <= 65535;
}

int launch_skinny(const __nv_bfloat16* a, const __nv_bfloat16* w, const __nv_bfloat16* bias, __nv_bfloat16* out,
                  int m, int n, int k) {
  const dim3 grid((unsigned)((n + SK_COLS - 1) / SK_COLS), (unsigned)((m + SK_ROWS - 1) / SK_ROWS));
  gemm_skinny<<<grid, SK_THREADS>>>(a, w, bias, out, m, n, k);  // the legacy default stream
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}

// The repacked operands' buffer: kept between calls, grown (cudaFree waits for the work that used it) when a
// call needs more.
void* g_scratch = nullptr;
size_t g_scratch_bytes = 0;

void* scratch(size_t bytes) {
  if (bytes <= g_scratch_bytes) return g_scratch;
  if (g_scratch) cudaFree(g_scratch);
  g_scratch = nullptr;
  g_scratch_bytes = 0;
  if (cudaMalloc(&g_scratch, bytes) != cudaSuccess) {
    g_scratch = nullptr;
    cudaGetLastError();
    return nullptr;
  }
  g_scratch_bytes = bytes;
  return g_scratch;
}

int launch_repack(const RepackJob& job0, const RepackJob& job1, int jobs, int k, int kp) {
  const long long rows = jobs == 2 && job1.rows > job0.rows ? job1.rows : job0.rows;
  const long long total = rows * (kp / 8);
  const long long blocks = (total + 255) / 256, cap = 8LL * sm_count();
  repack<<<dim3((unsigned)(blocks < cap ? blocks : cap), (unsigned)jobs), 256>>>(job0, job1, k, kp);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}

// [rows, kp] row-major bf16 seen as 2-d (kp, rows); box = 64 elements of k (128 bytes: the swizzle's span) x
// box_rows rows. Elements past kp or rows read as zero.
bool make_map(CUtensorMap* map, const void* ptr, int rows, int kp, int box_rows) {
  const cuuint64_t dims[2] = {(cuuint64_t)kp, (cuuint64_t)rows};
  const cuuint64_t strides[1] = {(cuuint64_t)kp * 2};
  const cuuint32_t box[2] = {(cuuint32_t)BK, (cuuint32_t)box_rows};
  const cuuint32_t estr[2] = {1, 1};
  return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(ptr), dims, strides, box,
                                estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                (CUtensorMapL2promotion)KSEEK_L2_PROMO, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// v22's ring: decode-like m on problems wide and long enough that W's stream sets the time
bool ring_fits(int m, int n, int k) {
  return KSEEK_RING && m <= KSEEK_SMALL_M && n >= KSEEK_RING_MIN_N && k >= KSEEK_RING_MIN_K;
}

// a and w as gemm_skinny reads them (skinny_fits: k % 8 == 0, 16-byte aligned); status 3 or 4 where the driver
// does not configure or launch the clusters (the caller then takes gemm_skinny), 5 where it refuses a tensor map
int launch_ring(const __nv_bfloat16* a, const __nv_bfloat16* w, const __nv_bfloat16* bias, __nv_bfloat16* out, int m,
                int n, int k) {
  CUtensorMap ma, mw;
  if (!make_map(&ma, a, m, k, RING_ROWS) || !make_map(&mw, w, n, k, RING_BN)) return 5;
  static bool configured = false;
  if (!configured) {
    if (cudaFuncSetAttribute(gemm_skinny_ring, cudaFuncAttributeMaxDynamicSharedMemorySize, RING_SMEM) != cudaSuccess) {
      cudaGetLastError();
      return 3;
    }
    configured = true;
  }
  const long long gy = (m + RING_ROWS - 1) / RING_ROWS, gx = (long long)((n + RING_BN - 1) / RING_BN) * RING_SPLIT;
  if (gy > 65535 || gx > 0x7fffffff) return 2;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)gx, (unsigned)gy);
  cfg.blockDim = dim3(RING_THREADS);
  cfg.dynamicSmemBytes = RING_SMEM;
  cfg.stream = 0;  // the legacy default stream, as the other launches
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = RING_SPLIT;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = RING_SPLIT > 1 ? 1 : 0;
  if (cudaLaunchKernelEx(&cfg, gemm_skinny_ring, ma, mw, bias, out, m, n, (k + BK - 1) / BK) != cudaSuccess) {
    cudaGetLastError();
    return 4;
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}

// The clusters of CL CTAs (one an SM) that can run at once: the persistent grid. 0 where the driver cannot say.
template <int BN, bool PP, int TM, int CL>
int max_clusters() {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)(CL * (sm_count() / CL)));
  cfg.blockDim = dim3(THREADS);
  cfg.dynamicSmemBytes = Tile<BN, PP, TM, CL>::SMEM;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = CL;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, gemm_wgmma<BN, PP, TM, CL>, &cfg) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return clusters;
}

template <int BN, bool PP, int TM = BM, int CL = 1>
int launch_tiles(const void* ta, const void* tw, const __nv_bfloat16* bias, __nv_bfloat16* out, int m, int n, int kp,
                 bool after_repack) {
  CUtensorMap ma, mw;
  using T = Tile<BN, PP, TM, CL>;
  if (!make_map(&ma, ta, m, kp, T::A_ROWS) || !make_map(&mw, tw, n, kp, BN)) return 5;
  // KSEEK_TMA_STORE: out's map (rows of n, boxes of 64 columns x a warpgroup's rows), where TMA can store into out:
  // a 16-byte aligned base and rows of a multiple of 16 bytes; elsewhere the epilogue stores from registers
  CUtensorMap mo = {};
  const bool tma_store = T::OUT_BUFS > 0 && n % 8 == 0 && aligned16(out) && make_map(&mo, out, m, n, T::ROWS);
  static int resident = 0;  // clusters (CL = 1: CTAs) that run at once; 0: the kernel not yet configured
  if (!resident) {
    if (cudaFuncSetAttribute(gemm_wgmma<BN, PP, TM, CL>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::SMEM) !=
        cudaSuccess)
      return 3;
    resident = CL > 1 ? max_clusters<BN, PP, TM, CL>() : sm_count();
    if (resident < 1) return 3;
  }
  const int tiles_m = (m + TM - 1) / TM, tiles_n = (n + BN - 1) / BN;
  const long long units = (long long)tiles_m * ((tiles_n + CL - 1) / CL);
  if (units * CL > 0x7fffffff) return 2;
  const unsigned grid = (unsigned)(CL * (KSEEK_PERSIST && units > resident ? resident : units));
  const int kblocks = (kp + BK - 1) / BK;
  const int vec_out = (n % 2 == 0 && (reinterpret_cast<uintptr_t>(out) & 3) == 0 ? 1 : 0) |
                      ((reinterpret_cast<uintptr_t>(bias) & 3) == 0 ? 2 : 0) | (tma_store ? 4 : 0);
  // one launch with its attributes: the cluster's shape (CL > 1) and, after our repack, the programmatic
  // dependence on it (KSEEK_PDL); where the driver refuses the latter, the launch without it
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(THREADS);
  cfg.dynamicSmemBytes = T::SMEM;
  cfg.stream = 0;  // the legacy default stream, as the other launches
  cudaLaunchAttribute attr[2];
  unsigned attrs = 0;
  if (CL > 1) {
    attr[attrs].id = cudaLaunchAttributeClusterDimension;
    attr[attrs].val.clusterDim.x = CL;
    attr[attrs].val.clusterDim.y = 1;
    attr[attrs].val.clusterDim.z = 1;
    ++attrs;
  }
  // KSEEK_PDL 2: only a one-wave GEMM (v17's dependent launch slowed 4095^3's main loop by a fifth on an H100)
  const bool pdl = after_repack && (KSEEK_PDL == 1 || (KSEEK_PDL == 2 && units <= resident));
  if (pdl) {
    attr[attrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[attrs].val.programmaticStreamSerializationAllowed = 1;
    ++attrs;
  }
  cfg.attrs = attr;
  cfg.numAttrs = attrs;
  auto launch = [&]() {
    return cudaLaunchKernelEx(&cfg, gemm_wgmma<BN, PP, TM, CL>, ma, mw, mo, bias, out, m, n, kblocks, tiles_m, tiles_n,
                              vec_out);
  };
  cudaError_t err = launch();
  if (err != cudaSuccess && pdl) {
    cudaGetLastError();
    cfg.numAttrs = attrs - 1;  // the programmatic attribute is the last
    err = launch();
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    return 4;
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}

// The large shapes: cuBLAS's 256 x 128 cooperative tile reads 48 KB from L2 a k-block for 4.2 MFLOP, where a
// 128 x 128 tile reads 32 KB for 2.1 (Nsight Compute at 8192^3 on an H100: v4's ping-pong tiles held the L2 at 80%
// of its throughput and DRAM at 58%, cuBLAS's 63% and 29%). Its epilogue is not under another main loop, so only
// where k is long, and only where its tiles fill the SMs a few times over.
static bool big_tiles_fit(int m, int n, int k, const void* out) {
  const bool tma_store = KSEEK_TMA_STORE && n % 8 == 0 && aligned16(out);  // as launch_tiles decides
  if (!KSEEK_BIG_TILES || WIDE != 128 || k < (tma_store ? KSEEK_BIG_MIN_K : KSEEK_BIG_MIN_K_REGS)) return false;
  const long long tiles = (long long)((m + BIG_TM - 1) / BIG_TM) * ((n + WIDE - 1) / WIDE);
  return tiles * 100 >= (long long)KSEEK_BIG_FILL * sm_count();
}

// tile: 0 = the big tile where big_tiles_fit, else WIDE, or NARROW where WIDE's tiles are fewer than
// KSEEK_NARROW_TILES x the SMs (mid-size problems: 1000^3 is 64 tiles of 128 x 128 for 132 SMs, 128 of 128 x 64);
// 1 = WIDE; 2 = NARROW; 3 = the big tile, BIG_TM x WIDE cooperative (7 where WIDE is not 128). pp: -1 = ping-pong
// where the tiles outnumber the SMs (KSEEK_PINGPONG 1; 0 never, 2 always), 0 = cooperative, 1 = ping-pong (7 where
// the WIDE tile is too wide for it).
int launch_wgmma(const __nv_bfloat16* a, const __nv_bfloat16* w, const __nv_bfloat16* bias, __nv_bfloat16* out, int m,
                 int n, int k, int tile, int pp) {
  if ((pp == 1 && tile == 1 && WIDE > 128) || (tile == 3 && WIDE != 128)) return 7;
  // TMA wants 16-byte aligned bases and row strides; otherwise the operand goes through the scratch buffer.
  // KSEEK_PAD_K: rows of whole 128-byte lines, both operands (one map's row stride is the other's: kp)
  const bool repack_a = k % 8 != 0 || !aligned16(a), repack_w = k % 8 != 0 || !aligned16(w);
  const bool pad = k % BK != 0 && (KSEEK_PAD_K == 1 || (KSEEK_PAD_K == 2 && (repack_a || repack_w)));
  const bool pack_a = pad || repack_a, pack_w = pad || repack_w, packed = pack_a || pack_w;
  const int kp = pad ? (k + BK - 1) / BK * BK : (k + 7) / 8 * 8;
  const void* ta = a;
  const void* tw = w;
  if (pack_a || pack_w) {
    const size_t a_bytes = pack_a ? ((size_t)m * kp * 2 + 255) / 256 * 256 : 0;
    const size_t w_bytes = pack_w ? (size_t)n * kp * 2 : 0;
    uint16_t* buf = static_cast<uint16_t*>(scratch(a_bytes + w_bytes));
    if (!buf) return 6;
    const RepackJob ja{reinterpret_cast<const uint16_t*>(a), buf, m};
    const RepackJob jw{reinterpret_cast<const uint16_t*>(w), buf + a_bytes / 2, n};
    const int e = pack_a && pack_w ? launch_repack(ja, jw, 2, k, kp) : launch_repack(pack_a ? ja : jw, ja, 1, k, kp);
    if (e) return e;
    if (pack_a) ta = ja.dst;
    if (pack_w) tw = jw.dst;
  }
  if (tile == 0 && pp < 0 && big_tiles_fit(m, n, k, out)) tile = 3;
  if constexpr (WIDE == 128) {
    if (tile == 3) {
      // clusters where the driver can place them (status 3: it names none that fits), else v7's kernel
      const int status = launch_tiles<WIDE, false, BIG_TM, KSEEK_BIG_CLUSTER>(ta, tw, bias, out, m, n, kp, packed);
      if (status != 3 || KSEEK_BIG_CLUSTER == 1) return status;
      return launch_tiles<WIDE, false, BIG_TM, 1>(ta, tw, bias, out, m, n, kp, packed);
    }
  }
  bool narrow = tile == 2;
  if (tile == 0) {
    const long long wide_tiles = (long long)((m + BM - 1) / BM) * ((n + WIDE - 1) / WIDE);
    narrow = wide_tiles < (long long)KSEEK_NARROW_TILES * sm_count();
  }
  if (pp < 0) {
    const long long tiles = (long long)((m + BM - 1) / BM) * ((n + (narrow ? NARROW : WIDE) - 1) / (narrow ? NARROW : WIDE));
    pp = KSEEK_PINGPONG == 2 || (KSEEK_PINGPONG == 1 && tiles > sm_count());
  }
  if (narrow) return pp ? launch_tiles<NARROW, true>(ta, tw, bias, out, m, n, kp, packed)
                        : launch_tiles<NARROW, false>(ta, tw, bias, out, m, n, kp, packed);
  if constexpr (WIDE <= 128) {
    if (pp) return launch_tiles<WIDE, true>(ta, tw, bias, out, m, n, kp, packed);
  }
  return launch_tiles<WIDE, false>(ta, tw, bias, out, m, n, kp, packed);
}

}  // namespace kseek_gemm

using namespace kseek_gemm;

// variant: 0 = the dispatch below, 1 = the CUDA-core kernel for every shape, 2 = the wgmma kernel with the WIDE tile
// and 3 with the NARROW one, wherever k >= 1 (ping-pong or cooperative as the dispatch would choose), 4 =
// gemm_skinny wherever it can read the operands (k % 8 == 0, a and w 16-byte aligned; else status 7), 5 / 6 =
// WIDE / NARROW cooperative, 8 / 9 = WIDE / NARROW ping-pong, 10 = the big tile (v7), 11 = gemm_skinny_ring wherever
// it can read the operands (v22; else status 7) (lab/gemm_bias_gelu/tools/check_shapes.py checks every path on
// shapes the dispatch would not give it).
extern "C" int kseek_gemm_bias_gelu_variant(int variant, const __nv_bfloat16* a, const __nv_bfloat16* w,
                                            const __nv_bfloat16* bias, __nv_bfloat16* out, int m, int n, int k) {
  if (m < 0 || n < 0 || k < 0) return 1;
  if (m == 0 || n == 0) return 0;  // nothing to write (k = 0 is fine: out = gelu(bias))
  if (!a && k > 0) return 1;
  if (!w && k > 0) return 1;
  if (!bias || !out || (reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(w) |
                        reinterpret_cast<uintptr_t>(bias) | reinterpret_cast<uintptr_t>(out)) & 1)
    return 1;
  if (variant == 1) return launch_small(a, w, bias, out, m, n, k);
  if (variant == 2 || variant == 3) return k >= 1 ? launch_wgmma(a, w, bias, out, m, n, k, variant - 1, -1) : 7;
  if (variant == 5 || variant == 6) return k >= 1 ? launch_wgmma(a, w, bias, out, m, n, k, variant - 4, 0) : 7;
  if (variant == 8 || variant == 9) return k >= 1 ? launch_wgmma(a, w, bias, out, m, n, k, variant - 7, 1) : 7;
  if (variant == 10) return k >= 1 ? launch_wgmma(a, w, bias, out, m, n, k, 3, 0) : 7;
  if (variant == 4) return k >= 1 && skinny_fits(a, w, m, k) ? launch_skinny(a, w, bias, out, m, n, k) : 7;
  if (variant == 11) return k >= 1 && skinny_fits(a, w, m, k) ? launch_ring(a, w, bias, out, m, n, k) : 7;
  // decode-like m and launch-bound sizes: no 128-row tiles
  if (k == 0 || m <= KSEEK_SMALL_M || (long long)m * n * k <= (long long)KSEEK_TINY) {
    if (KSEEK_SKINNY && k > 0 && m >= KSEEK_SKINNY_MIN_M && skinny_fits(a, w, m, k)) {
      // the ring where it fits; where the driver does not run it (status 3, 4 or 5: nothing was launched or the
      // launch failed before writing), gemm_skinny
      if (ring_fits(m, n, k) && launch_ring(a, w, bias, out, m, n, k) == 0) return 0;
      return launch_skinny(a, w, bias, out, m, n, k);
    }
    const int status = launch_small(a, w, bias, out, m, n, k);
    if (status != 2) return status;  // 2: more rows than its grid takes (launched nothing): the tiles below
  }
  const int status = launch_wgmma(a, w, bias, out, m, n, k, 0, -1);
  // 5: the driver refused a tensor map (not expected for any shape; check_shapes.py's variant 2 would show it):
  // the CUDA-core kernel is slow but right
  return status == 5 ? launch_small(a, w, bias, out, m, n, k) : status;
}

extern "C" int kseek_gemm_bias_gelu(const __nv_bfloat16* a, const __nv_bfloat16* w, const __nv_bfloat16* bias,
                                    __nv_bfloat16* out, int m, int n, int k) {
  return kseek_gemm_bias_gelu_variant(0, a, w, bias, out, m, n, k);
}

#if KSEEK_PHASES
// The phase log of the last launch (KSEEK_PHASES 1 builds only): ctas rows of PHASE_SLOTS values, as described at
// phase_log; returns a cudaError_t. It synchronizes the device first.
extern "C" int kseek_gemm_phases(unsigned long long* host, int ctas) {
  using namespace kseek_gemm;
  if (ctas < 0 || ctas > PHASE_CTAS) return (int)cudaErrorInvalidValue;
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) return (int)err;
  return (int)cudaMemcpyFromSymbol(host, phase_log, sizeof(unsigned long long) * PHASE_SLOTS * ctas);
}
extern "C" int kseek_gemm_phase_slots() { return kseek_gemm::PHASE_SLOTS; }
#endif
