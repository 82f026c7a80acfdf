// Strings interned for the life of the process. compare holds a record of
// metadata per record of a few windows of steps while it aligns them;
// records repeat their op, name (op numbers restart every step), module and
// node names step after step, so a million records hold a few thousand
// distinct strings, each stored once and named by a 4-byte id.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace acc::analyzer {

class Interned {
 public:
  Interned() = default;  // ""
  // Implicit, so that a RecordMeta's fields take strings as before.
  Interned(std::string_view s);                                  // NOLINT
  Interned(const std::string& s) : Interned(std::string_view(s)) {}  // NOLINT
  Interned(const char* s) : Interned(std::string_view(s)) {}         // NOLINT
  const std::string& str() const;
  operator const std::string&() const { return str(); }  // NOLINT
  bool empty() const { return id_ == 0; }
  uint32_t id() const { return id_; }
  bool operator==(const Interned& o) const { return id_ == o.id_; }
  bool operator!=(const Interned& o) const { return id_ != o.id_; }
  bool operator==(const std::string& o) const { return str() == o; }
  bool operator!=(const std::string& o) const { return str() != o; }
  bool operator==(const char* o) const { return str() == o; }
  bool operator!=(const char* o) const { return str() != o; }
  bool operator<(const Interned& o) const { return str() < o.str(); }
  friend std::ostream& operator<<(std::ostream& out, const Interned& s) { return out << s.str(); }

 private:
  uint32_t id_ = 0;  // 0 is ""
};

}  // namespace acc::analyzer

template <>
struct std::hash<acc::analyzer::Interned> {
  size_t operator()(const acc::analyzer::Interned& s) const { return std::hash<uint32_t>()(s.id()); }
};
