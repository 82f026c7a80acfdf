#include "analyzer/report/xlsx_workbook.h"

#include <xlsxwriter.h>

#include <cmath>
#include <stdexcept>

#include "analyzer/report/markup.h"

namespace acc::analyzer {
namespace {

constexpr size_t kMaxCellText = 32767;  // Excel's limit per cell

}  // namespace

XlsxCell XlsxCell::num(double v) {
  if (!std::isfinite(v)) return str(std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
  XlsxCell c;
  c.kind = Kind::Number;
  c.number = v;
  return c;
}

XlsxCell XlsxCell::str(std::string_view s) {
  XlsxCell c;
  if (s.empty()) return c;
  c.kind = Kind::Text;
  c.text = validText(s.substr(0, kMaxCellText));
  return c;
}

struct XlsxWorkbook::Impl {
  struct Sheet {
    lxw_worksheet* sheet = nullptr;
    uint32_t rows = 0;
    uint16_t columns = 0;
  };
  std::string path;
  lxw_workbook* book = nullptr;
  lxw_format* formats[7] = {};  // in XlsxStyle order; Normal is null
  std::vector<Sheet> sheets;
};

XlsxWorkbook::XlsxWorkbook(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  lxw_workbook_options options = {};
  options.constant_memory = LXW_TRUE;
  impl_->book = workbook_new_opt(path.c_str(), &options);
  if (impl_->book == nullptr) throw std::runtime_error(path + ": cannot create file");
  // Header grey, warnings yellow, failures red, origins' rows bold.
  struct Look {
    XlsxStyle style;
    bool bold;
    lxw_color_t fill;
  };
  const Look looks[] = {{XlsxStyle::Header, true, 0xD9D9D9}, {XlsxStyle::Warn, false, 0xFFF2CC},
                        {XlsxStyle::Fail, false, 0xFFC7CE},  {XlsxStyle::Bold, true, 0},
                        {XlsxStyle::WarnBold, true, 0xFFF2CC}, {XlsxStyle::FailBold, true, 0xFFC7CE}};
  for (const Look& l : looks) {
    lxw_format* f = workbook_add_format(impl_->book);
    if (l.bold) format_set_bold(f);
    if (l.fill) {
      format_set_pattern(f, LXW_PATTERN_SOLID);
      format_set_bg_color(f, l.fill);
    }
    impl_->formats[static_cast<int>(l.style)] = f;
  }
}

XlsxWorkbook::~XlsxWorkbook() {
  if (impl_->book) workbook_close(impl_->book);  // an unfinished report: written as far as it got
}

void XlsxWorkbook::addSheet(const std::string& name, const std::vector<double>& widths, int freeze_rows,
                            int freeze_cols) {
  Impl::Sheet s;
  s.sheet = workbook_add_worksheet(impl_->book, name.c_str());
  if (s.sheet == nullptr) throw std::runtime_error(impl_->path + ": cannot add sheet " + name);
  for (size_t c = 0; c < widths.size(); ++c) {
    worksheet_set_column(s.sheet, static_cast<lxw_col_t>(c), static_cast<lxw_col_t>(c), widths[c], nullptr);
  }
  if (freeze_rows > 0 || freeze_cols > 0) {
    worksheet_freeze_panes(s.sheet, static_cast<lxw_row_t>(freeze_rows), static_cast<lxw_col_t>(freeze_cols));
  }
  impl_->sheets.push_back(s);
}

bool XlsxWorkbook::addRow(const std::vector<XlsxCell>& cells, XlsxStyle style) {
  Impl::Sheet& s = impl_->sheets.back();
  if (s.rows >= kXlsxMaxRows) {
    ++left_out_;
    return false;
  }
  lxw_format* format = impl_->formats[static_cast<int>(style)];
  for (size_t i = 0; i < cells.size(); ++i) {
    const XlsxCell& c = cells[i];
    const auto col = static_cast<lxw_col_t>(i);
    if (c.kind == XlsxCell::Kind::Number) {
      worksheet_write_number(s.sheet, s.rows, col, c.number, format);
    } else if (c.kind == XlsxCell::Kind::Text) {
      worksheet_write_string(s.sheet, s.rows, col, c.text.c_str(), format);
    } else if (format != nullptr) {
      worksheet_write_blank(s.sheet, s.rows, col, format);  // filled like the rest of the row
    }
  }
  ++s.rows;
  if (cells.size() > s.columns) s.columns = static_cast<uint16_t>(cells.size());
  return true;
}

void XlsxWorkbook::close() {
  for (const Impl::Sheet& s : impl_->sheets) {
    if (s.rows > 0 && s.columns > 0) worksheet_autofilter(s.sheet, 0, 0, s.rows - 1, static_cast<lxw_col_t>(s.columns - 1));
  }
  lxw_workbook* book = impl_->book;
  impl_->book = nullptr;
  const lxw_error error = workbook_close(book);
  if (error != LXW_NO_ERROR) throw std::runtime_error(impl_->path + ": " + lxw_strerror(error));
}

}  // namespace acc::analyzer
