// Writing a file so that a reader, or a crash, sees the old file or the new one whole:
// run logs, saved weights, max-batch results.
#pragma once
#include <string>
#include <string_view>

namespace mixlab {

// Writes `content` to path.tmp, flushes it to disk and renames it over `path`.
// Throws Error naming the path on failure; the .tmp is removed.
void write_file_atomically(const std::string& path, std::string_view content);

} // namespace mixlab
