// The judge's own table of physical limits: what a device can do at most, per unit of work,
// computed from the architecture, SM count, clocks and memory bus of the device the judge
// measured itself. A score above its challenge's limit is impossible and never ranked; the
// board recomputes every limit from this table and never takes one from a record.
#pragma once

#include <string>
#include <vector>

namespace fp4arena {

/// The limits a challenge can name in its spec ("limit": ...).
enum class LimitKind { kFp16Dense, kFp8Dense, kFp4Dense, kDram };

/// "fp16_dense", "fp8_dense", "fp4_dense", "dram".
const char* limit_name(LimitKind k);
/// Parses a limit name; false for anything else.
bool parse_limit(const std::string& name, LimitKind* out);
/// Every limit name, in declaration order (for messages).
std::vector<std::string> limit_names();

/// What the table needs to know about a device (all measured by the judge).
struct DeviceShape {
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  double sm_clock_max_mhz = 0;   ///< rated maximum SM clock
  double mem_clock_max_mhz = 0;  ///< rated maximum memory clock (the DDR base clock)
  int mem_bus_width_bits = 0;
};

/// Dense tensor-core FLOP per clock per SM for the limit's operand type on this
/// architecture, 0 where the table has no entry (or for kDram).
double dense_flops_per_clock_per_sm(LimitKind k, int cc_major, int cc_minor);

/// The limit in the unit of its metric: TF/s for the *_dense limits, GB/s for kDram.
/// 0 where the table has no entry for the architecture (the judge then reports the score
/// without a limit and cannot mark it over the limit).
double limit_value(LimitKind k, const DeviceShape& d);

/// Plausibility bounds on a device description read from a record: false (with *why)
/// for an SM count, clock or bus width no known part of that architecture has.
bool plausible_device(const DeviceShape& d, std::string* why);

}  // namespace fp4arena
