#include "memsnap/io/output.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <streambuf>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "memsnap/util/strings.h"

namespace memsnap::io {

namespace {

// The temporary files being written, as fixed C strings a signal handler may read: a slot is
// claimed (2), filled, then published (1); the handler unlinks the published ones. Nothing here
// allocates or locks, so the handler stays async-signal-safe.
constexpr int kSlots = 64;
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 2 being filled, 1 published
  char path[PATH_MAX];
};
TempSlot g_temps[kSlots];

int RegisterTemp(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_temps[i].state.compare_exchange_strong(expected, 2, std::memory_order_acquire)) {
      std::memcpy(g_temps[i].path, path.c_str(), path.size() + 1);
      g_temps[i].state.store(1, std::memory_order_release);
      return i;
    }
  }
  return -1;  // 64 outputs at once: this one is written unprotected
}

void UnregisterTemp(int slot) {
  if (slot >= 0) g_temps[slot].state.store(0, std::memory_order_release);
}

extern "C" void RemoveTempsAndDie(int sig) {
  for (TempSlot& s : g_temps) {
    if (s.state.load(std::memory_order_acquire) == 1) unlink(s.path);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
}

// An ostream buffer over a file descriptor that keeps the errno of a failed write, which
// std::ofstream loses ("write failed" instead of "No space left on device").
class FdBuf final : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd), buf_(new char[kSize]) { setp(buf_.get(), buf_.get() + kSize); }
  int error() const { return error_; }
  uint64_t written() const { return written_; }

 protected:
  int_type overflow(int_type c) override {
    if (!Drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return Drain() ? 0 : -1; }
  // tellp(): the bytes written so far (the report prints its page's size).
  pos_type seekoff(off_type off, std::ios_base::seekdir way, std::ios_base::openmode) override {
    if (off != 0 || way != std::ios_base::cur) return pos_type(off_type(-1));
    return pos_type(static_cast<off_type>(written_ + static_cast<uint64_t>(pptr() - pbase())));
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n >= static_cast<std::streamsize>(kSize)) {  // large pieces bypass the buffer
      if (!Drain() || !WriteAll(s, static_cast<size_t>(n))) return 0;
      return n;
    }
    return std::streambuf::xsputn(s, n);
  }

 private:
  static constexpr size_t kSize = 1 << 20;
  bool Drain() {
    const size_t n = static_cast<size_t>(pptr() - pbase());
    setp(buf_.get(), buf_.get() + kSize);
    return WriteAll(buf_.get(), n);
  }
  bool WriteAll(const char* p, size_t n) {
    if (error_ != 0) return false;
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        return false;
      }
      p += w;
      n -= static_cast<size_t>(w);
      written_ += static_cast<uint64_t>(w);
    }
    return true;
  }
  int fd_;
  std::unique_ptr<char[]> buf_;
  int error_ = 0;
  uint64_t written_ = 0;
};

// Removes PATH.tmp.PID files beside `path` whose process no longer exists: what a SIGKILL (or a
// power cut) left of an earlier write of the same output.
void RemoveStaleTemps(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string prefix =
      absl::StrCat(slash == std::string::npos ? path : path.substr(slash + 1), ".tmp.");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (!name.starts_with(prefix) || name.size() == prefix.size()) continue;
    std::string_view digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::atoi(std::string(digits).c_str()));
    if (pid <= 0 || pid == getpid()) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    unlink(absl::StrCat(dir, Sv(name)).c_str());
  }
  closedir(d);
}

absl::Status SystemError(const std::string& path, int error) {
  const std::string what = absl::StrCat(path, ": ", std::strerror(error));
  switch (error) {
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(what);
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(what);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::ResourceExhaustedError(what);
    default:
      return absl::InternalError(what);
  }
}

// Streams `write` into `fd`; the status names `path` and the system's reason of a failed write.
absl::Status StreamTo(int fd, const std::string& path,
                      const std::function<absl::Status(std::ostream&)>& write, uint64_t* bytes) {
  absl::Status status;
  int error = 0;
  {
    FdBuf buf(fd);
    std::ostream out(&buf);
    status = write(out);
    out.flush();
    error = buf.error();
    if (bytes != nullptr) *bytes = buf.written();
    if (status.ok() && error == 0 && !out) error = EIO;
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  // A failed write is the reason, whatever the writer made of its failing stream.
  if (error != 0) status = SystemError(path, error);
  return status;
}

absl::Status WriteInPlace(const std::string& path,
                          const std::function<absl::Status(std::ostream&)>& write,
                          uint64_t* bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return SystemError(path, errno);
  return StreamTo(fd, path, write, bytes);
}

}  // namespace

void InstallSignalCleanup() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;  // nohup
    struct sigaction sa {};
    sa.sa_handler = RemoveTempsAndDie;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<absl::Status(std::ostream&)>& write,
                                 uint64_t* bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    return WriteInPlace(path, write, bytes);
  }
  RemoveStaleTemps(path);
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  // Registered before it exists, so no moment has the file on disk and unknown to the handler.
  const int slot = RegisterTemp(tmp);
  struct Unregister {
    int slot;
    ~Unregister() { UnregisterTemp(slot); }
  } unregister{slot};
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return SystemError(path, errno);
  uint64_t written = 0;
  absl::Status status = StreamTo(fd, path, write, &written);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) status = SystemError(path, errno);
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  if (bytes != nullptr) *bytes = written;
  return absl::OkStatus();
}

}  // namespace memsnap::io
