#include "analyzer/msprobe/pt_file.h"

#include "analyzer/msprobe/torch_types.h"

#include <minizip/unzip.h>
#include <minizip/zip.h>

#include <algorithm>

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string_view>

namespace acc::analyzer::msprobe {
namespace {

using format::Dtype;

// ---- zip (minizip: libxlsxwriter's own zip library) ---------------------

// One archive opened for reading; entries are found by name.
class Archive {
 public:
  explicit Archive(const std::string& path) : path_(path), file_(unzOpen64(path.c_str())) {
    if (file_ == nullptr) throw PtError(path + ": not a torch.save file (not a zip archive)");
  }
  ~Archive() { unzClose(file_); }
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  // The name of the first entry (torch puts every entry in one folder).
  std::string firstName() {
    char name[1024];
    unz_file_info64 info;
    if (unzGoToFirstFile(file_) != UNZ_OK ||
        unzGetCurrentFileInfo64(file_, &info, name, sizeof name, nullptr, 0, nullptr, 0) != UNZ_OK) {
      throw PtError(path_ + ": an empty archive, not a torch.save file");
    }
    return name;
  }
  bool has(const std::string& name) { return unzLocateFile(file_, name.c_str(), 1) == UNZ_OK; }
  std::string read(const std::string& name) {
    unz_file_info64 info;
    if (!has(name) || unzGetCurrentFileInfo64(file_, &info, nullptr, 0, nullptr, 0, nullptr, 0) != UNZ_OK ||
        unzOpenCurrentFile(file_) != UNZ_OK) {
      throw PtError(path_ + ": cannot read its entry " + name);
    }
    // The sizes are the file's word: no entry holds more than its
    // compressed bytes can give (stored: as many; deflate: at most 1032
    // times as many), and those lie in the file.
    std::error_code ec;
    const uint64_t file_bytes = std::filesystem::file_size(path_, ec);
    const uint64_t most = info.compression_method == 0 ? info.compressed_size : info.compressed_size * 1032 + 64;
    if (ec || info.compressed_size > file_bytes || info.uncompressed_size > most) {
      unzCloseCurrentFile(file_);
      throw PtError(path_ + ": its entry " + name + " claims " + std::to_string(info.uncompressed_size) +
                    " bytes, more than the file holds");
    }
    std::string out(info.uncompressed_size, '\0');
    size_t done = 0;
    while (done < out.size()) {
      const int n = unzReadCurrentFile(file_, out.data() + done, static_cast<unsigned>(std::min<size_t>(out.size() - done, 1u << 30)));
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    const int closed = unzCloseCurrentFile(file_);  // checks the CRC
    if (done != out.size() || closed != UNZ_OK) throw PtError(path_ + ": its entry " + name + " is damaged");
    return out;
  }

 private:
  std::string path_;
  unzFile file_;
};

// ---- pickle (the part torch.save uses for one tensor) ----------------------

struct Value {
  enum Kind { None, Bool, Int, Float, Str, Tuple, Global, Storage, Tensor, Dict };
  explicit Value(Kind k = None) : kind(k) {}
  Kind kind;
  int64_t i = 0;
  double f = 0;
  std::string s;              // Str, Global ("module.name"), Storage (its key)
  Dtype dtype = Dtype::Unknown;  // Storage, Tensor
  std::vector<Value> items;   // Tuple; Tensor: size then stride tuples
};

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const std::string& path) : p_(bytes), path_(path) {}

  Value run() {
    for (;;) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;           // PROTO
        case 0x95: skip(8); break;          // FRAME
        case '.': return pop();             // STOP
        case '(': marks_.push_back(stack_.size()); break;
        case ')': stack_.push_back(tuple({})); break;
        case 't': stack_.push_back(tuple(popMark())); break;
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
          const size_t n = op - 0x84;
          std::vector<Value> items(stack_.end() - static_cast<long>(need(n)), stack_.end());
          stack_.resize(stack_.size() - n);
          stack_.push_back(tuple(std::move(items)));
          break;
        }
        case ']': stack_.push_back(tuple({})); break;  // EMPTY_LIST, kept as a tuple
        case 'a': { Value v = pop(); top().items.push_back(std::move(v)); break; }
        case 'e': { std::vector<Value> items = popMark(); for (Value& v : items) top().items.push_back(std::move(v)); break; }
        case '}': stack_.push_back(Value(Value::Dict)); break;
        case 's': pop(); pop(); break;       // SETITEM: dict contents are not needed
        case 'u': popMark(); break;          // SETITEMS
        case 'N': stack_.push_back(Value()); break;
        case 0x88: case 0x89: { Value v{Value::Bool}; v.i = op == 0x88; stack_.push_back(v); break; }
        case 'K': pushInt(byte()); break;
        case 'M': pushInt(uint16()); break;
        case 'J': pushInt(static_cast<int32_t>(uint32())); break;
        case 0x8a: {                          // LONG1
          const size_t n = byte();
          if (n > 8) fail("an integer wider than 64 bits");
          uint64_t v = 0;
          for (size_t k = 0; k < n; ++k) v |= uint64_t(byte()) << (8 * k);
          if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);  // sign
          pushInt(static_cast<int64_t>(v));
          break;
        }
        case 'G': {                           // BINFLOAT, big-endian
          uint64_t bits = 0;
          for (int k = 0; k < 8; ++k) bits = bits << 8 | byte();
          Value v{Value::Float};
          std::memcpy(&v.f, &bits, 8);
          stack_.push_back(v);
          break;
        }
        case 'X': pushStr(take(uint32())); break;   // BINUNICODE
        case 0x8c: pushStr(take(byte())); break;    // SHORT_BINUNICODE
        case 0x8d: pushStr(take(uint64())); break;  // BINUNICODE8
        case 'c': {                                  // GLOBAL
          std::string module = line(), name = line();
          Value v{Value::Global};
          v.s = module + "." + name;
          stack_.push_back(v);
          break;
        }
        case 0x93: {                                 // STACK_GLOBAL
          Value name = pop(), module = pop();
          Value v{Value::Global};
          v.s = module.s + "." + name.s;
          stack_.push_back(v);
          break;
        }
        case 'q': memo_[byte()] = top(); break;      // BINPUT
        case 'r': memo_[uint32()] = top(); break;    // LONG_BINPUT
        case 0x94: memo_[static_cast<uint32_t>(memo_.size())] = top(); break;  // MEMOIZE
        case 'h': stack_.push_back(memo(byte())); break;    // BINGET
        case 'j': stack_.push_back(memo(uint32())); break;  // LONG_BINGET
        case 'Q': stack_.push_back(storage(pop())); break;  // BINPERSID
        case 'R': {                                          // REDUCE
          Value args = pop(), callable = pop();
          stack_.push_back(reduce(callable, args));
          break;
        }
        default: {
          char text[64];
          std::snprintf(text, sizeof text, "pickle opcode 0x%02x", op);
          fail(text);
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw PtError(path_ + ": data.pkl holds " + what + ", which a single saved tensor never holds");
  }
  uint8_t byte() {
    if (pos_ >= p_.size()) fail("a truncated pickle");
    return static_cast<uint8_t>(p_[pos_++]);
  }
  void skip(size_t n) { for (size_t k = 0; k < n; ++k) byte(); }
  uint16_t uint16() { uint16_t v = byte(); return v | uint16_t(byte() << 8); }
  uint32_t uint32() { uint32_t v = 0; for (int k = 0; k < 4; ++k) v |= uint32_t(byte()) << (8 * k); return v; }
  uint64_t uint64() { uint64_t v = 0; for (int k = 0; k < 8; ++k) v |= uint64_t(byte()) << (8 * k); return v; }
  std::string take(uint64_t n) {
    if (n > p_.size() - pos_) fail("a truncated string");
    std::string s(p_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::string line() {
    const size_t end = p_.find('\n', pos_);
    if (end == std::string_view::npos) fail("a truncated global");
    std::string s(p_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  size_t need(size_t n) {
    if (stack_.size() < n) fail("an empty stack");
    return n;
  }
  Value pop() {
    need(1);
    Value v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Value& top() {
    need(1);
    return stack_.back();
  }
  std::vector<Value> popMark() {
    if (marks_.empty()) fail("a tuple without its mark");
    const size_t at = marks_.back();
    marks_.pop_back();
    std::vector<Value> items(std::make_move_iterator(stack_.begin() + static_cast<long>(at)),
                             std::make_move_iterator(stack_.end()));
    stack_.resize(at);
    return items;
  }
  Value memo(uint32_t k) const {
    auto it = memo_.find(k);
    if (it == memo_.end()) fail("a reference to an unknown memo entry");
    return it->second;
  }
  static Value tuple(std::vector<Value> items) {
    Value v{Value::Tuple};
    v.items = std::move(items);
    return v;
  }
  void pushInt(int64_t i) {
    Value v{Value::Int};
    v.i = i;
    stack_.push_back(v);
  }
  void pushStr(std::string s) {
    Value v{Value::Str};
    v.s = std::move(s);
    stack_.push_back(std::move(v));
  }

  // ('storage', torch.XStorage, key, location, numel)
  Value storage(const Value& pid) const {
    if (pid.kind != Value::Tuple || pid.items.size() < 3 || pid.items[0].s != "storage" ||
        pid.items[1].kind != Value::Global) {
      fail("a persistent id other than a storage");
    }
    Value v{Value::Storage};
    v.s = pid.items[2].s;
    const std::string& cls = pid.items[1].s;  // torch.FloatStorage
    if (cls.rfind("torch.", 0) == 0) v.dtype = dtypeOfStorage(cls.substr(6));
    if (v.dtype == Dtype::Unknown) fail("a storage of type " + cls);
    return v;
  }

  Value reduce(const Value& callable, const Value& args) const {
    if (callable.kind != Value::Global) fail("a call of something other than a global");
    if (callable.s == "collections.OrderedDict") return Value(Value::Dict);
    if (callable.s != "torch._utils._rebuild_tensor_v2") fail("a call of " + callable.s);
    // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    if (args.items.size() < 4 || args.items[0].kind != Value::Storage || args.items[1].kind != Value::Int ||
        args.items[2].kind != Value::Tuple || args.items[3].kind != Value::Tuple) {
      fail("a tensor rebuilt from other arguments");
    }
    Value t{Value::Tensor};
    t.s = args.items[0].s;
    t.dtype = args.items[0].dtype;
    t.i = args.items[1].i;
    t.items = {args.items[2], args.items[3]};
    return t;
  }

  std::string_view p_;
  const std::string& path_;
  size_t pos_ = 0;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::map<uint32_t, Value> memo_;
};

// ---- writing ----------------------------------------------------------------

void putInt(std::string& out, int64_t v) {
  if (v >= 0 && v < 256) {
    out += 'K';
    out += static_cast<char>(v);
  } else if (v >= 0 && v < 65536) {
    out += 'M';
    out += static_cast<char>(v & 0xff);
    out += static_cast<char>(v >> 8);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out += 'J';
    for (int k = 0; k < 4; ++k) out += static_cast<char>((static_cast<uint32_t>(v) >> (8 * k)) & 0xff);
  } else {
    out += '\x8a';
    out += '\x08';
    for (int k = 0; k < 8; ++k) out += static_cast<char>((static_cast<uint64_t>(v) >> (8 * k)) & 0xff);
  }
}

void putTuple(std::string& out, const std::vector<int64_t>& values) {
  if (values.empty()) {
    out += ')';
    return;
  }
  if (values.size() > 3) out += '(';
  for (int64_t v : values) putInt(out, v);
  out += values.size() == 1 ? '\x85' : values.size() == 2 ? '\x86' : values.size() == 3 ? '\x87' : 't';
}

void putString(std::string& out, const std::string& s) {
  out += 'X';
  for (int k = 0; k < 4; ++k) out += static_cast<char>((s.size() >> (8 * k)) & 0xff);
  out += s;
}

std::string pickleOf(const PtTensor& t, const char* storage_class, int64_t numel) {
  std::vector<int64_t> stride(t.shape.size(), 1);
  for (size_t d = t.shape.size(); d-- > 1;) stride[d - 1] = stride[d] * t.shape[d];
  std::string out = "\x80\x02";
  out += "ctorch._utils\n_rebuild_tensor_v2\n";
  out += "((";
  putString(out, "storage");
  out += std::string("ctorch\n") + storage_class + "\n";
  putString(out, "0");
  putString(out, "cpu");
  putInt(out, numel);
  out += "tQ";
  putInt(out, 0);
  putTuple(out, t.shape);
  putTuple(out, stride);
  out += '\x89';  // requires_grad False
  out += "ccollections\nOrderedDict\n)R";
  out += "tR.";
  return out;
}

}  // namespace

PtTensor readPt(const std::string& path) {
  Archive zip(path);
  // Every entry sits in one folder, named by the first.
  const std::string first = zip.firstName();
  const std::string prefix = first.substr(0, first.find('/') + 1);
  if (!zip.has(prefix + "data.pkl")) throw PtError(path + ": no data.pkl: not a torch.save file");
  if (zip.has(prefix + "byteorder") && zip.read(prefix + "byteorder") != "little") {
    throw PtError(path + ": saved big-endian, which acc does not read");
  }
  const std::string pickle = zip.read(prefix + "data.pkl");
  Value v = Unpickler(pickle, path).run();
  if (v.kind != Value::Tensor) throw PtError(path + ": holds something other than one tensor");
  if (!zip.has(prefix + "data/" + v.s)) throw PtError(path + ": its storage data/" + v.s + " is missing");
  const std::string bytes = zip.read(prefix + "data/" + v.s);

  PtTensor t;
  t.dtype = v.dtype;
  const size_t element = format::dtypeSize(t.dtype);
  std::vector<int64_t> stride;
  for (const Value& d : v.items[0].items) t.shape.push_back(d.i);
  for (const Value& d : v.items[1].items) stride.push_back(d.i);
  if (stride.size() != t.shape.size()) throw PtError(path + ": its sizes and strides differ in length");
  int64_t numel = 1, last = v.i;  // the last element's offset, in elements
  for (size_t d = 0; d < t.shape.size(); ++d) {
    numel *= t.shape[d];
    if (t.shape[d] > 0) last += (t.shape[d] - 1) * stride[d];
  }
  if (numel > 0 && (v.i < 0 || static_cast<uint64_t>(last + 1) * element > bytes.size())) {
    throw PtError(path + ": its storage is smaller than its tensor");
  }
  // Gathered into row-major order (msprobe saves contiguous tensors; other
  // producers may not).
  t.data.resize(static_cast<size_t>(numel) * element);
  std::vector<int64_t> index(t.shape.size(), 0);
  for (int64_t k = 0; k < numel; ++k) {
    int64_t at = v.i;
    for (size_t d = 0; d < index.size(); ++d) at += index[d] * stride[d];
    std::memcpy(&t.data[static_cast<size_t>(k) * element], &bytes[static_cast<size_t>(at) * element], element);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < t.shape[d]) break;
      index[d] = 0;
    }
  }
  return t;
}

void writePt(const std::string& path, const PtTensor& t) {
  const char* storage_class = storageClass(t.dtype);
  if (storage_class == nullptr) {
    throw PtError(std::string("no torch storage for element type ") + format::dtypeName(t.dtype));
  }
  int64_t numel = 1;
  for (int64_t d : t.shape) numel *= d;
  if (static_cast<uint64_t>(numel) * format::dtypeSize(t.dtype) != t.data.size()) {
    throw PtError(path + ": the tensor's bytes do not match its shape");
  }
  zipFile zip = zipOpen64(path.c_str(), APPEND_STATUS_CREATE);
  if (zip == nullptr) throw PtError(path + ": cannot create file");
  // data.pkl first: it names the folder. Entries are stored, as torch's.
  const std::string pickle = pickleOf(t, storage_class, numel);
  const std::pair<const char*, const std::string*> entries[] = {
      {"archive/data.pkl", &pickle}, {"archive/byteorder", nullptr}, {"archive/data/0", &t.data},
      {"archive/version", nullptr}};
  static const std::string little = "little", version = "3\n";
  bool ok = true;
  for (const auto& [name, bytes] : entries) {
    const std::string& content = bytes ? *bytes : std::string(name) == "archive/byteorder" ? little : version;
    zip_fileinfo info = {};
    ok = ok && zipOpenNewFileInZip64(zip, name, &info, nullptr, 0, nullptr, 0, nullptr, 0, 0, content.size() >= 0xffffffffu) == ZIP_OK;
    for (size_t done = 0; ok && done < content.size();) {
      const unsigned n = static_cast<unsigned>(std::min<size_t>(content.size() - done, 1u << 30));
      ok = zipWriteInFileInZip(zip, content.data() + done, n) == ZIP_OK;
      done += n;
    }
    ok = ok && zipCloseFileInZip(zip) == ZIP_OK;
  }
  ok = zipClose(zip, nullptr) == ZIP_OK && ok;
  if (!ok) throw PtError(path + ": write error");
}

}  // namespace acc::analyzer::msprobe
