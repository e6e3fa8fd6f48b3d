# A PyTorch solution of nvfp4_matmul whose solve() names its output `out` and forgets K.
import torch


def solve(a, a_scales, b, b_scales, alpha, out, M, N):
    out.zero_()
