// The HTML report's plot: an inline SVG of each record's error (recordError,
// log10) along execution order; forward records as blue circles, backward
// records as orange squares, origins as red dashed lines.
#pragma once

#include <string>

#include "analyzer/common/result.h"

namespace acc::analyzer {

// One element with class "mark" per record, one with class "origin-marker"
// per origin (the first also has class "first").
std::string errorPlotSvg(const CompareResult& result);

// A long run's overview (result.steps): for every step, the worst error of
// its forward records and of its backward records (polylines of class
// "overview fwd" and "overview bwd"), the first step with a failing record
// marked ("first-failing-step").
std::string stepsOverviewSvg(const CompareResult& result);

}  // namespace acc::analyzer
