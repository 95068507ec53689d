#include "memsnap/io/gzip_writer.h"

namespace memsnap::io {

namespace {
constexpr size_t kChunk = 1 << 18;
}

GzipOstream::Buf::Buf(std::ostream& sink, int level) : sink_(sink), in_(kChunk), out_(kChunk) {
  // 15 window bits + 16: a gzip header and trailer rather than a raw zlib stream.
  ok_ = deflateInit2(&zs_, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  setp(in_.data(), in_.data() + in_.size());
}

GzipOstream::Buf::~Buf() {
  (void)Finish();
  deflateEnd(&zs_);
}

bool GzipOstream::Buf::Deflate(int flush) {
  zs_.next_in = reinterpret_cast<Bytef*>(pbase());
  zs_.avail_in = static_cast<uInt>(pptr() - pbase());
  do {
    zs_.next_out = reinterpret_cast<Bytef*>(out_.data());
    zs_.avail_out = static_cast<uInt>(out_.size());
    const int rc = deflate(&zs_, flush);
    if (rc == Z_STREAM_ERROR) return false;
    sink_.write(out_.data(), static_cast<std::streamsize>(out_.size() - zs_.avail_out));
    if (!sink_) return false;
  } while (zs_.avail_out == 0);
  setp(in_.data(), in_.data() + in_.size());
  return true;
}

GzipOstream::Buf::int_type GzipOstream::Buf::overflow(int_type ch) {
  if (!ok_ || finished_ || !Deflate(Z_NO_FLUSH)) {
    ok_ = false;
    return traits_type::eof();
  }
  if (!traits_type::eq_int_type(ch, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
  }
  return traits_type::not_eof(ch);
}

int GzipOstream::Buf::sync() { return ok_ ? 0 : -1; }

absl::Status GzipOstream::Buf::Finish() {
  if (!finished_) {
    finished_ = true;
    ok_ = ok_ && Deflate(Z_FINISH);
    sink_.flush();
  }
  return ok_ && sink_ ? absl::OkStatus() : absl::DataLossError("gzip: write failed (disk full?)");
}

GzipOstream::GzipOstream(std::ostream& sink, int level) : std::ostream(nullptr), buf_(sink, level) {
  rdbuf(&buf_);
}

GzipOstream::~GzipOstream() = default;

absl::Status GzipOstream::Finish() { return buf_.Finish(); }

}  // namespace memsnap::io
