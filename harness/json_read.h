// Reading JSON the judge does not trust (specs, shape lists, records): a bounded file read and
// a pass over the raw text before the recursive parser sees it. One place for both, used by
// spec.cc and record.cc; and the one way the judge writes a figure that may be absent.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace fp4arena {

enum class ReadStatus { kOk, kCannotRead, kTooLarge };

/// Reads the regular file at `path` into *text, never more than `max_bytes` even if the file
/// grows meanwhile. Otherwise *why says what went wrong: kCannotRead ("cannot read the file
/// (...)"), kTooLarge ("file of N bytes"; the caller says what its limit is for).
ReadStatus read_bounded_file(const std::string& path, std::size_t max_bytes, std::string* text,
                             std::string* why);

/// A pass over JSON text before the parser, for what the parser would handle badly or without
/// naming the field: nesting deeper than `max_depth` ("<what> nested deeper than N levels"; the
/// parser would build, and later destroy, an arbitrarily deep tree) and numbers beyond a
/// double's range ("field benchmarks[0].median_ms is not a finite number (1e999)"; nlohmann
/// refuses "1e999" with no hint of where it is). Malformed text is left to the parser: the scan
/// only has to be safe on it. True when neither is found.
bool prescan_json(const std::string& text, int max_depth, const std::string& what,
                  std::string* reason);

/// Reads the JSON file at `path` (at most `max_bytes`, nesting at most `max_depth`, every
/// number within a double's range: read_bounded_file and prescan_json) into *doc. `what` names
/// what the file should be ("a spec"), and `cannot_open` is added to the message when it
/// cannot be opened. False with *err, which starts with the path.
bool read_json_file(const std::string& path, std::size_t max_bytes, int max_depth,
                    const std::string& what, const std::string& cannot_open, nlohmann::json* doc,
                    std::string* err);

/// A figure that may be absent, as the judge writes it (records, sweeps): the number, or null.
inline nlohmann::json json_number_or_null(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace fp4arena
