// A minimal SpreadsheetML (.xlsx) writer: sheets of numbers and inline
// strings, a fixed set of cell styles, frozen panes, column widths and an
// autofilter. Rows are serialized as they are added.
#pragma once

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

class XlsxSheet {
 public:
  explicit XlsxSheet(std::string name) : name_(std::move(name)) {}

  void setColumnWidths(std::vector<double> widths) { widths_ = std::move(widths); }
  // Freezes the first `rows` rows and `cols` columns.
  void freeze(int rows, int cols) { freeze_rows_ = rows, freeze_cols_ = cols; }
  // Autofilter over the first row and every row added.
  void autoFilter() { autofilter_ = true; }
  void addRow(const std::vector<XlsxCell>& cells, XlsxStyle style = XlsxStyle::Normal);

  const std::string& name() const { return name_; }
  bool hasAutoFilter() const { return autofilter_; }
  // "$A$1:$C$9": the filtered range (header and rows).
  std::string filterRange() const;
  std::string xml() const;

 private:
  std::string name_;
  std::vector<double> widths_;
  int freeze_rows_ = 0, freeze_cols_ = 0;
  bool autofilter_ = false;
  size_t rows_ = 0, max_cols_ = 0;
  std::string data_;  // <row> elements
};

// "A", "B", ..., "Z", "AA", ...: the letters of the 0-based column `index`.
std::string columnLetters(size_t index);

// Writes the workbook; throws std::runtime_error naming `path` on I/O errors.
void writeXlsx(const std::vector<XlsxSheet>& sheets, const std::string& path);

}  // namespace acc::analyzer
