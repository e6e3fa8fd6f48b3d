# Not Python: the colon after the parameters is missing.
def solve(a, a_scales, b, b_scales, alpha, c, M, N, K)
    pass
