# Defines its function under another name, and solve only inside a class.
class Kernel:
    def solve(self, a, a_scales, b, b_scales, alpha, c, M, N, K):
        pass


def matmul(a, a_scales, b, b_scales, alpha, c, M, N, K):
    pass
