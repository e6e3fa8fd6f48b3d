// toy_quantize, wrong: never writes the last row of q or s.
#define SKIP_LAST_ROW 1
#include "correct.cu"
