// `.keras` archives through libzip: the members an import needs, each read whole and
// checked (libzip verifies a member's CRC once its last byte is read), or a refusal that
// names the archive and what is wrong with it.
#include "spec/keras_archive.h"

#include "base/json_util.h"
#include "mixlab/error.h"

#include <nlohmann/json.hpp>

#if MIXLAB_KERAS_ARCHIVES
#include <zip.h>
#endif

#include <cstdint>
#include <fstream>
#include <memory>

namespace mixlab::keras {

#if MIXLAB_KERAS_ARCHIVES
namespace {

// config.json of a real model is kilobytes, ResNet-50's weights ~100 MB: these bounds
// only keep a forged size field from asking for all of memory.
constexpr std::uint64_t k_max_config_bytes = 64ull << 20;
constexpr std::uint64_t k_max_weights_bytes = 4ull << 30;

struct ZipCloser {
    void operator()(zip_t* z) const { zip_discard(z); }
};
struct FileCloser {
    void operator()(zip_file_t* f) const { zip_fclose(f); }
};

std::string zip_error_text(int code)
{
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    std::string text = zip_error_strerror(&error);
    zip_error_fini(&error);
    return text;
}

// One member's bytes; false when the archive has no member of that name.
bool read_member(zip_t* z, const char* name, std::uint64_t max_bytes, std::string& out,
                 const std::string& what)
{
    const zip_int64_t index = zip_name_locate(z, name, 0);
    if (index < 0) return false;
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z, zip_uint64_t(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
        throw InputError(what + ": cannot read the size of " + name + ": " + zip_strerror(z));
    if (st.size > max_bytes)
        throw InputError(what + ": " + name + " holds " + std::to_string(st.size) +
                         " bytes, more than the " + std::to_string(max_bytes) + " MixLab reads");
    std::unique_ptr<zip_file_t, FileCloser> f(zip_fopen_index(z, zip_uint64_t(index), 0));
    if (!f) throw InputError(what + ": cannot open " + name + ": " + zip_strerror(z));
    out.assign(std::size_t(st.size), '\0');
    std::uint64_t at = 0;
    while (at < st.size) {
        const zip_int64_t n = zip_fread(f.get(), out.data() + at, st.size - at);
        if (n < 0)
            throw InputError(what + ": " + name + " is damaged (at byte " + std::to_string(at) +
                             " of " + std::to_string(st.size) + "): " + zip_file_strerror(f.get()));
        if (n == 0)
            throw InputError(what + ": " + name + " ends after " + std::to_string(at) + " of its " +
                             std::to_string(st.size) + " bytes");
        at += std::uint64_t(n);
    }
    // The CRC is checked when the end of the member is read: one more read reports it.
    char extra;
    if (zip_fread(f.get(), &extra, 1) < 0)
        throw InputError(what + ": " + name + " is damaged: " + zip_file_strerror(f.get()));
    return true;
}

// The Keras that wrote the archive (metadata.json's "keras_version"), refused unless it is
// Keras 3: tf.keras 2.13-2.15 wrote .keras archives too, whose model.weights.h5 groups a
// model's layers under _layer_checkpoint_dependencies/ (the Functional model's dict of
// its layers, which saving_lib walked before `layers`; Keras 3 reads them through a
// compatibility path). How that walk numbered the groups was not checked against
// tf.keras's own code here, and a wrong guess would put one layer's values into another
// of the same shape without a word: refused, naming the version. An archive without a
// readable version is read as Keras 3's (Keras 3 always writes one).
void check_keras_version(const std::string& metadata, const std::string& what)
{
    const nlohmann::json m = nlohmann::json::parse(metadata, nullptr, false);
    if (!m.is_object() || !m.contains("keras_version") || !m.at("keras_version").is_string())
        return;
    const std::string version = m.at("keras_version").get<std::string>();
    const std::size_t dot = version.find('.');
    const std::string major = version.substr(0, dot);
    if (major == "3") return;
    const std::string shown = json_util::printable_utf8(version);
    const bool older = major.size() == 1 && major[0] >= '0' && major[0] < '3';
    throw InputError(
        what + " was written by Keras " + shown + " (metadata.json's keras_version)" +
        (older ? ", whose saving code keeps the weights in model.weights.h5 under other "
                 "names than Keras 3 (_layer_checkpoint_dependencies/...)"
               : ", which MixLab does not know") +
        "; MixLab reads .keras archives written by Keras 3 (load this one in Keras 3 and "
        "model.save() it again), and a model's JSON (model.to_json()) of Keras 2 or 3 "
        "without its weights");
}

} // namespace

#endif

bool is_archive_path(const std::string& path)
{
    if (path.size() >= 6 && path.compare(path.size() - 6, 6, ".keras") == 0) return true;
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, 4) && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 &&
           magic[3] == 4;
}

Archive read_archive(const std::string& path)
{
    const std::string what = "Keras archive '" + path + "'";
#if !MIXLAB_KERAS_ARCHIVES
    throw InputError("cannot read " + what +
                     ": this MixLab was built without .keras archive "
                     "support (configured with -DMIXLAB_KERAS_ARCHIVES=OFF); import the "
                     "model's JSON (model.to_json(), or the archive's config.json) instead");
#else
    int code = 0;
    std::unique_ptr<zip_t, ZipCloser> z(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
    if (!z) {
        if (code == ZIP_ER_NOENT || code == ZIP_ER_OPEN || code == ZIP_ER_READ)
            throw InputError("cannot read " + what + ": " + zip_error_text(code));
        // A truncated zip has lost its central directory, which sits at the end.
        throw InputError(what + " is not a whole zip archive (" + zip_error_text(code) +
                         "); a .keras file is the zip Keras's model.save() writes, holding "
                         "config.json and model.weights.h5 (a truncated or damaged copy?)");
    }
    Archive a;
    if (!read_member(z.get(), "config.json", k_max_config_bytes, a.config_json, what))
        throw InputError(what + " holds no config.json: it is a zip, but not one Keras's "
                                "model.save() wrote (config.json, metadata.json, "
                                "model.weights.h5)");
    if (read_member(z.get(), "metadata.json", k_max_config_bytes, a.metadata_json, what))
        check_keras_version(a.metadata_json, what);
    read_member(z.get(), "model.weights.h5", k_max_weights_bytes, a.weights_h5, what);
    return a;
#endif
}

} // namespace mixlab::keras
