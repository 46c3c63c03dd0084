// What the fuzz targets share: splitting one input into several files, a scratch folder
// in /dev/shm for loaders that read files, the failure that libFuzzer reports, and the
// checks both Keras importers' targets make of a refusal and of an accepted import.
#pragma once
#include "mixlab/error.h"
#include "mixlab/keras_import.h"
#include "mixlab/model_spec.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include <unistd.h>

namespace mixlab::fuzz {

// Inputs that feed several files hold them one after another, split by this marker;
// libFuzzer picks it up from the comparisons and learns to add and drop files.
inline constexpr std::string_view k_part_marker = "%%MIXLAB-PART%%";

inline std::vector<std::string_view> split_parts(std::string_view input)
{
    std::vector<std::string_view> parts;
    for (;;) {
        const std::size_t at = input.find(k_part_marker);
        if (at == std::string_view::npos) {
            parts.push_back(input);
            return parts;
        }
        parts.push_back(input.substr(0, at));
        input.remove_prefix(at + k_part_marker.size());
    }
}

// A property the code under test must keep was broken: libFuzzer (and the corpus
// driver) see the abort as a crash and keep the input.
[[noreturn]] inline void fail(const std::string& what)
{
    std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

// Messages end up in JSON logs and dialogs: bytes that are not well-formed UTF-8 (a
// character cut in two, a damaged file's bytes quoted raw) make nlohmann's dump throw.
inline void check_message(const char* message)
{
    const std::string m(message);
    if (m.empty()) fail("an error without a message");
    try {
        (void)nlohmann::json(m).dump();
    } catch (const nlohmann::json::exception&) {
        fail("an error message that is not UTF-8: " + m);
    }
}

// A refusal is one line of UTF-8: the CLI prints it on stderr, the app in a dialog.
inline void check_refusal(const Error& e)
{
    check_message(e.what());
    if (std::string_view(e.what()).find('\n') != std::string_view::npos)
        fail(std::string("a message of several lines: ") + e.what());
}

// An import's origins: one per layer, at every depth (the weights of an archive find
// their layers through them).
inline void check_origins(const std::vector<LayerSpec>& layers,
                          const std::vector<KerasOrigin>& origins)
{
    if (layers.size() != origins.size())
        fail("the import's origins do not match its layers one to one");
    for (std::size_t i = 0; i < layers.size(); ++i) {
        if (origins[i].keras_layers.size() != origins[i].h5_groups.size())
            fail("an origin's Keras layers and their weight groups differ in number");
        check_origins(layers[i].body, origins[i].body);
        check_origins(layers[i].shortcut, origins[i].shortcut);
    }
}

// An accepted import: a spec file the user then opens, so it must write and read back as
// is; it has layers, and origins for every one of them.
inline void check_import(const KerasImport& imported)
{
    const std::string written = model_spec_to_json(imported.spec);
    try {
        if (!(parse_model_spec(written) == imported.spec))
            fail("imported spec changed on a write/read round trip:\n" + written);
    } catch (const Error& e) {
        fail(std::string("an imported spec does not read back: ") + e.what() + "\n" + written);
    }
    if (imported.spec.layers.empty()) fail("an import with no layers");
    check_origins(imported.spec.layers, imported.origins);
}

// One scratch folder per process, emptied before each input: RAM-backed so that
// writing the input costs next to nothing.
class ScratchFolder {
public:
    ScratchFolder()
    {
        namespace fs = std::filesystem;
        const fs::path base =
            fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
        std::string pattern = (base / "mixlab-fuzz-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) fail("cannot make a scratch folder in " + base.string());
        m_root = pattern;
    }
    ~ScratchFolder()
    {
        std::error_code ec;
        std::filesystem::remove_all(m_root, ec);
    }
    ScratchFolder(const ScratchFolder&) = delete;
    ScratchFolder& operator=(const ScratchFolder&) = delete;

    // An empty folder for the next input.
    const std::filesystem::path& fresh()
    {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(m_root, ec))
            std::filesystem::remove_all(entry.path(), ec);
        return m_root;
    }

    static void write(const std::filesystem::path& file, std::string_view bytes)
    {
        std::ofstream out(file, std::ios::binary);
        out.write(bytes.data(), std::streamsize(bytes.size()));
        if (!out) fail("cannot write " + file.string());
    }

private:
    std::filesystem::path m_root;
};

} // namespace mixlab::fuzz
