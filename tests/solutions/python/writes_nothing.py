# A solve() that returns without writing c: every element stays the judge's poison.
def solve(a, a_scales, b, b_scales, alpha, c, M, N, K):
    return None
