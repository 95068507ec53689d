#include "memsnap/io/output.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <streambuf>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "memsnap/util/status_macros.h"
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

// Temporary files are `.memsnap-<16 hex digits>.tmp` beside the file written: a name of memsnap's
// own (never one a user or another tool picks for a file of theirs, whatever the output's name),
// random (so two writers never meet), and short (an output name that fits NAME_MAX has a temporary
// name that fits too). A writer creates it with O_EXCL, holds flock(LOCK_EX) on it from then until
// it is renamed or removed, and marks it with the extended attribute `user.memsnap` = "temp" where
// the file system holds one. A file is a stale temporary file of memsnap's, and removed, only when
// all of that proves it: the name, a regular file owned by this user with one link, the mark (or
// no data at all: a writer killed before it marked its file; or a file system without extended
// attributes), and a lock that can be taken (its writer is gone).
constexpr std::string_view kTempPrefix = ".memsnap-";
constexpr std::string_view kTempSuffix = ".tmp";
constexpr size_t kTempDigits = 16;
constexpr const char* kTempMark = "user.memsnap";
constexpr std::string_view kTempMarkValue = "temp";

bool IsTempName(std::string_view name) {
  if (name.size() != kTempPrefix.size() + kTempDigits + kTempSuffix.size() ||
      !name.starts_with(kTempPrefix) || !name.ends_with(kTempSuffix)) {
    return false;
  }
  return name.substr(kTempPrefix.size(), kTempDigits).find_first_not_of("0123456789abcdef") ==
         std::string_view::npos;
}

std::string TempName() {
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) {
    // No entropy source (a very old kernel): the clock, the process and a counter still make the
    // name unique enough, and O_EXCL refuses a name that exists.
    static std::atomic<uint64_t> counter{0};
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    r = (static_cast<uint64_t>(ts.tv_nsec) ^ (static_cast<uint64_t>(ts.tv_sec) << 30)) * 31 +
        (static_cast<uint64_t>(::getpid()) << 40) + counter.fetch_add(1) * 0x9E3779B97F4A7C15ULL;
  }
  return absl::StrCat(Sv(kTempPrefix), absl::Hex(r, absl::kZeroPad16), Sv(kTempSuffix));
}

// The folder part of `path` with its slash ("dir/"), or "" for a bare name.
std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// Whether `fd` carries memsnap's mark; a file system without extended attributes holds none, so
// there the name, the owner and the lock are the proof.
bool Marked(int fd, const struct stat& st) {
  char value[8];
  const ssize_t n = ::fgetxattr(fd, kTempMark, value, sizeof value);
  if (n >= 0) return std::string_view(value, static_cast<size_t>(n)) == kTempMarkValue;
  return errno == ENOTSUP || st.st_size == 0;
}

// Removes the temporary files in `dir` ("" is the working directory) that a memsnap process left
// when it could not remove them itself (a SIGKILL, a power cut): only those the rules above prove
// to be such a file.
void RemoveStaleTemps(const std::string& dir) {
  DIR* d = ::opendir(dir.empty() ? "." : dir.c_str());
  if (d == nullptr) return;
  const int dfd = ::dirfd(d);
  while (const dirent* e = ::readdir(d)) {
    if (!IsTempName(e->d_name)) continue;
    const int fd =
        ::openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st, now;
    // The lock is taken last: a live writer holds it, and one that has finished renamed its file
    // away (so the name no longer leads to the inode locked here).
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
        st.st_nlink == 1 && Marked(fd, st) && ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        ::fstatat(dfd, e->d_name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev &&
        now.st_ino == st.st_ino) {
      ::unlinkat(dfd, e->d_name, 0);
    }
    ::close(fd);
  }
  ::closedir(d);
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

// The file a write of `path` lands in: `path`, or the file its symlinks lead to (which need not
// exist yet). A loop is ELOOP, as open(2) says it.
absl::StatusOr<std::string> FollowLinks(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::string link(PATH_MAX, '\0');
    const ssize_t n = ::readlink(p.c_str(), link.data(), link.size());
    if (n < 0) return SystemError(path, errno);
    link.resize(static_cast<size_t>(n));
    p = link.starts_with('/') ? link : absl::StrCat(DirOf(p), link);
  }
  return SystemError(path, ELOOP);
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
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    return WriteInPlace(path, write, bytes);
  }
  // A symlink is kept: its target is what gets written, beside which the temporary file goes.
  ASSIGN_OR_RETURN(const std::string target, FollowLinks(path));
  const std::string dir = DirOf(target);
  RemoveStaleTemps(dir);
  // The new file keeps the permissions of the one it replaces (created with them, so that it is
  // never more open than that; fchmod gives back the bits the umask took).
  const mode_t mode = exists && S_ISREG(st.st_mode) ? (st.st_mode & 07777) : 0666;
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = absl::StrCat(dir, TempName());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
    if (fd < 0) {
      if (errno == EEXIST && attempt < 16) continue;
      return SystemError(path, errno);
    }
    // Locked for as long as it is ours. A stale-file sweep of another writer may have taken it
    // between open and flock (it cannot tell a file a moment old from a dead one): then it is
    // gone, and another name is drawn.
    while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    struct stat own;
    if (::fstat(fd, &own) == 0 && own.st_nlink == 0) {
      ::close(fd);
      fd = -1;
      if (attempt >= 16) return SystemError(path, EEXIST);
    }
  }
  // Registered only once it is ours: the handler never removes a file this process did not make.
  const int slot = RegisterTemp(tmp);
  struct Unregister {
    int slot;
    ~Unregister() { UnregisterTemp(slot); }
  } unregister{slot};
  ::fsetxattr(fd, kTempMark, kTempMarkValue.data(), kTempMarkValue.size(), 0);
  if (exists) ::fchmod(fd, mode);
  // StreamTo closes `fd` (and reports what close says); the lock lives on in `held` until the
  // file has its final name.
  const int held = ::dup(fd);
  uint64_t written = 0;
  absl::Status status = StreamTo(fd, path, write, &written);
  if (status.ok() && ::rename(tmp.c_str(), target.c_str()) != 0) status = SystemError(path, errno);
  if (!status.ok()) ::unlink(tmp.c_str());
  if (held >= 0) ::close(held);
  if (!status.ok()) return status;
  if (bytes != nullptr) *bytes = written;
  return absl::OkStatus();
}

}  // namespace memsnap::io
