#include "harness/rng.h"

#include <cmath>

namespace fp4arena {
namespace {

// The ziggurat method for the standard normal (G. Marsaglia and W. W. Tsang, "The Ziggurat
// Method for Generating Random Variables", Journal of Statistical Software 5(8), 2000), with
// 256 layers of equal area under f(x) = exp(-x^2 / 2), and the layer, the sign and the
// uniform taken from separate bits of one draw (J. A. Doornik, "An Improved Ziggurat Method
// to Generate Normal Random Samples", 2005, on the correlation the shared bits give).
// Their constants for 256 layers: the base layer's right edge r and the area v of a layer.
constexpr int kLayers = 256;
constexpr double kR = 3.6541528853610088;
constexpr double kV = 4.92867323399e-3;

double density(double x) {
  return std::exp(-0.5 * x * x);
}

// x[i] is the right edge of layer i (layer 0, the base, is as wide as a rectangle of area v
// under f(r), its part past r standing for the tail); layer i spans the heights from f(x[i])
// to f(x[i + 1]); x[kLayers] = 0. A point of layer i at x < x[i + 1] is under the curve.
struct Ziggurat {
  double x[kLayers + 1];
  double f[kLayers + 1];
  Ziggurat() {
    x[0] = kV / density(kR);
    x[1] = kR;
    for (int i = 2; i < kLayers; ++i)
      x[i] = std::sqrt(-2.0 * std::log(kV / x[i - 1] + density(x[i - 1])));
    x[kLayers] = 0.0;
    for (int i = 0; i <= kLayers; ++i) f[i] = density(x[i]);
    f[0] = 0.0;  // the base layer starts at height 0
  }
};

const Ziggurat& ziggurat() {
  static const Ziggurat z;
  return z;
}

}  // namespace

namespace rng_detail {
const double* ziggurat_edges() {
  return ziggurat().x;
}
}  // namespace rng_detail

double Rng::normal_off_core(uint64_t u) {
  const Ziggurat& z = ziggurat();
  for (;;) {
    const int layer = static_cast<int>(u & (kLayers - 1));
    const double x = static_cast<double>(u >> 11) * (1.0 / 9007199254740992.0) * z.x[layer];
    if (x < z.x[layer + 1]) return with_sign(x, u);  // inside the layer's core: under the curve
    if (layer == 0) {
      // Past r: the tail, by Marsaglia's method for the normal tail.
      for (;;) {
        const double a = -std::log(1.0 - uniform()) / kR;
        const double b = -std::log(1.0 - uniform());
        if (2.0 * b > a * a) return with_sign(kR + a, u);
      }
    }
    // The wedge between the core and the curve: a uniform height in the layer.
    const double y = z.f[layer] + uniform() * (z.f[layer + 1] - z.f[layer]);
    if (y < density(x)) return with_sign(x, u);
    u = next();
  }
}

}  // namespace fp4arena
