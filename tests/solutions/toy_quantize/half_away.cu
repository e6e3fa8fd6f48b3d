// toy_quantize, wrong: rounds half away from zero (fails on exact midpoints only).
#define HALF_AWAY 1
#include "correct.cu"
