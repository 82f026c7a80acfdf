// Text for XML and HTML documents (report.xlsx parts, report.html): escaped,
// valid UTF-8, no characters XML forbids.
#pragma once

#include <string>
#include <string_view>

namespace acc::analyzer {

// Escapes & < > " ' and replaces invalid UTF-8 and control characters other
// than tab, newline and carriage return with U+FFFD.
std::string escapeMarkup(std::string_view text);

// The same repairs, nothing escaped: text for a writer that escapes it
// itself (report.xlsx through libxlsxwriter).
std::string validText(std::string_view text);


}  // namespace acc::analyzer
