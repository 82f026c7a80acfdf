// report.xlsx's workbook on libxlsxwriter, in its constant-memory mode:
// each row goes to disk as it is added, so a report of a million rows does
// not hold them. Sheets of numbers and strings, a fixed set of cell styles,
// frozen panes, column widths and an autofilter over each sheet's rows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace acc::analyzer {

enum class XlsxStyle : int { Normal = 0, Header, Warn, Fail, Bold, WarnBold, FailBold };

struct XlsxCell {
  enum class Kind { Empty, Number, Text } kind = Kind::Empty;
  double number = 0;
  std::string text;

  static XlsxCell num(double v);   // non-finite values become the text nan / inf / -inf
  static XlsxCell str(std::string_view s);
};

// Excel's own limit: a sheet holds at most this many rows, its header included.
constexpr uint32_t kXlsxMaxRows = 1048576;

class XlsxWorkbook {
 public:
  // Throws std::runtime_error naming `path` when it cannot be created.
  explicit XlsxWorkbook(const std::string& path);
  ~XlsxWorkbook();
  XlsxWorkbook(const XlsxWorkbook&) = delete;
  XlsxWorkbook& operator=(const XlsxWorkbook&) = delete;

  // Sheets are written one after the other: rows go to the sheet added last.
  void addSheet(const std::string& name, const std::vector<double>& widths, int freeze_rows, int freeze_cols);
  // False (the row left out, and counted) past Excel's row limit.
  bool addRow(const std::vector<XlsxCell>& cells, XlsxStyle style = XlsxStyle::Normal);
  uint64_t rowsLeftOut() const { return left_out_; }

  // Sets each sheet's autofilter over its rows and writes the file; throws
  // std::runtime_error naming the path on failure.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint64_t left_out_ = 0;
};

}  // namespace acc::analyzer
