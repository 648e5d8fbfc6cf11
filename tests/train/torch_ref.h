// PyTorch as the training suite's reference (tests/train/torch_ref.py): jobs are collected, written
// to a directory as a manifest and raw float64 files, run in one Python process, and read back.
// Where PyTorch is missing, available() is false and reason() says why (the comparisons are skipped
// with it printed; the finite-difference checks still run).
#pragma once
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/json_quote.h"
#include "llm/json.h"

namespace ugpu::test {

class TorchRef {
 public:
  TorchRef() {
    dir_ = (std::filesystem::temp_directory_path() / ("ugpu-train-" + std::to_string(getpid()) + "-" + std::to_string(counter()++))).string();
    std::filesystem::create_directories(dir_);
  }
  ~TorchRef() { std::filesystem::remove_all(dir_); }
  TorchRef(const TorchRef&) = delete;
  TorchRef& operator=(const TorchRef&) = delete;

  // Whether /usr/bin/python3 imports torch (checked once per process).
  static bool available() { return why_not().empty(); }
  static const std::string& reason() { return why_not(); }

  // A raw float64 array in the directory; returns its file name.
  std::string write(const std::string& name, const std::vector<double>& v) {
    std::ofstream f(dir_ + "/" + name, std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(double)));
    return name;
  }
  // A job: a JSON object text (the fields torch_ref.py documents) with a unique "name".
  void add(const std::string& name, const std::string& json_object) {
    jobs_.push_back(json_object);
    names_.push_back(name);
  }
  // Runs every job added; false (with reason()) where PyTorch is missing or Python failed.
  bool run() {
    if (!available()) return false;
    {
      std::ofstream m(dir_ + "/manifest.json");
      m << "[";
      for (size_t i = 0; i < jobs_.size(); ++i) m << (i ? ",\n" : "") << jobs_[i];
      m << "]";
    }
    std::string cmd = std::string("/usr/bin/python3 ") + source_root() + "/tests/train/torch_ref.py " + dir_ + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[512];
    while (p && fgets(buf, sizeof buf, p)) out += buf;
    int rc = p ? pclose(p) : -1;
    if (rc != 0) throw Error("tests/train/torch_ref.py failed: " + out);
    std::ifstream d(dir_ + "/done.json");
    std::stringstream ss;
    ss << d.rdbuf();
    llm::json::Value v = llm::json::parse(ss.str());
    const auto& keys = v.keys("done.json");
    const auto& vals = v.as_array("done.json");
    for (size_t i = 0; i < keys.size(); ++i) errors_[keys[i]] = vals[i].as_string(keys[i]);
    return true;
  }
  // The job's error text from Python ("" where it ran).
  std::string error(const std::string& name) const {
    auto it = errors_.find(name);
    return it == errors_.end() ? "not run" : it->second;
  }
  std::vector<double> read(const std::string& file, size_t count) const {
    std::vector<double> v(count);
    std::ifstream f(dir_ + "/" + file, std::ios::binary);
    f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(double)));
    if (!f) throw Error("torch_ref: " + file + " is missing or short");
    return v;
  }

  static std::string json_shape(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
    return r + "]";
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  static const char* source_root() {
    const char* r = std::getenv("UGPU_SOURCE_ROOT");
    return r ? r : ".";
  }
  static const std::string& why_not() {
    static const std::string r = [] {
      if (access("/usr/bin/python3", X_OK) != 0 || std::system("/usr/bin/python3 -c 'import torch, numpy' >/dev/null 2>&1") != 0)
        return std::string("PyTorch for the CPU is not installed (apt-get install python3-torch libopenblas0-pthread, or scripts/setup --tests)");
      return std::string();
    }();
    return r;
  }
  std::string dir_;
  std::vector<std::string> jobs_, names_;
  std::map<std::string, std::string> errors_;
};

}  // namespace ugpu::test
