"""Emit the wgmma inline-asm wrappers that attention_fwd_sm90.cu pastes between its GENERATED markers.

One wrapper per (shape, dtype, operand source): the accumulator is passed as a float array so that
every register stays a compile-time name. Run: python gen_wgmma.py > /tmp/wg.inc
"""

SS_N = [64, 80, 96, 112, 128, 176, 192]  # S = Q K^T: N = BLOCK_N, A and B from shared memory
# O += P V: N = the head dim rounded up to 32 (d96: one N = 96 wgmma, or 64 + 32), A (P) from registers, B (V) N-major
RS_N = [32, 64, 96, 128, 192, 256]
RSK_N = [128]  # S = Q K^T with Q in registers: A from registers, B (K) K-major
TYPES = {"bf16": "bf16", "f16": "f16"}


def regs(first, count):
    return ", ".join(f"%{i}" for i in range(first, first + count))


def acc_operands(n):
    return ", ".join(f'"+f"(d[{i}])' for i in range(n // 2))


def ss(n, t):
    na = n // 2
    return f"""__device__ __forceinline__ void wgmma_ss_n{n}_{t}(float (&d)[{na}], uint64_t da, uint64_t db, int accumulate) {{
  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{na + 2}, 0;\\n"
    "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{{regs(0, na)}}}, %{na}, %{na + 1}, p, 1, 1, 0, 0;\\n}}\\n"
    : {acc_operands(n)}
    : "l"(da), "l"(db), "r"(accumulate));
}}
"""


def rs(n, t, b_transposed=True, name="rs"):
    # scale-d is a predicate operand; the last immediate marks B as N-major (1: V is stored [key][d]) or
    # K-major (0: K is stored [key][d] and read as K^T).
    na = n // 2
    return f"""__device__ __forceinline__ void wgmma_{name}_n{n}_{t}(float (&d)[{na}], const uint32_t (&a)[4], uint64_t db, int accumulate) {{
  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{na + 5}, 0;\\n"
    "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{{regs(0, na)}}}, {{%{na}, %{na + 1}, %{na + 2}, %{na + 3}}}, %{na + 4}, p, 1, 1, {int(b_transposed)};\\n}}\\n"
    : {acc_operands(n)}
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}}
"""


def main():
    out = []
    for t in TYPES:
        for n in SS_N:
            out.append(ss(n, t))
        for n in RS_N:
            out.append(rs(n, t))
        for n in RSK_N:
            out.append(rs(n, t, b_transposed=False, name="rsk"))
    print("\n".join(out))


if __name__ == "__main__":
    main()
