// The records a recording holds, and their binary encoding (docs/FORMAT.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace acc::format {

// Bumped whenever the encoding of a record changes; readers refuse newer ones.
constexpr uint16_t kFormatVersion = 1;

enum class Dtype : uint8_t {
  Unknown = 0, Bool, UInt8, Int8, Int16, Int32, Int64,
  Float16, BFloat16, Float32, Float64, Complex64, Complex128,
};
const char* dtypeName(Dtype d);
size_t dtypeSize(Dtype d);  // bytes per element, 0 when unknown
Dtype dtypeFromName(std::string_view name);

enum class Role : uint8_t { Input = 0, Output = 1, GradIn = 2, GradOut = 3 };
const char* roleName(Role r);

enum class Pass : uint8_t { Forward = 0, Backward = 1 };
const char* passName(Pass p);

// Statistics over every element; min/max/mean/norm are NaN when any element
// is NaN, as torch's reductions are. The checksum is sum(bits_i * (2i+1))
// mod 2^64 over the elements' bit patterns in row-major order, so it is the
// same on every device for bit-identical contents.
struct Stats {
  double min = 0, max = 0, mean = 0, norm = 0;
  uint64_t nan_count = 0, inf_count = 0;
  uint64_t checksum = 0;
};

struct Tensor {
  Role role = Role::Input;
  uint32_t position = 0;  // argument (or output, or gradient) index
  uint32_t item = 0;      // index inside a tensor-list argument
  Dtype dtype = Dtype::Unknown;
  std::string device;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  bool has_stats = false;
  Stats stats;
  bool has_data = false;
  std::string data;  // row-major contiguous, little-endian element bytes

  uint64_t numel() const;
};

struct Scalar {
  uint32_t position = 0;
  std::string value;  // text form: 1, 0.5, True, "mean", [1, 2], None
};

struct OpRecord {
  uint64_t index = 0;  // execution order within the rank (order of op start)
  std::string name;    // {op}.{n}.{fwd|bwd}[.k]
  std::string op;      // aten::conv2d, or the autograd node for bwd
  Pass pass = Pass::Forward;
  int64_t step = 0;
  uint64_t op_number = 0;  // n in the name
  uint32_t depth = 0;      // 0 for top-level ops
  uint64_t thread = 0;
  uint64_t stack_id = 0;  // 0: no stack
  std::string grad_fn;       // bwd: autograd node, e.g. ConvolutionBackward0
  std::string forward_name;  // bwd: the forward record it belongs to
  int64_t sequence_nr = -1;
  uint64_t start_ns = 0, end_ns = 0;
  std::vector<Scalar> scalars;
  std::vector<Tensor> tensors;
};

enum class FrameKind : uint8_t { Python = 0, Native = 1 };

struct StackFrame {
  FrameKind kind = FrameKind::Python;
  std::string text;  // python: file:line function; native: object+0xoffset symbol
};

struct StackRecord {
  uint64_t id = 0;
  std::vector<StackFrame> frames;  // innermost first
};

enum class RecordKind : uint8_t { Stack = 1, Op = 2 };

// Appends one length-prefixed record to `out`.
void encode(const OpRecord& r, std::string& out);
void encode(const StackRecord& r, std::string& out);

// Walks the length-prefixed records of one frame payload.
class RecordCursor {
 public:
  explicit RecordCursor(std::string_view payload) : rest_(payload) {}
  // Returns false at the end; throws FormatError on a malformed record.
  bool next(RecordKind& kind, std::string_view& body);

 private:
  std::string_view rest_;
};

// `with_data` false skips the tensor bytes (listing needs only metadata).
OpRecord decodeOp(std::string_view body, bool with_data = true);
StackRecord decodeStack(std::string_view body);

}  // namespace acc::format
