// A run's checkpoint folder: its claim and release, the names its checkpoints take, the
// listing a front end offers, their deletion with the run, and the rotation that keeps the
// newest few (or one file under its own name).
#include "mixlab/checkpoint_folder.h"

#include "mixlab/error.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <string_view>
#include <system_error>

namespace mixlab {
namespace {

namespace fs = std::filesystem;

// A whole non-negative number at the front of `text`, advancing it; false otherwise.
bool take_number(std::string_view& text, std::int64_t& value)
{
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end == text.data() || value < 0) return false;
    text.remove_prefix(std::size_t(end - text.data()));
    return true;
}

bool take(std::string_view& text, std::string_view prefix)
{
    if (text.substr(0, prefix.size()) != prefix) return false;
    text.remove_prefix(prefix.size());
    return true;
}

// The epoch and step of a name checkpoint_file_name wrote; false for any other name.
bool parse_name(std::string_view name, std::int64_t& epoch, std::int64_t& step)
{
    return take(name, "epoch-") && take_number(name, epoch) && take(name, "-step-") &&
           take_number(name, step) && name == ".safetensors";
}

} // namespace

std::string checkpoint_file_name(std::int64_t epoch, std::int64_t step)
{
    return "epoch-" + std::to_string(epoch) + "-step-" + std::to_string(step) + ".safetensors";
}

std::vector<CheckpointFile> list_checkpoints(const std::string& folder)
{
    std::vector<CheckpointFile> out;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
        CheckpointFile f;
        if (!e.is_regular_file(ec) || !parse_name(e.path().filename().string(), f.epoch, f.step))
            continue;
        f.path = e.path().string();
        const std::uintmax_t size = e.file_size(ec);
        f.bytes = ec ? 0 : std::int64_t(size);
        out.push_back(std::move(f));
    }
    std::sort(out.begin(), out.end(),
              [](const CheckpointFile& a, const CheckpointFile& b) { return a.step < b.step; });
    return out;
}

std::string claim_checkpoint_folder(const std::string& base)
{
    const fs::path parent = fs::path(base).parent_path();
    std::error_code ec;
    const auto make_parent = [&] {
        if (parent.empty()) return;
        // create_directories checks, then makes: a release that removes the parent between
        // its mkdir's "exists" and its own look reads as "File exists", one that removes a
        // part it just made as "No such file or directory". Both are that race, not a
        // refusal: made again (bounded; a file in the way keeps saying "exists").
        fs::create_directories(parent, ec);
        for (int again = 0; again < 100 && (ec == std::errc::file_exists ||
                                            ec == std::errc::no_such_file_or_directory);
             ++again)
            fs::create_directories(parent, ec);
        if (ec)
            throw Error("cannot make the checkpoint folder '" + parent.string() +
                        "': " + ec.message());
    };
    make_parent();
    // A bound, so that a folder where every name reads as taken ends in an error, not a
    // loop: thousands of runs of one id and policy in one second are not a real case.
    constexpr int k_max_suffix = 10000;
    for (int n = 1; n <= k_max_suffix; ++n) {
        const std::string folder = n == 1 ? base : base + "-" + std::to_string(n);
        bool made = fs::create_directory(folder, ec);
        // The parent went since it was made (the app removes an experiment's folder that a
        // released run left empty, perhaps in another process): made again (bounded, for a
        // parent that some other hand keeps removing).
        for (int again = 0; again < 100 && ec == std::errc::no_such_file_or_directory; ++again) {
            make_parent();
            made = fs::create_directory(folder, ec);
        }
        if (made) return folder;
        // false without an error: a folder of that name exists; a file of that name is
        // file_exists: taken either way.
        if (ec && ec != std::errc::file_exists)
            throw Error("cannot make the checkpoint folder '" + folder + "': " + ec.message());
    }
    throw Error("cannot make the checkpoint folder '" + base + "': it and '" + base + "-2' to '" +
                base + "-" + std::to_string(k_max_suffix) + "' all exist");
}

bool release_checkpoint_folder(const std::string& folder)
{
    std::error_code ec;
    // Not a link or a file put where the folder was: remove() would take those whole.
    if (fs::symlink_status(folder, ec).type() != fs::file_type::directory) return false;
    // rmdir: fails (directory_not_empty) when anything is in it, in the same call.
    return fs::remove(folder, ec) && !ec;
}

std::string delete_checkpoints(const std::string& folder)
{
    std::string kept;
    const auto keep = [&kept](const std::string& path, const std::error_code& ec) {
        kept += (kept.empty() ? "" : "; ") + path + ": " + ec.message();
    };
    for (const CheckpointFile& f : list_checkpoints(folder)) {
        std::error_code ec;
        fs::remove(f.path, ec);
        if (ec) keep(f.path, ec);
    }
    std::error_code ec;
    if (fs::is_directory(folder, ec) && fs::is_empty(folder, ec) && !ec) {
        fs::remove(folder, ec);
        if (ec) keep(folder, ec);
    }
    return kept;
}

CheckpointRotation::CheckpointRotation(std::string folder, int keep)
    : m_folder(std::move(folder)), m_keep(std::max(keep, 1))
{}

CheckpointRotation CheckpointRotation::one_file(std::string path)
{
    CheckpointRotation r(fs::path(path).parent_path().string(), 1);
    r.m_file = std::move(path);
    return r;
}

std::string CheckpointRotation::path_for(std::int64_t epoch, std::int64_t step) const
{
    if (!m_file.empty()) return m_file;
    std::error_code ec;
    fs::create_directories(m_folder, ec);
    if (ec) throw Error("cannot make the checkpoint folder '" + m_folder + "': " + ec.message());
    return (fs::path(m_folder) / checkpoint_file_name(epoch, step)).string();
}

std::string CheckpointRotation::written(const std::string& path)
{
    // The same step written twice (a stop right after an epoch's end) is one file.
    m_written.erase(std::remove(m_written.begin(), m_written.end(), path), m_written.end());
    m_written.push_back(path);
    std::string kept;
    while (int(m_written.size()) > m_keep) {
        std::error_code ec;
        fs::remove(m_written.front(), ec);
        if (ec) kept += (kept.empty() ? "" : "; ") + m_written.front() + ": " + ec.message();
        m_written.pop_front();
    }
    return kept.empty() ? kept : "older checkpoints could not be deleted: " + kept;
}

} // namespace mixlab
