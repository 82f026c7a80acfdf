#include "tests/reports/report_tools.h"

#include <unistd.h>

namespace acc::test {

std::string pythonWith(const std::string& module) {
  std::vector<std::string> candidates;
  try {
    candidates.push_back(python());
  } catch (const std::exception&) {
  }
  candidates.push_back("/usr/bin/python3");
  for (const std::string& p : candidates) {
    if (::access(p.c_str(), X_OK) != 0) continue;
    if (run({{p, "-c", "import " + module}, {}, "", false, ""}).exit_code == 0) return p;
  }
  return "";
}

bool chromiumInstalled() { return ::access(kChromium, X_OK) == 0; }

RunResult runChromium(const std::string& html, const std::vector<std::string>& flags) {
  TempDir profile;
  std::vector<std::string> argv = {"/usr/bin/timeout", "180", kChromium, "--headless", "--no-sandbox", "--disable-gpu",
                                   "--disable-quic", "--no-first-run", "--disable-background-networking",
                                   "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                                   "--force-device-scale-factor=1", "--user-data-dir=" + profile.path(),
                                   "--window-size=1400,1000"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("file://" + html);
  return run({argv, {}, "", false, ""});
}

size_t countOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

}  // namespace acc::test
