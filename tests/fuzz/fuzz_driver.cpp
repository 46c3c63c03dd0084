// Runs a fuzz target's entry point over files and folders of inputs, so the normal
// (g++) build replays every seed and every kept crash input as a plain CTest test.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace fs = std::filesystem;

namespace {

// Regular files of a folder, sorted so that runs are repeatable; dot files (.gitkeep)
// are bookkeeping, not inputs.
std::vector<fs::path> inputs_in(const fs::path& folder)
{
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec))
        if (entry.is_regular_file() && entry.path().filename().string().front() != '.')
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<fs::path> files;
    for (int i = 1; i < argc; ++i) {
        const fs::path arg(argv[i]);
        if (fs::is_directory(arg)) {
            const auto found = inputs_in(arg);
            files.insert(files.end(), found.begin(), found.end());
        } else if (fs::is_regular_file(arg)) {
            files.push_back(arg);
        } else if (!fs::exists(arg)) {
            // An empty regressions folder is not in git; nothing to replay there.
            std::fprintf(stderr, "fuzz driver: %s does not exist, skipped\n", argv[i]);
        }
    }
    if (files.empty()) {
        std::fprintf(stderr, "fuzz driver: no inputs found; give the corpus folder\n");
        return 1;
    }
    for (const fs::path& file : files) {
        std::ifstream in(file, std::ios::binary);
        const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                      std::istreambuf_iterator<char>());
        if (!in.good() && !in.eof()) {
            std::fprintf(stderr, "fuzz driver: cannot read %s\n", file.c_str());
            return 1;
        }
        // Named before it runs: a crash then says which input caused it.
        std::fprintf(stderr, "fuzz driver: %s (%zu bytes)\n", file.c_str(), bytes.size());
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    }
    std::fprintf(stderr, "fuzz driver: %zu inputs, no crash\n", files.size());
    return 0;
}
