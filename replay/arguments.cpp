#include "replay/arguments.h"

#include <cstdint>
#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>

#include "recorder/dtypes.h"
#include "replay/reduced_precision.h"

namespace acc::replay {
namespace {

using format::Role;

bool isFloatText(const std::string& s) {
  return s.find_first_of(".eE") != std::string::npos || s == "inf" || s == "-inf" || s == "nan";
}

bool isIntText(const std::string& s) {
  if (s.empty()) return false;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

double parseDouble(const std::string& s) {
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  size_t used = 0;
  double v = std::stod(s, &used);
  if (used != s.size()) throw std::invalid_argument(s);
  return v;
}

// "[1, 2]" -> {"1", "2"}; "[]" -> {}.
std::vector<std::string> listItems(const std::string& text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') throw std::invalid_argument(text);
  std::vector<std::string> items;
  std::string item;
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    if (text[i] == ',') {
      items.push_back(item);
      item.clear();
    } else if (text[i] != ' ') {
      item += text[i];
    }
  }
  if (!item.empty()) items.push_back(item);
  return items;
}

c10::TypePtr unwrapOptional(const c10::TypePtr& type) {
  if (auto optional = type->cast<c10::OptionalType>()) return optional->getElementType();
  return type;
}

// A non-tensor argument from its recorded text, as `type` wants it.
c10::IValue scalarValue(const std::string& text, const c10::TypePtr& declared) {
  if (text == "None") return c10::IValue();
  const c10::TypePtr type = unwrapOptional(declared);
  const std::string name = type->str();
  switch (type->kind()) {
    case c10::TypeKind::FloatType: return parseDouble(text);
    case c10::TypeKind::BoolType: return text == "True";
    case c10::TypeKind::StringType:
      return text.size() >= 2 && text.front() == '"' ? text.substr(1, text.size() - 2) : text;
    case c10::TypeKind::DeviceObjType: return c10::Device(c10::kCPU);  // replay runs on the CPU
    case c10::TypeKind::ListType: {
      const std::vector<std::string> items = listItems(text);
      const std::string element = unwrapOptional(type->cast<c10::ListType>()->getElementType())->str();
      if (element == "float") {
        std::vector<double> v;
        for (const std::string& i : items) v.push_back(parseDouble(i));
        return v;
      }
      if (element == "bool") {
        c10::List<bool> v;
        for (const std::string& i : items) v.push_back(i == "True");
        return v;
      }
      std::vector<int64_t> v;  // int, SymInt
      for (const std::string& i : items) v.push_back(std::stoll(i));
      return v;
    }
    default: break;
  }
  if (text == "True" || text == "False") return text == "True";
  // Scalar, int, SymInt, ScalarType, Layout, MemoryFormat (ints in IValues).
  if (isIntText(text) && name != "float") return static_cast<int64_t>(std::stoll(text));
  if (isFloatText(text)) return parseDouble(text);
  throw std::invalid_argument("'" + text + "' is not a " + name);
}

}  // namespace

std::optional<std::string> notReplayable(const format::OpRecord& r, const c10::FunctionSchema* schema) {
  const std::string& op = r.op;
  // c10d::, _c10d_functional::, c10d_functional:: (torch 2.x's collectives).
  if (op.substr(0, op.find("::")).find("c10d") != std::string::npos) {
    return "a collective: its result depends on the other ranks";
  }
  // Ops that draw random numbers (torch 2.x tags them nondeterministic_seeded;
  // this list also serves torch 1.13): run again, they draw other numbers.
  static const char* const kRandom[] = {
      "dropout", "bernoulli", "aten::rand", "aten::randn", "aten::randint", "aten::randperm", "normal",
      "uniform_", "multinomial", "rrelu", "exponential_", "geometric_", "log_normal_", "cauchy_",
      "aten::random_", "poisson", "_standard_gamma", "binomial", "_sample_dirichlet"};
  for (const char* k : kRandom) {
    if (op.find(k) != std::string::npos) return "draws random numbers";
  }
  if (schema != nullptr) {
    for (const c10::Argument& a : schema->arguments()) {
      if (unwrapOptional(a.type())->kind() != c10::TypeKind::GeneratorType) continue;
      bool none = false;
      for (const format::Scalar& s : r.scalars) {
        if (&a - schema->arguments().data() == static_cast<std::ptrdiff_t>(s.position)) none = s.value == "None";
      }
      if (!none) return "draws random numbers (a generator argument)";
    }
  }
  return std::nullopt;
}

at::Tensor tensorFromRecord(const format::Tensor& t) {
  const c10::ScalarType type = recorder::scalarTypeOf(t.dtype);
  if (type == c10::ScalarType::Undefined) throw std::runtime_error("a tensor of unknown element type");
  if (!t.has_data) throw std::runtime_error(t.uninitialized ? "a tensor holding uninitialized memory (not recorded)"
                                                            : "a tensor recorded without its values (level < 2)");
  at::Tensor out = at::empty(t.shape, at::TensorOptions().dtype(type));
  if (static_cast<uint64_t>(out.nbytes()) != t.data.size()) {
    throw std::runtime_error("a tensor whose recorded bytes do not match its shape");
  }
  if (!t.data.empty()) std::memcpy(out.data_ptr(), t.data.data(), t.data.size());
  return out;
}

at::Tensor withRecordedLayout(const at::Tensor& t, const format::Tensor& recorded) {
  if (recorded.strides.size() != static_cast<size_t>(t.dim()) || t.strides() == at::IntArrayRef(recorded.strides) ||
      t.numel() < 2) {
    return t;
  }
  // Only layouts whose elements each have one place (no expanded or
  // overlapping strides): copy_ fills them element for element.
  at::Tensor out = at::empty_strided(t.sizes(), recorded.strides, t.options());
  if (!out.is_non_overlapping_and_dense()) return t;
  out.copy_(t);
  return out;
}

Arguments buildArguments(const format::OpRecord& r, const c10::FunctionSchema& schema, const BuildOptions& options) {
  const bool promote = options.promote;
  const int round_mantissa = options.round_mantissa;
  std::map<uint32_t, std::map<uint32_t, const format::Tensor*>> tensors;  // position -> item -> tensor
  std::map<uint32_t, const std::string*> scalars;
  for (const format::Tensor& t : r.tensors) {
    if (t.role == Role::Input) tensors[t.position][t.item] = &t;
  }
  for (const format::Scalar& s : r.scalars) scalars[s.position] = &s.value;

  Arguments out;
  auto prepare = [&](const format::Tensor& recorded, const std::string& argument) {
    at::Tensor t = tensorFromRecord(recorded);
    if (options.autocast_to && t.is_floating_point()) {
      const at::ScalarType from = t.scalar_type();
      const bool narrow = from == at::kHalf || from == at::kBFloat16;
      if (options.autocast_up ? narrow : from == at::kFloat) t = t.to(*options.autocast_to);
    }
    if (round_mantissa && t.scalar_type() == at::kFloat && roundedArgument(r.op, argument)) {
      roundMantissa(t.data_ptr<float>(), t.numel(), round_mantissa);  // fresh and contiguous
    }
    if (promote && t.is_floating_point()) t = t.to(at::kDouble);
    if (promote && t.is_complex()) t = t.to(at::kComplexDouble);
    t = withRecordedLayout(t, recorded);
    if (options.grad && (t.is_floating_point() || t.is_complex())) {
      if (options.no_grad.count(argument)) {
        out.floating.push_back(t);
      } else {
        t.requires_grad_(true);
        out.floating.push_back(t);
        t = t.clone();  // an in-place op may write its argument: not the leaf
      }
    }
    return t;
  };
  const auto& args = schema.arguments();
  for (uint32_t i = 0; i < args.size(); ++i) {
    const c10::Argument& a = args[i];
    const c10::TypePtr type = unwrapOptional(a.type());
    auto what = [&] { return "argument " + std::to_string(i) + " (" + a.name() + ")"; };
    try {
      auto found = tensors.find(i);
      if (type->kind() == c10::TypeKind::TensorType) {
        if (found != tensors.end()) {
          out.stack.emplace_back(prepare(*found->second.begin()->second, a.name()));
          continue;
        }
      } else if (type->kind() == c10::TypeKind::ListType &&
                 unwrapOptional(type->cast<c10::ListType>()->getElementType())->kind() == c10::TypeKind::TensorType) {
        const bool optional_items = type->cast<c10::ListType>()->getElementType()->kind() == c10::TypeKind::OptionalType;
        if (found != tensors.end() || (scalars.count(i) && *scalars[i] == "[]")) {
          const uint32_t n = found == tensors.end() ? 0 : found->second.rbegin()->first + 1;
          if (optional_items) {
            c10::List<c10::optional<at::Tensor>> list;
            for (uint32_t k = 0; k < n; ++k) {
              auto item = found->second.find(k);
              list.push_back(item == found->second.end() ? c10::optional<at::Tensor>() : prepare(*item->second, a.name()));
            }
            out.stack.emplace_back(list);
          } else {
            std::vector<at::Tensor> list;
            for (uint32_t k = 0; k < n; ++k) {
              auto item = found->second.find(k);
              if (item == found->second.end()) throw std::runtime_error("item " + std::to_string(k) + " was not recorded");
              list.push_back(prepare(*item->second, a.name()));
            }
            out.stack.emplace_back(list);
          }
          continue;
        }
      }
      auto scalar = scalars.find(i);
      if (scalar != scalars.end()) {
        out.stack.push_back(scalarValue(*scalar->second, a.type()));
      } else if (a.default_value()) {
        out.stack.push_back(*a.default_value());
      } else if (a.type()->kind() == c10::TypeKind::OptionalType) {
        out.stack.emplace_back();
      } else {
        throw std::runtime_error("was not recorded");
      }
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(what() + ": " + e.what());
    } catch (const std::logic_error& e) {  // std::stod & co.
      throw std::runtime_error(what() + ": cannot read '" + (scalars.count(i) ? *scalars[i] : "") + "' as " +
                               a.type()->str());
    }
  }
  return out;
}

}  // namespace acc::replay
