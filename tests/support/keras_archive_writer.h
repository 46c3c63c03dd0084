// Writes what Keras's model.save() writes, for the tests: a model.weights.h5 (through
// libhdf5, in memory) holding variables at layers/<name>/vars/<i>, and a zip (through
// libzip) of named members, so no binary fixture is kept in the tree.
#pragma once
#include <hdf5.h>
#include <zip.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mixlab::test {

struct H5Var {
    std::string path; // "layers/dense/vars/0"
    std::vector<std::uint64_t> shape;
    std::vector<float> values;
};

// The bytes of an HDF5 file holding `vars` as float32 datasets (parent groups created).
inline std::string h5_bytes(const std::vector<H5Var>& vars)
{
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(fapl, 1 << 16, 0); // in memory, never on disk
    const hid_t file = H5Fcreate("test.weights.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (file < 0) throw std::runtime_error("h5_bytes: H5Fcreate failed");
    const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    for (const H5Var& v : vars) {
        std::vector<hsize_t> dims(v.shape.begin(), v.shape.end());
        const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
        const hid_t d =
            H5Dcreate2(file, v.path.c_str(), H5T_IEEE_F32LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
        if (d < 0) throw std::runtime_error("h5_bytes: cannot create " + v.path);
        H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.values.data());
        H5Dclose(d);
        H5Sclose(space);
    }
    H5Fflush(file, H5F_SCOPE_GLOBAL);
    const ssize_t size = H5Fget_file_image(file, nullptr, 0);
    std::string bytes(std::size_t(size), '\0');
    H5Fget_file_image(file, bytes.data(), bytes.size());
    H5Pclose(lcpl);
    H5Fclose(file);
    H5Pclose(fapl);
    return bytes;
}

// A zip at `path` holding the members, deflated, in the order given.
inline void write_zip(const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& members)
{
    int error = 0;
    zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
    if (!z) throw std::runtime_error("write_zip: cannot create " + path);
    for (const auto& [name, bytes] : members) {
        zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
        if (!src || zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE) < 0)
            throw std::runtime_error("write_zip: cannot add " + name);
    }
    // The buffers are read at close: `members` is alive until then.
    if (zip_close(z) != 0) throw std::runtime_error("write_zip: cannot write " + path);
}

} // namespace mixlab::test
