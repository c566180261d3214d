// An output file a command writes when its work is done (a run's --report), checked before the work
// starts: it is created at once as a temporary next to its path, so a folder that cannot be written, a
// path that names a folder, or a missing parent fail before a long run instead of after it, naming the
// option and the path. commit() writes the content and renames the temporary over the path; a command
// that fails before commit() leaves the path as it was and removes the temporary.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace fabemu::run {

class OutputFile {
 public:
  // Throws std::invalid_argument "<option> <path>: <why>" when the file cannot be created.
  OutputFile(std::string path, std::string_view option);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes `content` and moves it into place. Throws std::runtime_error naming the path on failure (a
  // full disk, a file size limit), leaving the path as it was.
  void commit(const std::string& content);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string option_;
  std::string temp_;
  int fd_ = -1;
};

// Runs write(temporary) with a temporary path in the same folder that ends like `path` (so writers that
// choose gzip by the name still do), then renames it over `path`. When write throws, the temporary is
// removed and `path` is left as it was: a failed conversion leaves no partial file.
void write_via_temporary(const std::string& path, const std::function<void(const std::string&)>& write);

}  // namespace fabemu::run
