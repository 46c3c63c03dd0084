// write_file_atomically: the .tmp beside the file, fsync, rename.
#include "mixlab/atomic_file.h"

#include "mixlab/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace mixlab {

void write_file_atomically(const std::string& path, std::string_view content)
{
    const std::string tmp = path + ".tmp";
    auto fail = [&](const std::string& step, int err) {
        ::unlink(tmp.c_str());
        throw Error("cannot write '" + path + "': " + step + ": " + std::strerror(err));
    };
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        const int err = errno;
        throw Error("cannot write '" + path + "': creating '" + tmp + "': " + std::strerror(err));
    }
    std::size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            ::close(fd);
            fail("writing", err);
        }
        done += std::size_t(n);
    }
    // Flushed before the rename, so a crash leaves the old file or the new one, whole.
    if (::fsync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        fail("flushing", err);
    }
    if (::close(fd) != 0) fail("closing", errno);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("renaming the .tmp over it", errno);
}

} // namespace mixlab
