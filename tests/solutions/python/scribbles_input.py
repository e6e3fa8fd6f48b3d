# A solve() that writes the right answer's shape of zeros into c and changes an input: the
# judge's input check names it.
def solve(a, a_scales, b, b_scales, alpha, c, M, N, K):
    a.zero_()
    c.zero_()
