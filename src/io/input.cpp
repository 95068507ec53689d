#include "memsnap/io/input.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <new>

#include "absl/strings/str_cat.h"
#include "memsnap/util/strings.h"

namespace memsnap::io {

namespace {

// A mapped file truncated while it is read raises SIGBUS on the pages past its new end. The
// mappings are registered here, as plain words a signal handler may read; the handler maps zero
// pages over the rest of the faulting mapping (the decoders, on any thread, then read zeros and
// fail or finish) and flags it, and MappedFile::CheckUnchanged turns the flag into an error. A
// SIGBUS outside every registered mapping goes to the handler that was there before.
constexpr int kGuardSlots = 1024;
struct GuardSlot {
  std::atomic<int> state{0};  // 0 free, 2 being filled, 1 published
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<int> faulted{0};
};
GuardSlot g_guards[kGuardSlots];
struct sigaction g_previous_sigbus;
uintptr_t g_page_size = 4096;  // read once at installation: sysconf is not async-signal-safe

extern "C" void OnSigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (GuardSlot& g : g_guards) {
    if (g.state.load(std::memory_order_acquire) != 1) continue;
    const uintptr_t begin = g.begin.load(std::memory_order_relaxed);
    const uintptr_t end = g.end.load(std::memory_order_relaxed);
    if (addr < begin || addr >= end) continue;
    const uintptr_t from = addr / g_page_size * g_page_size;
    g.faulted.store(1, std::memory_order_release);
    if (mmap(reinterpret_cast<void*>(from), end - from, PROT_READ,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      return;  // the faulting read restarts and reads zeros
    }
    break;
  }
  // Not ours (or no zero page to be had): what was there before decides.
  if (g_previous_sigbus.sa_flags & SA_SIGINFO) {
    if (g_previous_sigbus.sa_sigaction != nullptr) {
      g_previous_sigbus.sa_sigaction(sig, info, context);
      return;
    }
  } else if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN) {
    g_previous_sigbus.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL);  // the read restarts and dies of the signal
}

// Installed for every mapping unless it is already in place: whoever installed a handler since
// (a test framework's crash reporter) becomes the one a foreign SIGBUS goes to.
void InstallSigbusGuard() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  struct sigaction current {};
  sigaction(SIGBUS, nullptr, &current);
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == OnSigbus) return;
  g_page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  struct sigaction sa {};
  sa.sa_sigaction = OnSigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &g_previous_sigbus);
}

int GuardMapping(const void* data, size_t size) {
  InstallSigbusGuard();
  for (int i = 0; i < kGuardSlots; ++i) {
    int expected = 0;
    if (g_guards[i].state.compare_exchange_strong(expected, 2, std::memory_order_acquire)) {
      g_guards[i].begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_relaxed);
      g_guards[i].end.store(reinterpret_cast<uintptr_t>(data) + size, std::memory_order_relaxed);
      g_guards[i].faulted.store(0, std::memory_order_relaxed);
      g_guards[i].state.store(1, std::memory_order_release);
      return i;
    }
  }
  return -1;  // over 1024 files mapped at once: this one is unguarded
}

class MappedFile final : public InputSource {
 public:
  MappedFile(std::string name, const char* data, size_t size, int fd, const struct stat& st)
      : name_(std::move(name)), data_(data), size_(size), fd_(fd), opened_(st) {
    if (size_ > 0) guard_ = GuardMapping(data_, size_);
  }
  ~MappedFile() override {
    if (guard_ >= 0) g_guards[guard_].state.store(0, std::memory_order_release);
    if (size_ > 0) munmap(const_cast<char*>(data_), size_);
    if (fd_ >= 0) close(fd_);
  }
  absl::Status CheckUnchanged() const override {
    struct stat now;
    const bool faulted =
        guard_ >= 0 && g_guards[guard_].faulted.load(std::memory_order_acquire) != 0;
    if (faulted || fd_ < 0 || fstat(fd_, &now) != 0 || now.st_size != opened_.st_size ||
        now.st_mtim.tv_sec != opened_.st_mtim.tv_sec ||
        now.st_mtim.tv_nsec != opened_.st_mtim.tv_nsec) {
      if (fd_ < 0 && !faulted) return absl::OkStatus();  // an empty file: nothing was mapped
      return absl::AbortedError(absl::StrCat(name_, ": file changed while it was read"));
    }
    return absl::OkStatus();
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
  struct stat opened_;
  int guard_ = -1;
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

namespace {

std::string_view KindOfFile(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

absl::Status NotRegular(const std::string& path, mode_t mode) {
  if (S_ISDIR(mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory"));
  return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file (",
                                                 Sv(KindOfFile(mode)),
                                                 "); give a file, or - to read standard input"));
}

// Standard input, read whole into an owned buffer (a pipe cannot be mapped), then parsed as a
// file is.
absl::StatusOr<std::unique_ptr<InputSource>> ReadStdin() {
  const std::string name = "<stdin>";
  if (isatty(STDIN_FILENO)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name,
                     ": is a terminal; pipe a snapshot in (zcat snap.pickle.gz | memsnap "
                     "summary -)"));
  }
  std::string bytes;
  struct stat st;
  if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    bytes.reserve(static_cast<size_t>(st.st_size) + 64);  // `< snap.pickle`
  }
  size_t size = 0;
  while (true) {
    if (bytes.size() - size < (64 << 10)) {
      try {
        bytes.resize(std::max<size_t>(bytes.size() * 2, 1 << 20));
      } catch (const std::bad_alloc&) {
        return absl::ResourceExhaustedError(
            absl::StrCat(name, ": out of memory holding ", size, " bytes read (needed ",
                         std::max<size_t>(bytes.size() * 2, 1 << 20), ")"));
      }
    }
    const ssize_t got = read(STDIN_FILENO, bytes.data() + size, bytes.size() - size);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", std::strerror(errno)));
    }
    size += static_cast<size_t>(got);
  }
  bytes.resize(size);
  return std::unique_ptr<InputSource>(new OwnedSource(std::move(bytes), name));
}

}  // namespace

absl::StatusOr<std::unique_ptr<InputSource>> OpenFile(const std::string& path) {
  if (path == "-") return ReadStdin();
  // stat before open: opening a FIFO without a writer would block forever.
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    const int e = errno;
    // A link whose target is gone (a rank's file on a disk that is not mounted) says where to.
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
    if (e == ENOENT && !ec) {
      return absl::NotFoundError(
          absl::StrCat(path, ": a symbolic link to ", target.string(), ", which does not exist"));
    }
    if (e == ELOOP) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": a symbolic link in a loop (", std::strerror(e), ")"));
    }
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(e)));
  }
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  // O_NONBLOCK: should it have become a FIFO since, open returns at once (and fstat refuses it).
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return absl::InternalError(absl::StrCat(path, ": ", std::strerror(e)));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return NotRegular(path, st.st_mode);
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return std::unique_ptr<InputSource>(new MappedFile(path, "", 0, -1, st));
  }
  void* data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (data == MAP_FAILED) {
    int e = errno;
    close(fd);
    return absl::InternalError(absl::StrCat(path, ": mmap: ", std::strerror(e)));
  }
  madvise(data, size, MADV_SEQUENTIAL);
  // The descriptor stays open for Peek and CheckUnchanged.
  return std::unique_ptr<InputSource>(
      new MappedFile(path, static_cast<const char*>(data), size, fd, st));
}

namespace {
// A directory named like a snapshot file looks like a rank (ListInputDirectory).
bool NamedLikeASnapshot(const std::filesystem::path& name) {
  for (const char* ext : {".pickle", ".pkl", ".pk", ".json", ".html", ".htm", ".gz", ".pt"}) {
    if (name.extension() == ext) return true;
  }
  return false;
}
}  // namespace

absl::StatusOr<std::vector<std::string>> ListInputDirectory(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  // The error_code overloads throughout: an entry that cannot be examined (a symbolic link in a
  // loop) must become a message naming it, never an exception.
  std::filesystem::directory_iterator it(dir, ec);
  for (const std::filesystem::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const std::filesystem::path& path = it->path();
    const std::string name = path.filename().string();
    if (name.empty() || name[0] == '.' || path.extension() == ".md") continue;
    std::error_code kind;  // a dangling or looping link is no directory: it is listed
    if (it->is_directory(kind) && !NamedLikeASnapshot(path.filename())) continue;
    out.push_back(path.string());
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat(dir, ": ", ec.message()));
  std::sort(out.begin(), out.end());
  return out;
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

std::string GunzipPrefix(std::string_view bytes, size_t max_output) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return {};
  std::string out(max_output, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(std::min<size_t>(bytes.size(), UINT32_MAX));
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(std::min<size_t>(max_output, UINT32_MAX));
  inflate(&zs, Z_SYNC_FLUSH);
  out.resize(max_output - zs.avail_out);
  inflateEnd(&zs);
  return out;
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
