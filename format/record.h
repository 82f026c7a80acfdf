// The records a recording holds, and their binary encoding (docs/FORMAT.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace acc::format {

// Bumped whenever the encoding of a record changes; readers refuse newer ones
// and still read every older one (docs/FORMAT.md, "Version history").
constexpr uint16_t kFormatVersion = 9;

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

class ByteWriter;
class ByteReader;

// v9: what a delta's base values go through before the XOR (format/delta_map.h):
// the op's own arithmetic with its scalar, so that a correct kernel's
// output XORs to zeros.
enum class DeltaMap : uint8_t { None = 0, Multiply = 1, Add = 2, Divide = 3, Sqrt = 4 };
// A Stats' encoding inside a record (also used by compare's spill).
void encodeStats(const Stats& s, ByteWriter& w);
Stats decodeStats(ByteReader& r);

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
  bool uninitialized = false;  // held uninitialized memory: values deliberately not recorded
  bool has_data = false;     // element bytes were recorded (level 2)
  uint64_t data_size = 0;    // their size
  uint64_t data_offset = 0;  // v2: where they start in the file's data stream
  bool data_in_stream = false;  // v2: in data frames; v1: inline in the record
  // The recorder's: `data_size` bytes held apart from `data` (level 2's
  // CPU captures, in acc's own memory), which encode() counts and the
  // writer appends after the record.
  bool data_apart = false;
  std::string data;          // the bytes once loaded: row-major contiguous, little-endian
  // v4: the content's id within the rank's recording (0: none). The first
  // tensor with an id holds the statistics and bytes; later ones with the
  // same id are references (content_ref) that carry neither until a reader
  // resolves them (analyzer/read/content_table.h) from the earlier one.
  uint64_t content = 0;
  bool content_ref = false;
  // v8: the recorded bytes are this tensor's XOR those of content
  // `delta_base` (the value an in-place op overwrote): parameters and
  // optimizer state change little per update, so their XOR is mostly zero
  // bytes that compress away. 0: the bytes are the values themselves.
  // Readers undo it while loading the bytes (analyzer/read/recording.h); a
  // reference carries its content's base once resolved.
  uint64_t delta_base = 0;
  // v9: the bytes are XOR'ed with delta_map(the base's values, delta_scalar)
  // instead (format/delta_map.h); None: with the values themselves.
  DeltaMap delta_map = DeltaMap::None;
  double delta_scalar = 0;

  uint64_t numel() const;
};

struct Scalar {
  uint32_t position = 0;
  std::string value;  // text form: 1, 0.5, True, "mean", [1, 2], None
};

// ACC_REFERENCE writes a backward find's forward op again, with the values
// of its inputs, as a forward record named {forward}.captured after the
// forward's own: replay of the backward record runs its forward op.
inline constexpr const char* kCapturedSuffix = ".captured";
inline bool isCapturedForward(const std::string& name) {
  const size_t n = std::char_traits<char>::length(kCapturedSuffix);
  return name.size() > n && name.compare(name.size() - n, n, kCapturedSuffix) == 0;
}

// The op of ACC_GRADS records (grad::{parameter}): a parameter's gradient at
// an optimizer step, input 0. No dispatcher op: nothing to replay.
inline constexpr const char* kGradientOp = "acc::grad";

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
  // v3, level 2: the schema's overload name ("Tensor", "out"; "" is the
  // default overload), what replay needs to find the exact kernel again.
  bool has_overload = false;
  std::string overload;
  // v5: the attribute path of the innermost nn.Module running the op (for
  // backward: its forward op's); "" outside every module. has_module is
  // false where no path is known (C++ programs, older recordings).
  bool has_module = false;
  std::string module;
  // v6: forward ops run under autocast: "device:dtype" of each device type
  // whose autocast was on ("cpu:bfloat16", "cuda:float16,cpu:bfloat16"), so
  // replay can cast the inputs as autocast did. has_autocast false: off.
  bool has_autocast = false;
  std::string autocast;

  uint64_t dataSize() const;  // bytes of all tensors' recorded data
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

// DataOp wraps an Op record whose tensor bytes live in the data stream: its
// body is varint(stream offset of those bytes) + the Op body. Only the
// writer produces it; RecordCursor unwraps it.
enum class RecordKind : uint8_t { Stack = 1, Op = 2, DataOp = 3 };

// Appends one length-prefixed record to `out`. Tensor bytes are not inline
// (format v2): appendData() appends them, in tensor order, after the record
// (those in `data`: the recorder appends what it holds apart itself).
void encode(const OpRecord& r, std::string& out);
// The same, built in `scratch` (overwritten) instead of the thread's own
// buffer: for a thread at its exit, whose thread_locals may be gone.
void encode(const OpRecord& r, std::string& out, std::string& scratch);
void encode(const StackRecord& r, std::string& out);
void appendData(const OpRecord& r, std::string& out);

// Splits what encode() + appendData() produced into the record and its data.
// Throws FormatError when `item` does not start with a whole record.
void splitRecord(std::string_view item, std::string_view& record, std::string_view& data);

// Appends a DataOp record: `record` (one encoded Op record) whose data starts
// at `data_offset` in the data stream.
void wrapWithDataOffset(std::string_view record, uint64_t data_offset, std::string& out);

// Walks the length-prefixed records of one frame payload.
class RecordCursor {
 public:
  explicit RecordCursor(std::string_view payload) : rest_(payload) {}
  // Returns false at the end; throws FormatError on a malformed record. A
  // DataOp record comes out as kind Op with its body unwrapped, and
  // dataOffset() tells where its tensor bytes start (0 for other records).
  bool next(RecordKind& kind, std::string_view& body);
  uint64_t dataOffset() const { return data_offset_; }

 private:
  std::string_view rest_;
  uint64_t data_offset_ = 0;
};

// `with_data` false skips inline tensor bytes (format v1; listing needs only
// metadata). Bytes in the data stream (v2) are never loaded here: tensors get
// their data_offset from `data_offset` and a reader fetches them.
OpRecord decodeOp(std::string_view body, bool with_data = true, uint64_t data_offset = 0);
StackRecord decodeStack(std::string_view body);

}  // namespace acc::format
