// A `.keras` archive (Keras 3's model.save format): a zip holding config.json (the model,
// as model.to_json() writes it), metadata.json and model.weights.h5. Read with libzip.
#pragma once
#include <string>
#include <string_view>

namespace mixlab::keras {

struct Archive {
    std::string config_json;   // config.json, required
    std::string metadata_json; // metadata.json, empty when absent
    std::string weights_h5;    // model.weights.h5's bytes, empty when absent
};

// Whether `path` is to be read as an archive: it is named *.keras or starts with a zip's
// local file header ("PK\3\4"). A missing file is neither (the JSON reader names it).
bool is_archive_path(const std::string& path);

// Throws InputError "Keras archive '<path>': <problem>": not a zip (or a truncated one:
// its central directory is at the end), no config.json, a member that fails its CRC or
// cannot be read whole, a member larger than the engine reads, or an archive whose
// metadata.json names another Keras than 3 (tf.keras 2.13-2.15 wrote its weights in
// another layout).
Archive read_archive(const std::string& path);

} // namespace mixlab::keras
