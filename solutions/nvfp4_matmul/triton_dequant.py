# triton_dequant.py: the flagship in Triton. Each program computes a 128x128 tile of
# C = alpha * A @ B^T: it loads a K-slice of packed E2M1 codes and their E4M3 block scales for
# A and B, decodes them to FP16 in registers (exact: a code times a scale has at most six
# significant bits and lies within FP16's normal range), multiplies them on the tensor cores
# with tl.dot (FP32 accumulation) and writes alpha * acc as FP16.
#
#   check: scripts/run_challenge challenges/nvfp4_matmul \
#       --solution solutions/nvfp4_matmul/triton_dequant.py --action check
#   run:   ... --action run  (the Python worker, docs/python.md; not yet run on a GPU)
import triton
import triton.language as tl


@triton.jit
def _e2m1_to_f16(codes):
    """4-bit E2M1 codes (uint8, 0..15) as FP16: sign << 3 | exponent << 1 | mantissa."""
    c = codes.to(tl.int32)
    exponent = (c >> 1) & 3
    mantissa = c & 1
    # Normal (exponent 1..3): 2^(exponent-1) * (1 + mantissa/2) is FP16 exponent
    # exponent + 14 with the mantissa's top bit; exponent 0 is 0 or 0.5 (FP16 exponent 14).
    normal = ((exponent + 14) << 10) | (mantissa << 9)
    small = mantissa * (14 << 10)
    bits = tl.where(exponent == 0, small, normal) | (((c >> 3) & 1) << 15)
    return bits.to(tl.uint16).to(tl.float16, bitcast=True)


@triton.jit
def _load_operand(codes_ptr, scales_ptr, rows, row_count, k0, K, BLOCK_K: tl.constexpr,
                  ROWS: tl.constexpr):
    """A ROWS x BLOCK_K tile of a packed operand, decoded and scaled, as FP16."""
    bytes_k = k0 // 2 + tl.arange(0, BLOCK_K // 2)
    scales_k = k0 // 16 + tl.arange(0, BLOCK_K // 16)
    row_ok = rows[:, None] < row_count
    packed = tl.load(codes_ptr + rows[:, None] * (K // 2) + bytes_k[None, :],
                     mask=row_ok & (bytes_k[None, :] < K // 2), other=0)
    # Element 2j is the low nibble of byte j, element 2j+1 the high one.
    values = tl.interleave(_e2m1_to_f16(packed & 0xF), _e2m1_to_f16(packed >> 4))
    codes = tl.load(scales_ptr + rows[:, None] * (K // 16) + scales_k[None, :],
                    mask=row_ok & (scales_k[None, :] < K // 16), other=0)
    scales = codes.to(tl.float8e4nv, bitcast=True).to(tl.float32)
    scales = tl.reshape(tl.broadcast_to(scales[:, :, None], (ROWS, BLOCK_K // 16, 16)),
                        (ROWS, BLOCK_K))
    return (values.to(tl.float32) * scales).to(tl.float16)


@triton.jit
def _nvfp4_matmul(a_ptr, a_scales_ptr, b_ptr, b_scales_ptr, c_ptr, alpha, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows_a = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rows_b = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = _load_operand(a_ptr, a_scales_ptr, rows_a, M, k0, K, BLOCK_K, BLOCK_M)
        b = _load_operand(b_ptr, b_scales_ptr, rows_b, N, k0, K, BLOCK_K, BLOCK_N)
        acc = tl.dot(a, tl.trans(b), acc)
    out = (acc * alpha).to(tl.float16)
    tl.store(c_ptr + rows_a[:, None] * N + rows_b[None, :], out,
             mask=(rows_a[:, None] < M) & (rows_b[None, :] < N))


def solve(a, a_scales, b, b_scales, alpha, c, M, N, K):
    block_m, block_n, block_k = 128, 128, 64
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    _nvfp4_matmul[grid](a, a_scales, b, b_scales, c, alpha, M, N, K, BLOCK_M=block_m,
                        BLOCK_N=block_n, BLOCK_K=block_k, num_warps=8, num_stages=3)
