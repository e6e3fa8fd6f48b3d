// Small text helpers shared by the pages and messages the judge writes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fp4arena {

/// `v` with `digits` digits after the point ("%.*f").
std::string fixed(double v, int digits);

/// `s` cut to at most `max` bytes without splitting a UTF-8 sequence, "..." appended when cut.
std::string shorten(const std::string& s, std::size_t max);

/// `s` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD, so
/// that a file name of any bytes can be shown and written to JSON.
std::string valid_utf8(const std::string& s);

/// The folder part of `path`: "." where it has none, "/" for a file of the root.
std::string dir_of(const std::string& path);
/// The last component of `path` (all of it where it has no '/').
std::string base_name(const std::string& path);

/// True when `s` begins (ends) with `affix`.
bool starts_with(const std::string& s, const std::string& affix);
bool ends_with(const std::string& s, const std::string& affix);

/// `text` split into lines without their '\n'; a final line without '\n' is kept.
std::vector<std::string> split_lines(const std::string& text);

}  // namespace fp4arena
