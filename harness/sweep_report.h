// What `--action sweep` writes: the results of a sweep over shapes as JSON (schema
// fp4arena.sweep.v1) and as one self-contained HTML page with an inline SVG chart. Pure
// functions of a plain struct, so they are tested without a GPU (the judge fills the struct).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fp4arena {

/// The schema string of sweep.json.
constexpr const char* kSweepSchema = "fp4arena.sweep.v1";

/// The yardstick timed on one shape.
struct SweepYardstickResult {
  std::string name;
  double median_ms = 0;
  double value = 0;  ///< the metric, from the same workload as the solution's
};

/// One shape of the sweep.
struct SweepShape {
  std::string name;
  std::string label;                                  ///< the dims, e.g. "1000x3000x4112"
  std::vector<std::pair<std::string, int64_t>> dims;  ///< in signature order
  double workload = 0;                                ///< FLOPs or bytes of one call
  std::string verdict = "not_run";                    ///< a verdict name (harness/verdict.h)
  std::string reason;                                 ///< why it failed; empty when it passed
  bool over_limit = false;  ///< passed, but its value exceeds the device's limit
  int samples = 0;
  std::optional<double> median_ms;  ///< where the solution passed
  std::optional<double> value;      ///< the metric, where the solution passed
  std::optional<SweepYardstickResult> yardstick;
  /// The shape's roofline time on the device (spec.h, speed_of_light); null where unknown
  /// (sweeps older than the field, or a device the judge's table lacks).
  std::optional<double> speed_of_light_ms;
  bool passed() const { return verdict == "passed" && !over_limit && value.has_value(); }
  /// solution value / yardstick value, where both were measured.
  std::optional<double> ratio() const;
};

/// A whole sweep.
struct SweepReport {
  std::string judge_version;
  std::string created_utc;
  std::string challenge;
  int spec_version = 0;
  std::string title;  ///< the challenge's title
  std::string solution_path;
  std::string solution_sha256;
  nlohmann::json device = nlohmann::json::object();  ///< as records carry it (device_to_json)
  std::string metric_name;                           ///< "tflops" or "gbps"
  std::string metric_unit;                           ///< "TF/s" or "GB/s"
  std::string workload_kind;                         ///< "flops" or "bytes"
  std::string expression;                            ///< the spec's workload expression
  std::string limit_name;                            ///< "fp16_dense", "dram", ...
  double limit_value = 0;                            ///< in metric_unit; <= 0: unknown
  std::string shapes_source;   ///< where the shapes came from ("spec.json sweep", ...)
  std::string timing;          ///< how each shape was timed, in words
  std::string yardstick_name;  ///< the challenge's yardstick; empty where none was timed
  std::vector<SweepShape> shapes;
  double wall_seconds = 0;
  bool passed() const;  ///< every shape passed (and there is at least one)
};

/// sweep.json (schema fp4arena.sweep.v1; harness/README.md shows it).
nlohmann::json sweep_json(const SweepReport& report);

/// Reads a sweep.json back (the report sweep_json() wrote, less the challenge's title, which
/// it does not hold). False with *err naming the first missing or mistyped field.
bool read_sweep_json(const nlohmann::json& doc, SweepReport* out, std::string* err);

/// sweep.svg: the chart of sweep.html as an SVG document of its own (style rules inside, no
/// scripts, nothing fetched), for embedding as an image; its legend names the device.
std::string sweep_svg(const SweepReport& report);

/// sweep.html: one self-contained page (inline CSS and SVG, no scripts, nothing fetched)
/// with the chart (per shape, the solution's and the yardstick's values side by side, the
/// device's limit as a horizontal line) and a table. Every text from the report is escaped.
std::string sweep_html(const SweepReport& report);

/// The chart's geometry, in SVG user units: the value axis starts at 0 at `plot_bottom` and
/// reaches `y_max` (a multiple of `y_step` above every value and the limit) at `plot_top`.
/// Where the values span two decades or more (a naive kernel beside cuBLAS) the axis is
/// logarithmic instead: from `y_min` to `y_max`, both powers of ten, a tick per decade.
struct SweepChartLayout {
  double width = 0, height = 0;
  double plot_left = 0, plot_right = 0, plot_top = 0, plot_bottom = 0;
  double group_width = 0;  ///< per shape
  double y_max = 1, y_step = 0.2;
  bool log_scale = false;
  double y_min = 0;  ///< the axis' bottom: 0, or a power of ten on a log axis
  double y_of(double v) const;
  double x_center(size_t shape) const { return plot_left + group_width * (double(shape) + 0.5); }
};
SweepChartLayout sweep_chart_layout(const SweepReport& report);

}  // namespace fp4arena
