# torch_dequant.py: the simplest submission there is, in plain PyTorch. It decodes both NVFP4
# operands to FP32 (codes through a 16-entry table, block scales through torch's E4M3 type),
# multiplies them in FP32 and writes alpha * A @ B^T as FP16 into c.
#
#   check (no GPU needed): scripts/run_challenge challenges/nvfp4_matmul \
#       --solution solutions/nvfp4_matmul/torch_dequant.py --action check
#
# The buffers arrive as torch tensors on the GPU with the spec's shapes: a (M, K/2) and
# b (N, K/2) uint8, two E2M1 codes per byte, element k of a row in the low nibble of byte k/2
# when k is even and in the high nibble when k is odd; a_scales (M, K/16) and b_scales
# (N, K/16) uint8 holding E4M3 codes; c (M, N) float16, written in place. alpha, M, N and K
# are Python numbers.
#
#   run:  scripts/run_challenge challenges/nvfp4_matmul \
#       --solution solutions/nvfp4_matmul/torch_dequant.py --action run
import torch

# E2M1 code -> value: sign << 3 | exponent << 1 | mantissa.
_E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
_tables = {}  # the table on each device, made once: a copy from the host would wait in solve()


def _table(device):
    if device not in _tables:
        _tables[device] = torch.tensor(_E2M1, dtype=torch.float32, device=device)
    return _tables[device]


def _decode(codes, scales, rows, k):
    table = _table(codes.device)
    low = table[(codes & 0xF).long()]
    high = table[(codes >> 4).long()]
    values = torch.stack((low, high), dim=-1).reshape(rows, k)
    block_scales = scales.view(torch.float8_e4m3fn).float().repeat_interleave(16, dim=1)
    return values * block_scales


def solve(a, a_scales, b, b_scales, alpha, c, M, N, K):
    a_full = _decode(a, a_scales, M, K)
    b_full = _decode(b, b_scales, N, K)
    c.copy_((alpha * (a_full @ b_full.T)).to(torch.float16))
