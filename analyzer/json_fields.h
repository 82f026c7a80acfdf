// Fields of a JSON file a user hands acc (manifest.json), read without
// trusting their types: a field that is absent or of another type reads as
// the fallback, where nlohmann's value() would throw out of the command.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace acc::analyzer {

inline std::string textField(const nlohmann::json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

inline int64_t intField(const nlohmann::json& j, const char* key, int64_t fallback = 0) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

// A count: a non-negative integer.
inline uint64_t countField(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return 0;
  const auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

// The object at `key`, or an empty one.
inline const nlohmann::json& objectField(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (!j.is_object()) return kEmpty;
  const auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kEmpty;
}

// A field as JSON text ("?" when absent), for printing whatever it holds.
inline std::string fieldText(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "?";
  const auto it = j.find(key);
  return it != j.end() ? it->dump() : "?";
}

}  // namespace acc::analyzer
