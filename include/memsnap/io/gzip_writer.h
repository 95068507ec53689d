// A gzip-compressing ostream (zlib, gzip header), so writers that stream to an ostream can write
// a .gz file without holding the output in memory (`memsnap convert snap.pickle out.json.gz`).
#pragma once

#include <zlib.h>

#include <ostream>
#include <streambuf>
#include <vector>

#include "absl/status/status.h"

namespace memsnap::io {

/// Compresses what is written to it into `sink`. Call Finish() to flush the gzip trailer and see
/// whether it all went well; the destructor finishes too, without a status.
class GzipOstream : public std::ostream {
 public:
  explicit GzipOstream(std::ostream& sink, int level = 6);
  ~GzipOstream() override;
  absl::Status Finish();

 private:
  class Buf : public std::streambuf {
   public:
    Buf(std::ostream& sink, int level);
    ~Buf() override;
    absl::Status Finish();

   protected:
    int_type overflow(int_type ch) override;
    int sync() override;

   private:
    bool Deflate(int flush);
    std::ostream& sink_;
    z_stream zs_{};
    std::vector<char> in_, out_;
    bool ok_ = true;
    bool finished_ = false;
  };
  Buf buf_;
};

}  // namespace memsnap::io
