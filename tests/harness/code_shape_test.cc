// The rule that keeps the judge easy to change: no function in harness/ is longer than 80
// lines, its signature included. A small scanner of C++ text finds every function definition
// (comments, string and character literals and preprocessor lines blanked, braces matched);
// the scanner is tested on its own first, so the rule cannot pass by finding nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "harness/process.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

constexpr int kMaxFunctionLines = 80;

struct FunctionSpan {
  int first_line = 0;  // the signature's first line
  int last_line = 0;   // the closing brace's line
  std::string head;    // the signature, on one line
  int lines() const { return last_line - first_line + 1; }
};

bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Blanks from `i` up to and including the first `end` at or after `from`; newlines are kept.
size_t blank_until(std::string* s, size_t i, size_t from, const std::string& end) {
  size_t stop = s->find(end, from);
  stop = stop == std::string::npos ? s->size() : stop + end.size();
  for (size_t k = i; k < stop; ++k) {
    if ((*s)[k] != '\n') (*s)[k] = ' ';
  }
  return stop;
}

// Blanks a quoted literal opened at `i` (quote `q`), escapes honoured; returns the end.
size_t blank_quoted(std::string* s, size_t i, char q) {
  size_t k = i + 1;
  while (k < s->size() && (*s)[k] != q && (*s)[k] != '\n') k += (*s)[k] == '\\' ? 2 : 1;
  size_t stop = std::min(k + 1, s->size());
  for (size_t j = i; j < stop; ++j) (*s)[j] = ' ';
  return stop;
}

// The source with comments, string and character literals (raw strings too) and preprocessor
// lines replaced by spaces, every newline kept: line numbers stay the source's.
std::string blank_non_code(std::string s) {
  bool line_start = true;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    char next = i + 1 < s.size() ? s[i + 1] : '\0';
    bool after_ident = i > 0 && is_ident(s[i - 1]);
    if (c == '\n' || c == ' ' || c == '\t') {
      line_start = line_start || c == '\n';
      ++i;
      continue;
    }
    if (line_start && c == '#') {  // a directive, continuation lines included
      size_t k = i;
      char prev = '\0';
      while (k < s.size() && (s[k] != '\n' || prev == '\\')) {
        prev = s[k];
        if (s[k] != '\n') s[k] = ' ';
        ++k;
      }
      i = k;
    } else if (c == '/' && next == '/') {
      i = blank_until(&s, i, i, "\n") - 1;  // keep the newline itself
    } else if (c == '/' && next == '*') {
      i = blank_until(&s, i, i + 2, "*/");
    } else if (c == 'R' && next == '"' && !after_ident) {
      size_t open = s.find('(', i + 2);
      std::string delim = s.substr(i + 2, open - (i + 2));
      i = blank_until(&s, i, open, ")" + delim + "\"");
    } else if (c == '"' || (c == '\'' && !after_ident)) {
      i = blank_quoted(&s, i, c);
    } else {
      ++i;
    }
    line_start = false;
  }
  return s;
}

// Whether the text before a `{` is a function's signature: it ends in a parameter list,
// perhaps with qualifiers or a trailing return type, and is not a control statement.
bool opens_function(const std::string& head) {
  static const std::regex signature(
      R"(\)(\s*(const|override|noexcept|final|mutable|&&?))*\s*(->[^;{}]*)?$)");
  static const std::regex control(R"(^(if|for|while|switch|catch|else|do)\b)");
  return std::regex_search(head, signature) && !std::regex_search(head, control);
}

std::string one_line(std::string head) {
  static const std::regex space(R"(\s+)");
  head = std::regex_replace(head, space, " ");
  size_t a = head.find_first_not_of(' ');
  size_t b = head.find_last_not_of(' ');
  return a == std::string::npos ? "" : head.substr(a, b - a + 1);
}

// Every function definition that is not inside another one (lambdas and blocks count as part
// of their function), in the order their bodies close.
std::vector<FunctionSpan> function_spans(const std::string& source) {
  std::string code = blank_non_code(source);
  struct Open {
    bool function;
    FunctionSpan span;
  };
  std::vector<Open> open;
  std::vector<FunctionSpan> out;
  std::string head;
  int line = 1, head_line = 0;
  bool in_function = false;
  for (char c : code) {
    if (c == '{') {
      std::string h = one_line(head);
      bool fn = !in_function && opens_function(h);
      open.push_back({fn, {head_line ? head_line : line, 0, h}});
      in_function = in_function || fn;
    } else if (c == '}' && !open.empty()) {
      Open o = open.back();
      open.pop_back();
      if (o.function) {
        o.span.last_line = line;
        out.push_back(o.span);
        in_function = false;
      }
    }
    std::string label = c == ':' ? one_line(head) : "";
    if (c == '{' || c == '}' || c == ';' || label == "public" || label == "private" ||
        label == "protected") {
      head.clear();
      head_line = 0;
    } else {
      if (head_line == 0 && !std::isspace(static_cast<unsigned char>(c))) head_line = line;
      head += c;
    }
    if (c == '\n') ++line;
  }
  return out;
}

TEST(CodeShapeScanner, FindsEachFunctionFromItsSignatureToItsClosingBrace) {
  std::string src =
      "#include <x>\n"                   // 1
      "namespace a {\n"                  // 2
      "int f(int x,\n"                   // 3
      "      int y) {\n"                 // 4
      "  if (x) { return y; }\n"         // 5
      "  auto g = [&](int z) {\n"        // 6
      "    return z;\n"                  // 7
      "  };\n"                           // 8
      "  return g(x);\n"                 // 9
      "}\n"                              // 10
      "class C {\n"                      // 11
      " public:\n"                       // 12
      "  int m() const { return 1; }\n"  // 13
      "};\n"                             // 14
      "}  // namespace a\n";             // 15
  std::vector<FunctionSpan> spans = function_spans(src);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].first_line, 3);
  EXPECT_EQ(spans[0].last_line, 10);
  EXPECT_EQ(spans[0].lines(), 8);
  EXPECT_EQ(spans[0].head, "int f(int x, int y)");
  EXPECT_EQ(spans[1].first_line, 13);
  EXPECT_EQ(spans[1].lines(), 1);
  EXPECT_EQ(spans[1].head, "int m() const");
}

TEST(CodeShapeScanner, IgnoresBracesInCommentsLiteralsAndDirectives) {
  std::string src =
      "#define OPEN \\\n"
      "  {\n"
      "// int not_code() {\n"
      "/* void nor_this() {\n"
      "} */\n"
      "const char* s = \"{ \\\" }\";\n"
      "const char* r = R\"x(int raw() { )\" }\n)x\";\n"
      "char c = '{';\n"
      "void only() {\n"
      "  char d = '}';\n"
      "}\n";
  std::vector<FunctionSpan> spans = function_spans(src);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].head, "void only()");
  EXPECT_EQ(spans[0].first_line, 10);
  EXPECT_EQ(spans[0].last_line, 12);
}

TEST(CodeShapeScanner, CountsALongFunctionAsLong) {
  std::string src = "int long_one() {\n";
  for (int i = 0; i < 90; ++i) src += "  ;\n";
  src += "}\n";
  std::vector<FunctionSpan> spans = function_spans(src);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].lines(), 92);
}

TEST(CodeShape, NoFunctionInHarnessIsLongerThan80Lines) {
  namespace fs = std::filesystem;
  std::string dir = testing_util::source_dir() + "/harness";
  std::ostringstream too_long;
  int functions = 0, longest = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    std::string ext = e.path().extension().string();
    if (ext != ".cc" && ext != ".h" && ext != ".cu" && ext != ".cuh") continue;
    std::string text, err;
    ASSERT_TRUE(read_file(e.path().string(), &text, &err)) << err;
    for (const FunctionSpan& f : function_spans(text)) {
      ++functions;
      longest = std::max(longest, f.lines());
      if (f.lines() > kMaxFunctionLines) {
        too_long << "\n  harness/" << e.path().filename().string() << ":" << f.first_line << " "
                 << f.lines() << " lines: " << f.head;
      }
    }
  }
  // The scanner found the judge's functions (about 700 of them), not next to none.
  EXPECT_GT(functions, 400);
  EXPECT_TRUE(too_long.str().empty()) << "functions in harness/ longer than " << kMaxFunctionLines
                                      << " lines (split them):" << too_long.str();
  std::printf("[ info ] %d functions in harness/, the longest %d lines\n", functions, longest);
}

}  // namespace
}  // namespace fp4arena
