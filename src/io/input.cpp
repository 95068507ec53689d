#include "memsnap/io/input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "memsnap/util/strings.h"

namespace memsnap::io {

namespace {

class MappedFile final : public InputSource {
 public:
  MappedFile(std::string name, const char* data, size_t size, int fd)
      : name_(std::move(name)), data_(data), size_(size), fd_(fd) {}
  ~MappedFile() override {
    if (size_ > 0) munmap(const_cast<char*>(data_), size_);
    if (fd_ >= 0) close(fd_);
  }
  std::string_view bytes() const override { return {data_, size_}; }
  const std::string& name() const override { return name_; }
  size_t padding() const override {
    // The kernel zero-fills the tail of the file's last page; reading it is defined.
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return size_ % page == 0 ? 0 : page - size_ % page;
  }
  void ReleaseBefore(uint64_t offset) override {
    // Drop whole pages already decoded from the resident set; they are clean file pages, so a
    // later read (an error message quoting bytes) simply faults them back in.
    constexpr uint64_t kStep = 8 << 20;
    uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    uint64_t end = offset / page * page;
    if (end < released_ + kStep) return;
    madvise(const_cast<char*>(data_) + released_, end - released_, MADV_DONTNEED);
    released_ = end;
  }
  void ReleaseRange(uint64_t begin, uint64_t end) override {
    uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    begin = (begin + page - 1) / page * page;
    end = std::min<uint64_t>(end, size_) / page * page;
    if (end > begin) madvise(const_cast<char*>(data_) + begin, end - begin, MADV_DONTNEED);
  }
  void Peek(uint64_t offset, void* out, size_t n) const override {
    auto* to = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t got = pread(fd_, to, n, static_cast<off_t>(offset));
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        // The file changed under the mapping, or the descriptor cannot be read: the mapping
        // still can (the same bytes the decoder reads).
        std::memcpy(to, data_ + offset, n);
        return;
      }
      to += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
  }

 private:
  std::string name_;
  const char* data_;
  size_t size_;
  int fd_;
  uint64_t released_ = 0;
};

class MemorySource final : public InputSource {
 public:
  MemorySource(std::string_view bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}
  std::string_view bytes() const override { return bytes_; }
  const std::string& name() const override { return name_; }

 private:
  std::string_view bytes_;
  std::string name_;
};

class OwnedSource final : public InputSource {
 public:
  OwnedSource(std::string bytes, std::string name)
      : bytes_(std::move(bytes)), name_(std::move(name)) {}
  std::string_view bytes() const override { return bytes_; }
  const std::string& name() const override { return name_; }
  size_t padding() const override { return bytes_.capacity() - bytes_.size(); }

 private:
  std::string bytes_;
  std::string name_;
};

}  // namespace

void InputSource::Peek(uint64_t offset, void* out, size_t n) const {
  std::memcpy(out, bytes().data() + offset, n);
}

absl::StatusOr<std::unique_ptr<InputSource>> OpenFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return absl::InternalError(absl::StrCat(path, ": ", std::strerror(e)));
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory"));
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return std::unique_ptr<InputSource>(new MappedFile(path, "", 0, -1));
  }
  void* data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (data == MAP_FAILED) {
    int e = errno;
    close(fd);
    return absl::InternalError(absl::StrCat(path, ": mmap: ", std::strerror(e)));
  }
  madvise(data, size, MADV_SEQUENTIAL);
  // The descriptor stays open for Peek.
  return std::unique_ptr<InputSource>(
      new MappedFile(path, static_cast<const char*>(data), size, fd));
}

std::unique_ptr<InputSource> FromMemory(std::string_view bytes, std::string name) {
  return std::make_unique<MemorySource>(bytes, std::move(name));
}

std::unique_ptr<InputSource> FromString(std::string bytes, std::string name) {
  return std::make_unique<OwnedSource>(std::move(bytes), std::move(name));
}

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

absl::StatusOr<std::string> Gunzip(std::string_view bytes, std::string_view name,
                                   uint64_t max_output) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    return absl::InternalError(absl::StrCat(Sv(name), ": cannot initialise zlib"));
  }
  struct Guard {
    z_stream* z;
    ~Guard() { inflateEnd(z); }
  } guard{&zs};
  std::string out;
  // The gzip trailer holds the inflated size mod 2^32: reserve it (plus parser padding) so the
  // usual file inflates into one allocation. Deflate cannot expand more than 1032:1, so a
  // trailer that claims more is ignored (a hostile header must not make us allocate).
  if (bytes.size() >= 18) {
    uint32_t isize;
    std::memcpy(&isize, bytes.data() + bytes.size() - 4, 4);
    if (isize <= max_output && isize / 1032 <= bytes.size()) out.reserve(isize + 128);
  }
  size_t fed = 0;  // input bytes handed to zlib so far
  while (true) {
    if (zs.avail_in == 0 && fed < bytes.size()) {
      size_t n = std::min<size_t>(bytes.size() - fed, size_t{1} << 30);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + fed));
      zs.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    size_t old = out.size();
    size_t room = out.capacity() > old + 64 ? out.capacity() - old - 64 : 0;
    // Start small (a few times the input; tiny inputs are common under fuzzing), then double.
    size_t first = std::clamp<size_t>(bytes.size() * 4, 64 << 10, 1 << 20);
    size_t chunk = std::max<size_t>(room, std::clamp<size_t>(old, first, 256 << 20));
    chunk = std::min<uint64_t>(chunk, max_output + 1 - std::min<uint64_t>(old, max_output));
    out.resize(old + chunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + old);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(chunk, UINT32_MAX));
    size_t given = zs.avail_out;
    int ret = inflate(&zs, Z_NO_FLUSH);
    out.resize(old + given - zs.avail_out);
    if (ret == Z_STREAM_END) break;  // bytes after the first member are ignored
    if (out.size() > max_output) {
      return absl::InvalidArgumentError(
          absl::StrCat(Sv(name), ": gzip data inflates beyond ", max_output, " bytes; refusing"));
    }
    if (ret != Z_OK && ret != Z_BUF_ERROR) {
      return absl::InvalidArgumentError(
          absl::StrCat(Sv(name), ": offset ", fed - zs.avail_in, ": corrupt gzip data (",
                       zs.msg != nullptr ? zs.msg : "inflate error", ")"));
    }
    bool no_progress = out.size() == old && zs.avail_out != 0;
    if (zs.avail_in == 0 && fed == bytes.size() &&
        (no_progress || ret == Z_BUF_ERROR || zs.avail_out != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Sv(name), ": gzip data is truncated (ends before the end of the stream)"));
    }
  }
  return out;
}

}  // namespace memsnap::io
