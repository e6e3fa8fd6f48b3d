# triton_dequant.py: W4A16 in Triton. Each program computes a 128x128 tile of y = x @ deq(w)^T:
# it loads a K-slice of FP16 activations and of packed E2M1 weights with their FP16 group
# scales, dequantizes the weights to FP16 in registers (code times scale, rounded once to
# FP16, as the CUDA rungs do), multiplies on the tensor cores with tl.dot (FP32 accumulation)
# and writes y as FP16.
#
#   check: scripts/run_challenge challenges/w4a16_matmul \
#       --solution solutions/w4a16_matmul/triton_dequant.py --action check
#   run:   ... --action run  (the Python worker, docs/python.md; not yet run on a GPU)
import triton
import triton.language as tl


@triton.jit
def _e2m1_to_f32(codes):
    """4-bit E2M1 codes (0..15) as FP32: sign << 3 | exponent << 1 | mantissa."""
    c = codes.to(tl.int32)
    exponent = (c >> 1) & 3
    mantissa = c & 1
    # Normal: 2^(exponent-1) * (1 + mantissa/2), FP32 exponent field exponent + 126 and the
    # mantissa's top bit; exponent 0: 0 or 0.5 (FP32 exponent field 126).
    normal = ((exponent + 126) << 23) | (mantissa << 22)
    small = mantissa * (126 << 23)
    bits = tl.where(exponent == 0, small, normal) | (((c >> 3) & 1) << 31)
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _w4a16_matmul(x_ptr, w_ptr, scales_ptr, y_ptr, M, N, K, group_size, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows_x = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rows_w = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    x_ok = rows_x[:, None] < M
    w_ok = rows_w[:, None] < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rows_x[:, None] * K + ks[None, :], mask=x_ok & (ks[None, :] < K),
                    other=0.0)
        bytes_k = k0 // 2 + tl.arange(0, BLOCK_K // 2)
        packed = tl.load(w_ptr + rows_w[:, None] * (K // 2) + bytes_k[None, :],
                         mask=w_ok & (bytes_k[None, :] < K // 2), other=0)
        # Element 2j is the low nibble of byte j, element 2j+1 the high one.
        codes = tl.interleave(_e2m1_to_f32(packed & 0xF), _e2m1_to_f32(packed >> 4))
        scales = tl.load(scales_ptr + rows_w[:, None] * (K // group_size) +
                         (ks // group_size)[None, :], mask=w_ok & (ks[None, :] < K), other=0.0)
        w = (codes * scales.to(tl.float32)).to(tl.float16)
        acc = tl.dot(x, tl.trans(w), acc)
    tl.store(y_ptr + rows_x[:, None] * N + rows_w[None, :], acc.to(tl.float16),
             mask=x_ok & (rows_w[None, :] < N))


def solve(x, w, w_scales, y, M, N, K, group_size):
    block_m, block_n, block_k = 128, 128, 64
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    _w4a16_matmul[grid](x, w, w_scales, y, M, N, K, group_size, BLOCK_M=block_m,
                        BLOCK_N=block_n, BLOCK_K=block_k, num_warps=8, num_stages=3)
