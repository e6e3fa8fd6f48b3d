#include "harness/challenge.h"

namespace fp4arena {
namespace {

std::map<std::string, ChallengeFactory>& registry() {
  static std::map<std::string, ChallengeFactory> r;
  return r;
}

}  // namespace

bool register_challenge(const std::string& name, ChallengeFactory factory) {
  registry()[name] = std::move(factory);
  return true;
}

std::unique_ptr<Challenge> make_challenge(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second();
}

std::vector<std::string> registered_challenges() {
  std::vector<std::string> names;
  for (const auto& kv : registry()) names.push_back(kv.first);
  return names;
}

}  // namespace fp4arena
