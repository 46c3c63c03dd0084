// File helpers shared by the dataset loaders: folder and file checks, whole-file reads,
// and the format sniffers load_dataset uses to pick a loader from a folder's file names.
#pragma once
#include "mixlab/error.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace mixlab::data {

namespace fs = std::filesystem;

// True when `path` exists as anything (file, folder, dangling link); never throws.
inline bool exists_quietly(const fs::path& path)
{
    std::error_code ec;
    return fs::symlink_status(path, ec).type() != fs::file_type::not_found && !ec;
}

inline bool is_folder_quietly(const fs::path& path)
{
    std::error_code ec;
    return fs::is_directory(path, ec);
}

// The absolute, normalised form of a folder path, without a trailing separator: what
// Dataset::source records, so a run log says where its data came from.
inline std::string absolute_folder(const fs::path& folder)
{
    std::error_code ec;
    fs::path p = fs::absolute(folder, ec);
    if (ec) p = folder;
    p = p.lexically_normal();
    if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
    return p.string();
}

// Throws DataError unless `folder` exists and is a folder. `expected` says what the
// folder was meant to hold, so the message tells the user what to put there.
inline void require_folder(const fs::path& folder, const std::string& expected)
{
    std::error_code ec;
    const fs::file_status st = fs::status(folder, ec);
    if (st.type() == fs::file_type::not_found || (ec && !exists_quietly(folder)))
        throw DataError("dataset folder " + folder.string() +
                        " does not exist; expected a folder holding " + expected);
    if (!fs::is_directory(st))
        throw DataError("dataset path " + folder.string() +
                        " is not a folder; give the folder holding " + expected);
}

// Throws DataError when `file` is missing or is not a regular file (a folder where a
// file belongs, a socket ...).
inline void require_regular_file(const fs::path& file)
{
    std::error_code ec;
    const fs::file_status st = fs::status(file, ec);
    if (st.type() == fs::file_type::not_found)
        throw DataError("dataset file " + file.string() + " is missing");
    if (fs::is_directory(st))
        throw DataError("dataset file " + file.string() + " is a folder; expected a file");
    if (!fs::is_regular_file(st))
        throw DataError("dataset file " + file.string() + " is not a regular file");
}

// The whole of a plain (uncompressed) file; DataError naming it when it cannot be read.
inline std::vector<std::uint8_t> read_plain_file(const fs::path& file)
{
    require_regular_file(file);
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(file, ec);
    if (ec)
        throw DataError("cannot read the size of dataset file " + file.string() + ": " +
                        ec.message());
    std::FILE* f = std::fopen(file.c_str(), "rb");
    if (!f)
        throw DataError("cannot open dataset file " + file.string() + ": " +
                        std::generic_category().message(errno));
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
    const std::size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f);
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed || got != bytes.size())
        throw DataError("cannot read dataset file " + file.string() + ": read " +
                        std::to_string(got) + " of " + std::to_string(bytes.size()) + " bytes");
    return bytes;
}

// "0x00000803": how magic numbers appear in messages.
inline std::string hex32(std::uint32_t value)
{
    char text[16];
    std::snprintf(text, sizeof text, "0x%08X", value);
    return text;
}

// What each format expects, for "nothing recognised" messages (dataset_idx.cpp,
// dataset_cifar.cpp).
std::string idx_expected_files();
std::string cifar_expected_files();

// Sniffers: true when the folder holds at least one file name of that format, so the
// matching loader runs and reports precisely whatever else is missing or wrong.
bool looks_like_idx_folder(const fs::path& folder);
bool looks_like_cifar_folder(const fs::path& folder);

} // namespace mixlab::data
