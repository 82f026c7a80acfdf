#include "analyzer/xlsx_workbook.h"

#include <cmath>
#include <cstdio>

#include "analyzer/markup.h"
#include "analyzer/zip_writer.h"

namespace acc::analyzer {
namespace {

constexpr size_t kMaxCellText = 32767;  // Excel's limit per cell
constexpr const char* kXmlHead = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n";
constexpr const char* kMainNs = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
constexpr const char* kRelNs = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
constexpr const char* kPkgRelNs = "http://schemas.openxmlformats.org/package/2006/relationships";

std::string cellRef(size_t col, size_t row) { return columnLetters(col) + std::to_string(row + 1); }

std::string contentTypes(size_t sheets) {
  std::string x = kXmlHead;
  x += "<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">"
       "<Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>"
       "<Default Extension=\"xml\" ContentType=\"application/xml\"/>"
       "<Override PartName=\"/xl/workbook.xml\" "
       "ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml\"/>"
       "<Override PartName=\"/xl/styles.xml\" "
       "ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml\"/>";
  for (size_t i = 1; i <= sheets; ++i) {
    x += "<Override PartName=\"/xl/worksheets/sheet" + std::to_string(i) +
         ".xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml\"/>";
  }
  return x + "</Types>";
}

std::string packageRels() {
  return std::string(kXmlHead) + "<Relationships xmlns=\"" + kPkgRelNs +
         "\"><Relationship Id=\"rId1\" Type=\"" + kRelNs +
         "/officeDocument\" Target=\"xl/workbook.xml\"/></Relationships>";
}

std::string workbook(const std::vector<XlsxSheet>& sheets) {
  std::string x = std::string(kXmlHead) + "<workbook xmlns=\"" + kMainNs + "\" xmlns:r=\"" + kRelNs +
                  "\"><bookViews><workbookView activeTab=\"0\"/></bookViews><sheets>";
  std::string names;
  for (size_t i = 0; i < sheets.size(); ++i) {
    std::string id = std::to_string(i + 1);
    x += "<sheet name=\"" + escapeMarkup(sheets[i].name()) + "\" sheetId=\"" + id + "\" r:id=\"rId" + id + "\"/>";
    if (sheets[i].hasAutoFilter()) {
      names += "<definedName name=\"_xlnm._FilterDatabase\" localSheetId=\"" + std::to_string(i) +
               "\" hidden=\"1\">" + escapeMarkup("'" + sheets[i].name() + "'!" + sheets[i].filterRange()) +
               "</definedName>";
    }
  }
  x += "</sheets>";
  if (!names.empty()) x += "<definedNames>" + names + "</definedNames>";
  return x + "</workbook>";
}

std::string workbookRels(size_t sheets) {
  std::string x = std::string(kXmlHead) + "<Relationships xmlns=\"" + kPkgRelNs + "\">";
  for (size_t i = 1; i <= sheets; ++i) {
    x += "<Relationship Id=\"rId" + std::to_string(i) + "\" Type=\"" + kRelNs +
         "/worksheet\" Target=\"worksheets/sheet" + std::to_string(i) + ".xml\"/>";
  }
  x += "<Relationship Id=\"rId" + std::to_string(sheets + 1) + "\" Type=\"" + kRelNs +
       "/styles\" Target=\"styles.xml\"/>";
  return x + "</Relationships>";
}

// Cell formats in XlsxStyle order: fonts 0 regular, 1 bold; fills 2 header
// grey, 3 warn (light yellow), 4 fail (red).
std::string styles() {
  auto fill = [](const char* rgb) {
    return std::string("<fill><patternFill patternType=\"solid\"><fgColor rgb=\"") + rgb +
           "\"/><bgColor indexed=\"64\"/></patternFill></fill>";
  };
  auto xf = [](int font, int fill) {
    return "<xf numFmtId=\"0\" fontId=\"" + std::to_string(font) + "\" fillId=\"" + std::to_string(fill) +
           "\" borderId=\"0\" xfId=\"0\"" + (font ? " applyFont=\"1\"" : "") + (fill ? " applyFill=\"1\"" : "") +
           "/>";
  };
  std::string x = std::string(kXmlHead) + "<styleSheet xmlns=\"" + kMainNs + "\">";
  x += "<fonts count=\"2\"><font><sz val=\"11\"/><name val=\"Calibri\"/><family val=\"2\"/></font>"
       "<font><b/><sz val=\"11\"/><name val=\"Calibri\"/><family val=\"2\"/></font></fonts>";
  x += "<fills count=\"5\"><fill><patternFill patternType=\"none\"/></fill>"
       "<fill><patternFill patternType=\"gray125\"/></fill>" +
       fill("FFD9D9D9") + fill("FFFFF2CC") + fill("FFFFC7CE") + "</fills>";
  x += "<borders count=\"1\"><border><left/><right/><top/><bottom/><diagonal/></border></borders>"
       "<cellStyleXfs count=\"1\"><xf numFmtId=\"0\" fontId=\"0\" fillId=\"0\" borderId=\"0\"/></cellStyleXfs>";
  x += "<cellXfs count=\"7\">" + xf(0, 0) + xf(1, 2) + xf(0, 3) + xf(0, 4) + xf(1, 0) + xf(1, 3) + xf(1, 4) +
       "</cellXfs>";
  return x + "<cellStyles count=\"1\"><cellStyle name=\"Normal\" xfId=\"0\" builtinId=\"0\"/></cellStyles></styleSheet>";
}

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
  c.text = std::string(s.substr(0, kMaxCellText));
  return c;
}

std::string columnLetters(size_t index) {
  std::string s;
  for (size_t n = index + 1; n > 0; n = (n - 1) / 26) s.insert(s.begin(), static_cast<char>('A' + (n - 1) % 26));
  return s;
}

void XlsxSheet::addRow(const std::vector<XlsxCell>& cells, XlsxStyle style) {
  const std::string s = " s=\"" + std::to_string(static_cast<int>(style)) + "\"";
  const bool styled = style != XlsxStyle::Normal;
  data_ += "<row r=\"" + std::to_string(rows_ + 1) + "\">";
  for (size_t i = 0; i < cells.size(); ++i) {
    const XlsxCell& c = cells[i];
    std::string ref = " r=\"" + cellRef(i, rows_) + "\"";
    if (c.kind == XlsxCell::Kind::Number) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", c.number);
      data_ += "<c" + ref + (styled ? s : "") + "><v>" + buf + "</v></c>";
    } else if (c.kind == XlsxCell::Kind::Text) {
      bool edge_space = c.text.front() == ' ' || c.text.back() == ' ';
      data_ += "<c" + ref + (styled ? s : "") + " t=\"inlineStr\"><is><t" +
               (edge_space ? " xml:space=\"preserve\"" : "") + ">" + escapeMarkup(c.text) + "</t></is></c>";
    } else if (styled) {
      data_ += "<c" + ref + s + "/>";  // empty, but filled like the rest of the row
    }
  }
  data_ += "</row>";
  ++rows_;
  if (cells.size() > max_cols_) max_cols_ = cells.size();
}

std::string XlsxSheet::filterRange() const {
  size_t cols = max_cols_ ? max_cols_ : 1, rows = rows_ ? rows_ : 1;
  return "$A$1:$" + columnLetters(cols - 1) + "$" + std::to_string(rows);
}

std::string XlsxSheet::xml() const {
  size_t cols = max_cols_ ? max_cols_ : 1, rows = rows_ ? rows_ : 1;
  std::string x = std::string(kXmlHead) + "<worksheet xmlns=\"" + kMainNs + "\" xmlns:r=\"" + kRelNs + "\">";
  x += "<dimension ref=\"A1:" + cellRef(cols - 1, rows - 1) + "\"/>";
  x += "<sheetViews><sheetView workbookViewId=\"0\"";
  if (freeze_rows_ > 0 || freeze_cols_ > 0) {
    std::string top_left = cellRef(freeze_cols_, freeze_rows_);
    const char* pane = freeze_rows_ && freeze_cols_ ? "bottomRight" : freeze_rows_ ? "bottomLeft" : "topRight";
    x += "><pane";
    if (freeze_cols_) x += " xSplit=\"" + std::to_string(freeze_cols_) + "\"";
    if (freeze_rows_) x += " ySplit=\"" + std::to_string(freeze_rows_) + "\"";
    x += " topLeftCell=\"" + top_left + "\" activePane=\"" + pane + "\" state=\"frozen\"/>";
    x += "<selection pane=\"" + std::string(pane) + "\" activeCell=\"" + top_left + "\" sqref=\"" + top_left +
         "\"/></sheetView>";
  } else {
    x += "/>";
  }
  x += "</sheetViews><sheetFormatPr defaultRowHeight=\"15\"/>";
  if (!widths_.empty()) {
    x += "<cols>";
    for (size_t i = 0; i < widths_.size(); ++i) {
      char w[32];
      std::snprintf(w, sizeof w, "%.1f", widths_[i]);
      x += "<col min=\"" + std::to_string(i + 1) + "\" max=\"" + std::to_string(i + 1) + "\" width=\"" + w +
           "\" customWidth=\"1\"/>";
    }
    x += "</cols>";
  }
  x += "<sheetData>" + data_ + "</sheetData>";
  if (autofilter_) x += "<autoFilter ref=\"A1:" + cellRef(cols - 1, rows - 1) + "\"/>";
  return x + "<pageMargins left=\"0.7\" right=\"0.7\" top=\"0.75\" bottom=\"0.75\" header=\"0.3\" footer=\"0.3\"/></worksheet>";
}

void writeXlsx(const std::vector<XlsxSheet>& sheets, const std::string& path) {
  ZipWriter zip(path);
  zip.add("[Content_Types].xml", contentTypes(sheets.size()));
  zip.add("_rels/.rels", packageRels());
  zip.add("xl/workbook.xml", workbook(sheets));
  zip.add("xl/_rels/workbook.xml.rels", workbookRels(sheets.size()));
  zip.add("xl/styles.xml", styles());
  for (size_t i = 0; i < sheets.size(); ++i) {
    zip.add("xl/worksheets/sheet" + std::to_string(i + 1) + ".xml", sheets[i].xml());
  }
  zip.finish();
}

}  // namespace acc::analyzer
