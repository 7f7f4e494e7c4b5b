"""Emit the wgmma inline-asm wrappers that versions/v1_wgmma.cu pastes between its GENERATED markers.

m64nNk16, bf16 inputs, fp32 accumulator, A and B both read from shared memory through descriptors, both K-major
(tnspA = tnspB = 0: A is [m][k] row-major and W is [n][k], nn.Linear's layout). One wrapper per N, the
accumulator passed as a float array so that every register stays a compile-time name; scale-d is a predicate
(0: D = A B, 1: D += A B). Run: python gen_wgmma.py > /tmp/wg.inc
"""

SS_N = [64, 128, 192, 256]  # the consumer warpgroup's tile width: KSEEK_BN (64 only for a later small tile)


def regs(first, count):
    return ", ".join(f"%{i}" for i in range(first, first + count))


def ss(n):
    na = n // 2
    operands = ", ".join(f'"+f"(d[{i}])' for i in range(na))
    return f"""__device__ __forceinline__ void wgmma_ss_n{n}(float (&d)[{na}], uint64_t da, uint64_t db, int accumulate) {{
  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{na + 2}, 0;\\n"
    "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{regs(0, na)}}}, %{na}, %{na + 1}, p, 1, 1, 0, 0;\\n}}\\n"
    : {operands}
    : "l"(da), "l"(db), "r"(accumulate));
}}
"""


def main():
    print("\n".join(ss(n) for n in SS_N))


if __name__ == "__main__":
    main()
