#include "harness/sweep_report.h"

#include "harness/text.h"

#include "harness/html.h"
#include "harness/json_read.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <vector>

namespace fp4arena {
namespace {

// Chart constants, in SVG user units.
constexpr double kPlotLeft = 78;     // room for the value axis' labels and title
constexpr double kPlotRight = 24;    // margin right of the plot
constexpr double kLegendRow = 20;    // one legend entry per row, above the plot
constexpr double kLegendTop = 10;    // first legend row
constexpr double kPlotHeight = 260;  // value axis length
constexpr double kLabelRoom = 120;   // below the plot: the rotated shape labels
constexpr double kGroupWidth = 76;   // per shape: two bars and the gap between groups
constexpr double kMinWidth = 680;

// A number for the page: one decimal for values, more for small ones.
std::string value_text(double v) {
  return fixed(v, std::fabs(v) >= 100 ? 1 : std::fabs(v) >= 1 ? 2 : 4);
}

// A JSON field as text, whatever its type (the device object comes from outside).
std::string field_text(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The smallest of 1, 2, 2.5, 5 (times a power of ten) at least `raw`.
double nice_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= raw * (1 - 1e-12)) return m * p;
  }
  return 10 * p;
}

// A ratio: two decimals, or three significant digits below 0.1 (a naive kernel's 0.00103
// beside cuBLAS is not 0.00).
std::string ratio_text(double r) {
  if (std::fabs(r) >= 0.1 || r == 0) return fixed(r, 2);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", r);
  return buf;
}

// Tick labels with as many decimals as the step needs.
std::string tick_text(double v, double step) {
  int prec = 0;
  while (prec < 6 &&
         std::fabs(step * std::pow(10.0, prec) - std::round(step * std::pow(10.0, prec))) >
             1e-9 * std::pow(10.0, prec)) {
    ++prec;
  }
  return fixed(v, prec);
}

}  // namespace

std::optional<double> SweepShape::ratio() const {
  if (!value || !yardstick || !(yardstick->value > 0)) return std::nullopt;
  return *value / yardstick->value;
}

bool SweepReport::passed() const {
  if (shapes.empty()) return false;
  for (const SweepShape& s : shapes) {
    if (!s.passed()) return false;
  }
  return true;
}

namespace {

// 100 * the shape's speed of light / its median, where both are known.
std::optional<double> pct_of_sol(const SweepShape& s) {
  if (!s.speed_of_light_ms || !s.median_ms || !(*s.median_ms > 0) || !s.value) return std::nullopt;
  return 100 * *s.speed_of_light_ms / *s.median_ms;
}

}  // namespace

nlohmann::json sweep_json(const SweepReport& r) {
  nlohmann::json shapes = nlohmann::json::array();
  for (const SweepShape& s : r.shapes) {
    nlohmann::json dims = nlohmann::json::object();
    for (const auto& [name, v] : s.dims) dims[name] = v;
    nlohmann::json y = nullptr;
    if (s.yardstick) {
      y = {{"name", s.yardstick->name},
           {"median_ms", s.yardstick->median_ms},
           {"value", s.yardstick->value},
           {"ratio", json_number_or_null(s.ratio())}};
    }
    std::optional<double> pct;
    if (s.value && r.limit_value > 0) pct = 100 * *s.value / r.limit_value;
    shapes.push_back({{"name", s.name},
                      {"shape", s.label},
                      {"dims", dims},
                      {"workload", s.workload},
                      {"verdict", s.verdict},
                      {"reason", s.reason},
                      {"over_limit", s.over_limit},
                      {"passed", s.passed()},
                      {"samples", s.samples},
                      {"median_ms", json_number_or_null(s.median_ms)},
                      {"value", json_number_or_null(s.value)},
                      {"pct_of_limit", json_number_or_null(pct)},
                      {"speed_of_light_ms", json_number_or_null(s.speed_of_light_ms)},
                      {"pct_of_speed_of_light", json_number_or_null(pct_of_sol(s))},
                      {"yardstick", y}});
  }
  return {{"schema", kSweepSchema},
          {"judge_version", r.judge_version},
          {"created_utc", r.created_utc},
          {"challenge", {{"name", r.challenge}, {"spec_version", r.spec_version}}},
          {"solution", {{"path", r.solution_path}, {"sha256", r.solution_sha256}}},
          {"device", r.device},
          {"metric",
           {{"name", r.metric_name},
            {"unit", r.metric_unit},
            {"workload", r.workload_kind},
            {"expression", r.expression}}},
          {"limit",
           {{"name", r.limit_name},
            {"value", r.limit_value > 0 ? nlohmann::json(r.limit_value) : nlohmann::json(nullptr)},
            {"unit", r.metric_unit}}},
          {"shapes_source", r.shapes_source},
          {"timing", r.timing},
          {"yardstick", r.yardstick_name},
          {"shapes", shapes},
          {"passed", r.passed()},
          {"wall_seconds", r.wall_seconds}};
}

namespace {

// Reads the fields of a sweep.json, remembering the first problem (a field's path and what
// was expected); every getter returns a default after one.
class SweepFields {
 public:
  explicit SweepFields(std::string* err) : err_(err) {}
  bool ok() const { return ok_; }
  const nlohmann::json& at(const nlohmann::json& j, const std::string& path, const char* key,
                           nlohmann::json::value_t type) {
    static const nlohmann::json kNull;
    if (!ok_) return kNull;
    if (!j.is_object() || !j.contains(key) ||
        (j[key].type() != type &&
         !(type == nlohmann::json::value_t::number_float && j[key].is_number()))) {
      fail(path + key + ": missing, or not " + type_name(type));
      return kNull;
    }
    return j[key];
  }
  std::string text(const nlohmann::json& j, const std::string& path, const char* key) {
    const nlohmann::json& v = at(j, path, key, nlohmann::json::value_t::string);
    return ok_ ? v.get<std::string>() : "";
  }
  double number(const nlohmann::json& j, const std::string& path, const char* key) {
    const nlohmann::json& v = at(j, path, key, nlohmann::json::value_t::number_float);
    return ok_ ? v.get<double>() : 0;
  }
  std::optional<double> number_or_null(const nlohmann::json& j, const std::string& path,
                                       const char* key) {
    if (ok_ && j.is_object() && j.contains(key) && j[key].is_null()) return std::nullopt;
    const double v = number(j, path, key);
    return ok_ ? std::optional<double>(v) : std::nullopt;
  }
  void fail(const std::string& why) {
    if (ok_) *err_ = "field " + why;
    ok_ = false;
  }

 private:
  static std::string type_name(nlohmann::json::value_t t) {
    switch (t) {
      case nlohmann::json::value_t::string:
        return "a string";
      case nlohmann::json::value_t::object:
        return "an object";
      case nlohmann::json::value_t::array:
        return "an array";
      case nlohmann::json::value_t::boolean:
        return "true or false";
      default:
        return "a number";
    }
  }
  std::string* err_;
  bool ok_ = true;
};

SweepShape read_sweep_shape(SweepFields& f, const nlohmann::json& j, const std::string& path) {
  SweepShape s;
  s.name = f.text(j, path, "name");
  s.label = f.text(j, path, "shape");
  const nlohmann::json& dims = f.at(j, path, "dims", nlohmann::json::value_t::object);
  for (auto it = dims.begin(); f.ok() && it != dims.end(); ++it) {
    if (!it->is_number_integer()) f.fail(path + "dims." + it.key() + ": not a whole number");
    if (f.ok()) s.dims.emplace_back(it.key(), it->get<int64_t>());
  }
  s.workload = f.number(j, path, "workload");
  s.verdict = f.text(j, path, "verdict");
  s.reason = f.text(j, path, "reason");
  s.over_limit = f.at(j, path, "over_limit", nlohmann::json::value_t::boolean) == true;
  s.samples = static_cast<int>(f.number(j, path, "samples"));
  s.median_ms = f.number_or_null(j, path, "median_ms");
  s.value = f.number_or_null(j, path, "value");
  if (f.ok() && j.contains("speed_of_light_ms"))
    s.speed_of_light_ms = f.number_or_null(j, path, "speed_of_light_ms");
  if (f.ok() && j.contains("yardstick") && j["yardstick"].is_object()) {
    const nlohmann::json& y = j["yardstick"];
    const std::string ypath = path + "yardstick.";
    s.yardstick = SweepYardstickResult{f.text(y, ypath, "name"), f.number(y, ypath, "median_ms"),
                                       f.number(y, ypath, "value")};
  }
  return s;
}

}  // namespace

bool read_sweep_json(const nlohmann::json& doc, SweepReport* out, std::string* err) {
  SweepFields f(err);
  SweepReport r;
  if (f.text(doc, "", "schema") != kSweepSchema && f.ok()) {
    *err = std::string("field schema: expected \"") + kSweepSchema + "\"";
    return false;
  }
  r.judge_version = f.text(doc, "", "judge_version");
  r.created_utc = f.text(doc, "", "created_utc");
  const nlohmann::json& ch = f.at(doc, "", "challenge", nlohmann::json::value_t::object);
  r.challenge = f.text(ch, "challenge.", "name");
  r.spec_version = static_cast<int>(f.number(ch, "challenge.", "spec_version"));
  const nlohmann::json& sol = f.at(doc, "", "solution", nlohmann::json::value_t::object);
  r.solution_path = f.text(sol, "solution.", "path");
  r.solution_sha256 = f.text(sol, "solution.", "sha256");
  r.device = f.at(doc, "", "device", nlohmann::json::value_t::object);
  const nlohmann::json& m = f.at(doc, "", "metric", nlohmann::json::value_t::object);
  r.metric_name = f.text(m, "metric.", "name");
  r.metric_unit = f.text(m, "metric.", "unit");
  r.workload_kind = f.text(m, "metric.", "workload");
  r.expression = f.text(m, "metric.", "expression");
  const nlohmann::json& lim = f.at(doc, "", "limit", nlohmann::json::value_t::object);
  r.limit_name = f.text(lim, "limit.", "name");
  r.limit_value = f.number_or_null(lim, "limit.", "value").value_or(0);
  r.shapes_source = f.text(doc, "", "shapes_source");
  r.timing = f.text(doc, "", "timing");
  r.yardstick_name = f.text(doc, "", "yardstick");
  const nlohmann::json& shapes = f.at(doc, "", "shapes", nlohmann::json::value_t::array);
  for (size_t i = 0; f.ok() && i < shapes.size(); ++i) {
    r.shapes.push_back(read_sweep_shape(f, shapes[i], "shapes[" + std::to_string(i) + "]."));
  }
  r.wall_seconds = f.number(doc, "", "wall_seconds");
  if (!f.ok()) return false;
  *out = std::move(r);
  return true;
}

SweepChartLayout sweep_chart_layout(const SweepReport& r) {
  SweepChartLayout l;
  const double n = std::max<double>(1, double(r.shapes.size()));
  l.group_width = kGroupWidth;
  l.plot_left = kPlotLeft;
  l.width = std::max(kMinWidth, kPlotLeft + n * kGroupWidth + kPlotRight);
  l.plot_right = l.width - kPlotRight;
  l.group_width = (l.plot_right - l.plot_left) / n;
  l.plot_top = kLegendTop + 3 * kLegendRow + 14;
  l.plot_bottom = l.plot_top + kPlotHeight;
  l.height = l.plot_bottom + kLabelRoom;
  double top = r.limit_value > 0 && std::isfinite(r.limit_value) ? r.limit_value : 0;
  for (const SweepShape& s : r.shapes) {
    if (s.value && std::isfinite(*s.value)) top = std::max(top, *s.value);
    if (s.yardstick && std::isfinite(s.yardstick->value)) top = std::max(top, s.yardstick->value);
  }
  if (top > 0) {
    // Headroom above the highest bar or line for its label, then five or so ticks.
    const double padded = top * 1.08;
    l.y_step = nice_step(padded / 5);
    l.y_max = l.y_step * std::ceil(padded / l.y_step - 1e-9);
  }
  double bottom = top;
  for (const SweepShape& s : r.shapes) {
    if (s.value && *s.value > 0) bottom = std::min(bottom, *s.value);
    if (s.yardstick && s.yardstick->value > 0) bottom = std::min(bottom, s.yardstick->value);
  }
  if (top > 0 && bottom > 0 && top / bottom >= 100) {
    l.log_scale = true;
    l.y_min = std::pow(10.0, std::floor(std::log10(bottom)));
    l.y_max = std::pow(10.0, std::ceil(std::log10(top * 1.08)));
    l.y_step = 10;  // a factor per tick
  }
  return l;
}

double SweepChartLayout::y_of(double v) const {
  const double span = plot_bottom - plot_top;
  if (!log_scale) return plot_bottom - span * v / y_max;
  const double lo = std::log10(y_min), hi = std::log10(y_max);
  const double t = v > 0 ? (std::log10(v) - lo) / (hi - lo) : 0;
  return plot_bottom - span * std::clamp(t, 0.0, 1.0);
}

namespace {

// Style rules of the chart, shared by sweep.html and sweep.svg.
constexpr const char* kChartCss = R"(svg.chart { display: block; height: auto; }
svg.chart text { font-size: 12px; fill: #1d2330; }
svg.chart .axis { stroke: #4a5366; stroke-width: 1; }
svg.chart .grid { stroke: #e3e6ec; stroke-width: 1; }
svg.chart .tick { fill: #4a5366; }
svg.chart .solution { fill: #1f4fb4; }
svg.chart .yardstick { fill: #e08a1e; }
svg.chart .limit { stroke: #c0262d; stroke-width: 2; stroke-dasharray: 6 4; }
svg.chart text.limit-label { fill: #c0262d; }
svg.chart text.failed { fill: #c0262d; font-weight: 700; font-size: 14px; }
)";

// The legend: the solution, the yardstick and the limit, one row each.
void chart_legend(std::ostringstream& h, const SweepReport& r, const SweepChartLayout& l,
                  bool standalone) {
  const auto esc = html_escape;
  const std::string unit = esc(r.metric_unit);
  double ly = kLegendTop;
  h << "<g class=\"legend\">\n";
  h << "<rect class=\"solution\" x=\"" << fixed(l.plot_left, 1) << "\" y=\"" << fixed(ly + 3, 1)
    << "\" width=\"14\" height=\"12\"/><text x=\"" << fixed(l.plot_left + 20, 1) << "\" y=\""
    << fixed(ly + 13, 1) << "\">solution: " << esc(base_name(r.solution_path));
  // A chart on its own (a README's image) says where it was measured.
  const std::string device_name = field_text(r.device, "name");
  if (standalone && !device_name.empty()) h << ", on " << esc(device_name);
  h << "</text>\n";
  ly += kLegendRow;
  h << "<rect class=\"yardstick\" x=\"" << fixed(l.plot_left, 1) << "\" y=\"" << fixed(ly + 3, 1)
    << "\" width=\"14\" height=\"12\"/><text x=\"" << fixed(l.plot_left + 20, 1) << "\" y=\""
    << fixed(ly + 13, 1)
    << "\">yardstick: " << esc(r.yardstick_name.empty() ? "none timed" : r.yardstick_name)
    << "</text>\n";
  ly += kLegendRow;
  h << "<line class=\"limit\" x1=\"" << fixed(l.plot_left, 1) << "\" y1=\"" << fixed(ly + 9, 1)
    << "\" x2=\"" << fixed(l.plot_left + 14, 1) << "\" y2=\"" << fixed(ly + 9, 1)
    << "\"/><text x=\"" << fixed(l.plot_left + 20, 1) << "\" y=\"" << fixed(ly + 13, 1)
    << "\">device limit (" << esc(r.limit_name)
    << "): " << (r.limit_value > 0 ? value_text(r.limit_value) + " " + unit : "unknown")
    << "</text>\n";
  h << "</g>\n";
}

// The value axis: grid lines, ticks, its title, and both axes.
void chart_axes(std::ostringstream& h, const SweepReport& r, const SweepChartLayout& l) {
  const std::string unit = html_escape(r.metric_unit);
  std::vector<double> ticks;
  if (l.log_scale) {
    for (double v = l.y_min; v <= l.y_max * (1 + 1e-9); v *= 10) ticks.push_back(v);
  } else {
    for (int k = 0; k * l.y_step <= l.y_max * (1 + 1e-9); ++k) ticks.push_back(k * l.y_step);
  }
  for (double v : ticks) {
    const double y = l.y_of(v);
    h << "<line class=\"grid\" x1=\"" << fixed(l.plot_left, 1) << "\" y1=\"" << fixed(y, 1)
      << "\" x2=\"" << fixed(l.plot_right, 1) << "\" y2=\"" << fixed(y, 1) << "\"/>"
      << "<text class=\"tick\" x=\"" << fixed(l.plot_left - 6, 1) << "\" y=\"" << fixed(y + 4, 1)
      << "\" text-anchor=\"end\">" << tick_text(v, l.log_scale ? v : l.y_step) << "</text>\n";
  }
  const double mid = (l.plot_top + l.plot_bottom) / 2;
  h << "<text class=\"axis-title\" x=\"16\" y=\"" << fixed(mid, 1)
    << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " << fixed(mid, 1) << ")\">" << unit
    << (l.log_scale ? " (log scale)" : "") << "</text>\n";
  h << "<line class=\"axis\" x1=\"" << fixed(l.plot_left, 1) << "\" y1=\"" << fixed(l.plot_top, 1)
    << "\" x2=\"" << fixed(l.plot_left, 1) << "\" y2=\"" << fixed(l.plot_bottom, 1) << "\"/>"
    << "<line class=\"axis\" x1=\"" << fixed(l.plot_left, 1) << "\" y1=\""
    << fixed(l.plot_bottom, 1) << "\" x2=\"" << fixed(l.plot_right, 1) << "\" y2=\""
    << fixed(l.plot_bottom, 1) << "\"/>\n";
}

// Shape i's bars: the solution's left (a cross where it failed), the yardstick's right.
void chart_shape(std::ostringstream& h, const SweepReport& r, const SweepChartLayout& l, size_t i) {
  const auto esc = html_escape;
  const std::string unit = esc(r.metric_unit);
  const double bar_w = l.group_width * 0.34;
  const SweepShape& s = r.shapes[i];
  const double cx = l.x_center(i);
  const std::string name = esc(s.name), label = esc(s.label);
  h << "<g class=\"shape\" data-shape=\"" << name << "\" data-dims=\"" << label << "\">";
  if (s.value) {
    const double y = l.y_of(*s.value);
    h << "<rect class=\"solution\" x=\"" << fixed(cx - bar_w - 1, 1) << "\" y=\"" << fixed(y, 1)
      << "\" width=\"" << fixed(bar_w, 1) << "\" height=\"" << fixed(l.plot_bottom - y, 1)
      << "\"><title>" << name << " (" << label << "): solution " << value_text(*s.value) << " "
      << unit << (s.over_limit ? ", above the device's limit" : "") << "</title></rect>";
  } else {
    h << "<text class=\"failed\" x=\"" << fixed(cx - bar_w / 2 - 1, 1) << "\" y=\""
      << fixed(l.plot_bottom - 6, 1) << "\" text-anchor=\"middle\">&#x2717;<title>" << name << " ("
      << label << "): " << esc(s.verdict) << (s.reason.empty() ? "" : ": ") << esc(s.reason)
      << "</title></text>";
  }
  if (s.yardstick) {
    const double y = l.y_of(s.yardstick->value);
    h << "<rect class=\"yardstick\" x=\"" << fixed(cx + 1, 1) << "\" y=\"" << fixed(y, 1)
      << "\" width=\"" << fixed(bar_w, 1) << "\" height=\"" << fixed(l.plot_bottom - y, 1)
      << "\"><title>" << name << " (" << label << "): " << esc(s.yardstick->name) << " "
      << value_text(s.yardstick->value) << " " << unit << "</title></rect>";
  }
  const double ty = l.plot_bottom + 14;
  h << "<text class=\"shape-label\" x=\"" << fixed(cx, 1) << "\" y=\"" << fixed(ty, 1)
    << "\" text-anchor=\"end\" transform=\"rotate(-35 " << fixed(cx, 1) << " " << fixed(ty, 1)
    << ")\">" << label << "<title>" << name << "</title></text></g>\n";
}

// The chart: per shape, the solution's and the yardstick's bars side by side, the device's
// limit as a dashed line. `standalone`: a whole SVG document (namespace, its own style rules
// and a generator comment), for a file of its own; otherwise the element for sweep.html.
std::string chart_svg(const SweepReport& r, bool standalone) {
  const auto esc = html_escape;
  const SweepChartLayout l = sweep_chart_layout(r);
  const std::string unit = esc(r.metric_unit);
  std::ostringstream h;
  h << "<svg class=\"chart\" width=\"" << fixed(l.width, 0) << "\" height=\"" << fixed(l.height, 0)
    << "\" viewBox=\"0 0 " << fixed(l.width, 0) << " " << fixed(l.height, 0)
    << "\" role=\"img\" aria-label=\"" << unit << " per shape: solution, yardstick and the "
    << esc(r.limit_name) << " limit\"";
  if (standalone) {
    h << " xmlns=\"http://www.w3.org/2000/svg\">\n<!-- fp4arena sweep -->\n<style>\n"
      << kChartCss
      << "svg.chart { background: #fff; font-family: system-ui, sans-serif; }\n</style>\n";
  } else {
    h << ">\n";
  }
  chart_legend(h, r, l, standalone);
  chart_axes(h, r, l);
  for (size_t i = 0; i < r.shapes.size(); ++i) chart_shape(h, r, l, i);
  if (r.limit_value > 0) {
    const double y = l.y_of(r.limit_value);
    h << "<line class=\"limit\" data-value=\"" << r.limit_value << "\" x1=\""
      << fixed(l.plot_left, 1) << "\" y1=\"" << fixed(y, 1) << "\" x2=\"" << fixed(l.plot_right, 1)
      << "\" y2=\"" << fixed(y, 1) << "\"/><text class=\"limit-label\" x=\""
      << fixed(l.plot_right - 4, 1) << "\" y=\"" << fixed(y - 5, 1) << "\" text-anchor=\"end\">"
      << esc(r.limit_name) << " limit " << value_text(r.limit_value) << " " << unit << "</text>\n";
  }
  h << "</svg>\n";
  return h.str();
}

}  // namespace

std::string sweep_svg(const SweepReport& r) {
  return chart_svg(r, true);
}

namespace {

// The page's head, its style rules included, up to <main>.
void sweep_head(std::ostringstream& h, const SweepReport& r) {
  const auto esc = html_escape;
  h << R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="generator" content="fp4arena sweep">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fp4arena sweep: )"
    << esc(r.challenge) << R"(</title>
<style>
body { margin: 0; background: #f6f7f9; color: #1d2330;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
.meta { color: #4a5366; margin: 2px 0; }
section { background: #fff; border: 1px solid #dde1e8; border-radius: 8px;
  padding: 16px 20px; margin: 20px 0; }
.scroll { overflow-x: auto; }
)" << kChartCss
    << R"(table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { padding: 5px 9px; border-bottom: 1px solid #eceff4; text-align: left; vertical-align: top; }
th { background: #f1f3f7; font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.failed td { background: #fff1f1; }
.verdict-passed { color: #1a7f37; font-weight: 600; }
.verdict-failed { color: #c0262d; font-weight: 600; }
td.reason { min-width: 260px; max-width: 480px; overflow-wrap: anywhere; font-size: 13px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
</style>
</head>
<body>
<main>
)";
}

// The lines under the title: the solution, the device and its limit, the judge and the method.
void sweep_meta(std::ostringstream& h, const SweepReport& r) {
  const auto esc = html_escape;
  const std::string unit = esc(r.metric_unit);
  const std::string device_name = field_text(r.device, "name");
  int passed = 0;
  for (const SweepShape& s : r.shapes) passed += s.passed();
  h << "<h1>Sweep: " << esc(r.challenge) << " <small>spec v" << r.spec_version << "</small></h1>\n";
  if (!r.title.empty()) h << "<p class=\"meta\">" << esc(r.title) << "</p>\n";
  h << "<p class=\"meta\">solution <code>" << esc(r.solution_path) << "</code> sha256 <code>"
    << esc(r.solution_sha256.substr(0, 12)) << "</code></p>\n";
  h << "<p class=\"meta\">device " << esc(device_name.empty() ? "unknown" : device_name);
  const std::string sms = field_text(r.device, "sm_count");
  const std::string clock = field_text(r.device, "sm_clock_max_mhz");
  if (!sms.empty()) h << ", " << esc(sms) << " SMs";
  if (!clock.empty()) h << ", " << esc(clock) << " MHz max";
  h << "; " << esc(r.limit_name) << " limit ";
  if (r.limit_value > 0) {
    h << value_text(r.limit_value) << " " << unit;
  } else {
    h << "unknown for this device";
  }
  h << "</p>\n<p class=\"meta\">fp4arena " << esc(r.judge_version) << ", " << esc(r.created_utc)
    << "; shapes from " << esc(r.shapes_source) << "; " << esc(r.timing) << "</p>\n";
  h << "<p class=\"meta summary\"><strong>" << passed << " of " << r.shapes.size()
    << " shapes passed</strong>; not a submit record: a sweep is never ranked.</p>\n";
}

// True when some shape has its speed of light: the table's share column is then % of it.
bool any_sol(const SweepReport& r) {
  for (const SweepShape& s : r.shapes)
    if (s.speed_of_light_ms) return true;
  return false;
}

// A shape's share of its speed of light (or, in a sweep without the field, of the limit).
std::string share_cell(const SweepReport& r, const SweepShape& s) {
  if (any_sol(r)) {
    const std::optional<double> p = pct_of_sol(s);
    return p ? fixed(*p, 1) : "&ndash;";
  }
  return s.value && r.limit_value > 0 ? fixed(100 * *s.value / r.limit_value, 1) : "&ndash;";
}

// The table: one row per shape.
void sweep_table(std::ostringstream& h, const SweepReport& r) {
  const auto esc = html_escape;
  const std::string unit = esc(r.metric_unit);
  h << "<section>\n<div class=\"scroll\"><table>\n<thead><tr><th>shape</th><th>dims</th>"
    << "<th>verdict</th><th class=\"num\">median ms</th><th class=\"num\">" << unit
    << "</th><th class=\"num\">" << (any_sol(r) ? "% of SoL" : "% of " + esc(r.limit_name))
    << "</th><th class=\"num\">yardstick ms</th><th class=\"num\">yardstick " << unit
    << "</th><th class=\"num\">ratio</th><th>reason</th></tr></thead>\n<tbody>\n";
  for (const SweepShape& s : r.shapes) {
    const bool ok = s.passed();
    h << "<tr class=\"" << (ok ? "passed" : "failed") << "\" data-shape=\"" << esc(s.name)
      << "\"><td>" << esc(s.name) << "</td><td><code>" << esc(s.label) << "</code></td><td class=\""
      << (ok ? "verdict-passed" : "verdict-failed") << "\">" << esc(s.verdict)
      << (s.over_limit ? " (over limit)" : "") << "</td>";
    h << "<td class=\"num\">" << (s.median_ms ? fixed(*s.median_ms, 4) : "&ndash;") << "</td>"
      << "<td class=\"num\">" << (s.value ? value_text(*s.value) : "&ndash;") << "</td>"
      << "<td class=\"num\">" << share_cell(r, s) << "</td>";
    if (s.yardstick) {
      h << "<td class=\"num\">" << fixed(s.yardstick->median_ms, 4) << "</td><td class=\"num\">"
        << value_text(s.yardstick->value) << "</td>";
    } else {
      h << "<td class=\"num\">&ndash;</td><td class=\"num\">&ndash;</td>";
    }
    const std::optional<double> ratio = s.ratio();
    h << "<td class=\"num\">" << (ratio ? ratio_text(*ratio) : "&ndash;")
      << "</td><td class=\"reason\">" << esc(s.reason) << "</td></tr>\n";
  }
  h << "</tbody>\n</table></div>\n</section>\n";
}

}  // namespace

std::string sweep_html(const SweepReport& r) {
  std::ostringstream h;
  sweep_head(h, r);
  sweep_meta(h, r);
  h << "<section>\n<div class=\"scroll\">\n" << chart_svg(r, false) << "</div>\n</section>\n";
  sweep_table(h, r);
  h << "</main>\n</body>\n</html>\n";
  return h.str();
}

}  // namespace fp4arena
