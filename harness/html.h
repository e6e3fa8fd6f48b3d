// Text into HTML: the one escaper of the pages the judge writes (the leaderboard, the sweep).
#pragma once

#include <string>

namespace fp4arena {

/// `s` as HTML text or attribute value: & < > " ' as entities, control characters other than
/// tab and newline and every byte of ill-formed UTF-8 (overlongs, surrogates, truncated
/// sequences, beyond U+10FFFF) as U+FFFD; well-formed UTF-8 kept.
std::string html_escape(const std::string& s);

}  // namespace fp4arena
