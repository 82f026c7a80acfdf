// msprobe's dump layout (Huawei MindStudio msprobe, PyTorch side):
//   DUMP/step{S}/{rank{R} | proc{PID}}/dump.json, stack.json, construct.json
//   and, for the "tensor" task, dump_tensor_data/{data_name}.pt
// dump.json maps "{Prefix}.{api}.{n}.{forward|backward}" (and module
// entries) to their arguments, outputs and gradients, each tensor with its
// dtype, shape and statistics (Max, Min, Mean, Norm); stack.json groups
// entries by call stack; construct.json names each entry's parent module.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace acc::analyzer::msprobe {

// One step of one rank: a folder holding dump.json.
struct DumpLeaf {
  int64_t step = 0;
  int64_t rank = 0;  // rank{R}; proc{PID} folders are ranked in name order
  std::string dir;
};

// Whether `path` is an msprobe dump: a dump.json, the folder holding one,
// a step folder of rank/proc folders, or the folder of step folders.
bool isDump(const std::string& path);
// Its leaves in (rank, step) order; throws InputError when there are none.
std::vector<DumpLeaf> findLeaves(const std::string& path);

// dump.json in key order. msprobe writes Python's NaN and Infinity tokens,
// which are not JSON: they read as the strings "NaN", "Infinity" and
// "-Infinity" (number() turns them back into numbers).
nlohmann::ordered_json readDumpJson(const std::string& path);
double number(const nlohmann::ordered_json& v);  // NaN for null and non-numbers

// stack.json: each entry's frames, innermost first, in acc's Python frame
// form "file:line function". Both of msprobe's forms are read.
std::map<std::string, std::vector<std::string>> readStacks(const std::string& path);

// construct.json: each entry's parent (empty: none, or no file).
std::map<std::string, std::string> readParents(const std::string& path);

}  // namespace acc::analyzer::msprobe
