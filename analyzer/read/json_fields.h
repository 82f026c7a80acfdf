// Fields of a JSON file a user hands acc (manifest.json and its numeric
// settings), read without
// trusting their types: a field that is absent or of another type reads as
// the fallback, where nlohmann's value() would throw out of the command.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace acc::analyzer {

// The field at `key` of an object, or null.
inline const nlohmann::json* field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it != j.end() ? &*it : nullptr;
}

inline std::string textField(const nlohmann::json& j, const char* key, const std::string& fallback = "") {
  const nlohmann::json* f = field(j, key);
  return f != nullptr && f->is_string() ? f->get<std::string>() : fallback;
}

inline int64_t intField(const nlohmann::json& j, const char* key, int64_t fallback = 0) {
  const nlohmann::json* f = field(j, key);
  return f != nullptr && f->is_number_integer() ? f->get<int64_t>() : fallback;
}

// A count: a non-negative integer.
inline uint64_t countField(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = field(j, key);
  return f != nullptr && f->is_number_unsigned() ? f->get<uint64_t>() : 0;
}

// True only for a JSON true.
inline bool flagField(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = field(j, key);
  return f != nullptr && f->is_boolean() && f->get<bool>();
}

// The object at `key`, or an empty one.
inline const nlohmann::json& objectField(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* f = field(j, key);
  return f != nullptr && f->is_object() ? *f : kEmpty;
}

// A field as JSON text ("?" when absent), for printing whatever it holds.
inline std::string fieldText(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = field(j, key);
  return f != nullptr ? f->dump() : "?";
}

}  // namespace acc::analyzer
