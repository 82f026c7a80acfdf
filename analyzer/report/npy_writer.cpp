#include "analyzer/report/npy_writer.h"

#include <cstdint>
#include <fstream>
#include <stdexcept>

namespace acc::analyzer {
namespace {

constexpr size_t kAlign = 64;  // numpy aligns the data to 64 bytes

// float32 bytes of little-endian bfloat16 bytes: the bfloat16 bits are the
// upper half of the float32.
std::string bfloat16ToFloat32(const std::string& data) {
  std::string out(data.size() * 2, '\0');
  for (size_t i = 0; i + 1 < data.size(); i += 2) {
    out[2 * i + 2] = data[i];
    out[2 * i + 3] = data[i + 1];
  }
  return out;
}

std::string header(const std::string& descr, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) dict += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
  dict += "), }";
  const size_t prefix = 10;  // magic (6) + version (2) + header length (2)
  size_t total = prefix + dict.size() + 1;
  dict.append((kAlign - total % kAlign) % kAlign, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  h += static_cast<char>(dict.size() & 0xFF);
  h += static_cast<char>(dict.size() >> 8);
  return h + dict;
}

}  // namespace

std::string npyDescr(format::Dtype dtype) {
  using format::Dtype;
  switch (dtype) {
    case Dtype::Bool: return "|b1";
    case Dtype::UInt8: return "|u1";
    case Dtype::Int8: return "|i1";
    case Dtype::Int16: return "<i2";
    case Dtype::Int32: return "<i4";
    case Dtype::Int64: return "<i8";
    case Dtype::Float16: return "<f2";
    case Dtype::BFloat16: return "<f4";
    case Dtype::Float32: return "<f4";
    case Dtype::Float64: return "<f8";
    case Dtype::Complex64: return "<c8";
    case Dtype::Complex128: return "<c16";
    case Dtype::Unknown: break;
  }
  return "";
}

void writeNpy(const std::string& path, format::Dtype dtype, const std::vector<int64_t>& shape,
              const std::string& data) {
  std::string descr = npyDescr(dtype);
  if (descr.empty()) throw std::runtime_error(path + ": dtype " + format::dtypeName(dtype) + " has no numpy dtype");
  uint64_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<uint64_t>(d < 0 ? 0 : d);
  if (numel * format::dtypeSize(dtype) != data.size()) {
    throw std::runtime_error(path + ": " + std::to_string(data.size()) + " bytes recorded for " +
                             std::to_string(numel) + " elements of " + format::dtypeName(dtype));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot create file");
  std::string h = header(descr, shape);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  if (dtype == format::Dtype::BFloat16) {
    std::string f32 = bfloat16ToFloat32(data);
    out.write(f32.data(), static_cast<std::streamsize>(f32.size()));
  } else {
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  out.close();
  if (out.fail()) throw std::runtime_error(path + ": write error");
}

}  // namespace acc::analyzer
