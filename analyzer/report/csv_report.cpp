#include "analyzer/report/csv_report.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "analyzer/report/columns.h"

namespace acc::analyzer {
namespace {

void cell(std::ofstream& out, const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) {
    out << s;
    return;
  }
  out << '"';
  for (char c : s) {
    if (c == '"') out << '"';
    out << c;
  }
  out << '"';
}

void row(std::ofstream& out, const std::vector<std::string>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i) out << ',';
    cell(out, cells[i]);
  }
  out << "\n";
}

}  // namespace

void writeCsvReport(const CompareResult& result, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot write (" + std::strerror(errno) + ")");
  std::vector<std::string> header;
  for (const Column& c : reportColumns()) header.push_back(c.name);
  row(out, header);
  forEachRecord(result, [&](size_t, const RecordComparison& r) {
    for (const TensorPair& p : r.tensors) row(out, reportRow(r, p));
  });
  out.flush();
  if (!out) throw std::runtime_error(path + ": write failed (" + std::strerror(errno) + ")");
}

}  // namespace acc::analyzer
