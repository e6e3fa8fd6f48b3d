#include "harness/json_read.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "harness/text.h"

namespace fp4arena {
namespace {

namespace fs = std::filesystem;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

ReadStatus read_bounded_file(const std::string& path, std::size_t max_bytes, std::string* text,
                             std::string* why) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) {
    *why = "cannot read the file (" + ec.message() + ")";
    return ReadStatus::kCannotRead;
  }
  if (size > max_bytes) {
    *why = "file of " + std::to_string(size) + " bytes";
    return ReadStatus::kTooLarge;
  }
  // Read no more than the cap even if the file grows meanwhile.
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "cannot read the file";
    return ReadStatus::kCannotRead;
  }
  text->assign(static_cast<std::size_t>(size) + 1, '\0');
  in.read(&(*text)[0], static_cast<std::streamsize>(text->size()));
  if (in.bad()) {
    *why = "cannot read the file";
    return ReadStatus::kCannotRead;
  }
  text->resize(static_cast<std::size_t>(in.gcount()));
  if (text->size() > max_bytes) {
    *why = "file of more than " + std::to_string(max_bytes) + " bytes";  // it grew
    return ReadStatus::kTooLarge;
  }
  return ReadStatus::kOk;
}

bool prescan_json(const std::string& text, int max_depth, const std::string& what,
                  std::string* reason) {
  struct Frame {
    bool object;
    std::string key;  // the object's current key
    size_t index;     // the array's current index
  };
  std::vector<Frame> stack;
  bool expect_key = false;
  auto path = [&stack]() {
    std::string p;
    for (const Frame& f : stack) {
      if (f.object) {
        p += (p.empty() ? "" : ".") + f.key;
      } else {
        p += "[" + std::to_string(f.index) + "]";
      }
    }
    return p;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const size_t start = ++i;
      while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      if (expect_key && !stack.empty() && stack.back().object) {
        // Keys are shown as written (escapes and all), cut to a sane length.
        stack.back().key = shorten(text.substr(start, std::min(i, text.size()) - start), 40);
        expect_key = false;
      }
    } else if (c == '[' || c == '{') {
      if (static_cast<int>(stack.size()) >= max_depth) {
        *reason = what + " nested deeper than " + std::to_string(max_depth) + " levels";
        return false;
      }
      stack.push_back({c == '{', "", 0});
      expect_key = c == '{';
    } else if (c == ']' || c == '}') {
      if (!stack.empty()) stack.pop_back();
      expect_key = false;
    } else if (c == ',') {
      if (!stack.empty() && stack.back().object) {
        expect_key = true;
      } else if (!stack.empty()) {
        ++stack.back().index;
      }
    } else if (c == '-' || is_digit(c)) {
      size_t end = i;
      while (end < text.size() && (is_digit(text[end]) || std::strchr("+-.eE", text[end]))) ++end;
      const std::string token = text.substr(i, std::min<size_t>(end - i, 400));
      const double v = std::strtod(token.c_str(), nullptr);
      if (!std::isfinite(v)) {
        const std::string where = valid_utf8(path());  // keys are raw bytes here
        *reason = "field " + (where.empty() ? std::string("(top level)") : where) +
                  " is not a finite number (" + shorten(token, 40) + ")";
        return false;
      }
      i = end - 1;
    }
  }
  return true;
}

bool read_json_file(const std::string& path, std::size_t max_bytes, int max_depth,
                    const std::string& what, const std::string& cannot_open, nlohmann::json* doc,
                    std::string* err) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *err = path + ": cannot open" + cannot_open;
    return false;
  }
  std::string text, why;
  switch (read_bounded_file(path, max_bytes, &text, &why)) {
    case ReadStatus::kOk:
      break;
    case ReadStatus::kTooLarge:
      *err = path + ": larger than " + std::to_string(max_bytes >> 20) + " MiB, more than " + what +
             " can be";
      return false;
    case ReadStatus::kCannotRead:
      *err = path + ": cannot open" + cannot_open;
      return false;
  }
  if (!prescan_json(text, max_depth, "JSON", &why)) {
    *err = path + ": not " + what + ": " + why;
    return false;
  }
  try {
    *doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    *err = path + ": not valid JSON: " + e.what();
    return false;
  }
  return true;
}

}  // namespace fp4arena
