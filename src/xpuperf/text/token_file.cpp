#include "xpuperf/text/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "xpuperf/text/tokenizer_error.h"

namespace xpuperf::text {

namespace {

constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
constexpr std::uint8_t kUint16 = 8, kInt32 = 4;  // Megatron's dtype codes
constexpr std::size_t kHeader = 9 + 8 + 1 + 8 + 8;

template <typename T>
void put(std::ofstream& out, const T& value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
void put_all(std::ofstream& out, const std::vector<T>& values) {
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(T)));
}

std::pair<const std::uint8_t*, std::size_t> map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw TokenizerError(path + ": cannot be opened (" + std::strerror(errno) + ")");
  struct stat st {};
  ::fstat(fd, &st);
  const auto size = static_cast<std::size_t>(st.st_size);
  void* p = size ? ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0) : nullptr;
  ::close(fd);
  if (size && p == MAP_FAILED) throw TokenizerError(path + ": cannot be mapped (" + std::strerror(errno) + ")");
  return {static_cast<const std::uint8_t*>(p), size};
}

}  // namespace

constexpr const char* kParts[] = {".bin", ".idx", ".json"};

TokenFileWriter::TokenFileWriter(std::string prefix, std::int64_t vocab_size)
    : prefix_(std::move(prefix)), item_bytes_(vocab_size <= 65536 ? 2 : 4) {
  namespace fs = std::filesystem;
  if (prefix_.empty() || fs::path(prefix_).filename().empty() || fs::path(prefix_).filename() == "." ||
      fs::path(prefix_).filename() == "..")
    throw TokenizerError("-o " + prefix_ + ": give the dataset's path without .bin/.idx, e.g. " + prefix_ +
                         (prefix_.empty() || prefix_.back() == '/' ? "" : "/") +
                         "corpus (it writes corpus.bin, "
                         "corpus.idx and corpus.json)");
  std::error_code ec;
  for (const char* part : kParts)
    if (fs::is_directory(prefix_ + part, ec))
      throw TokenizerError(prefix_ + part + " is a folder; choose another -o prefix, or move the folder");
  if (const auto dir = fs::path(prefix_).parent_path(); !dir.empty()) {
    fs::create_directories(dir, ec);
    if (ec)
      throw TokenizerError("-o " + prefix_ + ": cannot make the folder " + dir.string() + " (" + ec.message() + ")");
  }
  bin_.open(prefix_ + ".bin.partial", std::ios::binary | std::ios::trunc);
  if (!bin_) throw TokenizerError(prefix_ + ".bin.partial: cannot be written (" + std::strerror(errno) + ")");
}

TokenFileWriter::~TokenFileWriter() {
  if (finished_) return;
  bin_.close();
  for (const char* part : kParts) std::remove((prefix_ + part + ".partial").c_str());
}

void TokenFileWriter::add_document(const std::vector<std::vector<std::int32_t>>& sequences) {
  for (const auto& s : sequences) {
    append_to_sequence(s);
    close_sequence();
  }
  end_document();
}

void TokenFileWriter::append_to_sequence(const std::vector<std::int32_t>& tokens) {
  if (tokens.empty()) return;
  if (open_ < 0) {
    pointers_.push_back(offset_);
    open_ = 0;
  }
  const auto n = static_cast<std::int64_t>(tokens.size());
  if (open_ + n > std::numeric_limits<std::int32_t>::max())
    throw TokenizerError(prefix_ + ": a document of more than 2,147,483,647 tokens, the most one sequence of the " +
                         "indexed format holds; split the input into smaller files");
  if (item_bytes_ == 2) {
    const std::vector<std::uint16_t> narrow(tokens.begin(), tokens.end());
    bin_.write(reinterpret_cast<const char*>(narrow.data()), static_cast<std::streamsize>(narrow.size() * 2));
  } else {
    bin_.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 4));
  }
  if (!bin_) throw TokenizerError(prefix_ + ".bin.partial: write failed (disk full?)");
  open_ += n;
  offset_ += n * item_bytes_;
  tokens_ += n;
}

void TokenFileWriter::close_sequence() {
  if (open_ < 0) return;
  sizes_.push_back(static_cast<std::int32_t>(open_));
  open_ = -1;
}

void TokenFileWriter::end_document() {
  close_sequence();
  if (static_cast<std::int64_t>(sizes_.size()) > doc_index_.back())  // an empty document adds nothing
    doc_index_.push_back(static_cast<std::int64_t>(sizes_.size()));
}

void TokenFileWriter::finish(const std::string& metadata) {
  end_document();  // a document still open
  bin_.close();
  if (!bin_) throw TokenizerError(prefix_ + ".bin.partial: write failed (disk full?)");
  std::ofstream idx(prefix_ + ".idx.partial", std::ios::binary | std::ios::trunc);
  idx.write(kMagic, sizeof kMagic);
  put(idx, std::uint64_t{1});
  put(idx, item_bytes_ == 2 ? kUint16 : kInt32);
  put(idx, static_cast<std::uint64_t>(sizes_.size()));
  put(idx, static_cast<std::uint64_t>(doc_index_.size()));
  put_all(idx, sizes_);
  put_all(idx, pointers_);
  put_all(idx, doc_index_);
  idx.close();
  if (!idx) throw TokenizerError(prefix_ + ".idx.partial: write failed (disk full?)");
  std::ofstream meta(prefix_ + ".json.partial", std::ios::trunc);
  meta << metadata;
  meta.close();
  if (!meta) throw TokenizerError(prefix_ + ".json.partial: write failed (disk full?)");
  for (const char* part : kParts)
    if (std::rename((prefix_ + part + ".partial").c_str(), (prefix_ + part).c_str()) != 0)
      throw TokenizerError(prefix_ + part + ": cannot be renamed into place (" + std::strerror(errno) + ")");
  finished_ = true;
}

TokenFile::TokenFile(const std::string& prefix) : prefix_(prefix) {
  const std::string idx_path = prefix + ".idx", bin_path = prefix + ".bin";
  std::tie(idx_, idx_size_) = map_file(idx_path);
  try {
    std::tie(bin_, bin_size_) = map_file(bin_path);
    if (idx_size_ < kHeader || std::memcmp(idx_, kMagic, sizeof kMagic) != 0)
      throw TokenizerError(idx_path + ": not a token index (no MMIDIDX header; make one with `xpuperf data tokenize`)");
    std::uint64_t version = 0;
    std::memcpy(&version, idx_ + 9, 8);
    if (version != 1) throw TokenizerError(idx_path + ": index version " + std::to_string(version) + ", expected 1");
    const std::uint8_t code = idx_[17];
    if (code != kUint16 && code != kInt32)
      throw TokenizerError(idx_path + ": token type code " + std::to_string(code) +
                           " (uint16 = 8 and int32 = 4 are read)");
    item_bytes_ = code == kUint16 ? 2 : 4;
    std::memcpy(&sizes_count_, idx_ + 18, 8);
    std::memcpy(&docs_count_, idx_ + 26, 8);
    // Counts from a damaged header can overflow the size they imply: bound them by the file first.
    if (sizes_count_ > idx_size_ / 12 || docs_count_ > idx_size_ / 8)
      throw TokenizerError(idx_path + ": its header counts " + std::to_string(sizes_count_) + " sequences and " +
                           std::to_string(docs_count_) + " document entries, more than its " +
                           std::to_string(idx_size_) + " bytes can hold (damaged, or not an index)");
    const std::uint64_t expected = kHeader + sizes_count_ * (4 + 8) + docs_count_ * 8;
    if (docs_count_ < 1 || idx_size_ != expected)
      throw TokenizerError(idx_path + ": " + std::to_string(idx_size_) + " bytes where its header promises " +
                           std::to_string(expected) + " (cut short or not an index)");
    sizes_ = reinterpret_cast<const std::int32_t*>(idx_ + kHeader);
    pointers_ = reinterpret_cast<const std::int64_t*>(idx_ + kHeader + sizes_count_ * 4);
    doc_index_ = reinterpret_cast<const std::int64_t*>(idx_ + kHeader + sizes_count_ * 12);
    std::int64_t offset = 0;
    for (std::uint64_t s = 0; s < sizes_count_; ++s) {
      if (pointers_[s] != offset || sizes_[s] < 0)
        throw TokenizerError(idx_path + ": sequence " + std::to_string(s) + " is not where the ones before it end");
      offset += static_cast<std::int64_t>(sizes_[s]) * item_bytes_;
    }
    tokens_ = offset / item_bytes_;
    if (static_cast<std::int64_t>(bin_size_) < offset)
      throw TokenizerError(bin_path + ": " + std::to_string(bin_size_) + " bytes, but " + idx_path + " describes " +
                           std::to_string(offset) + ": truncated (tokenise again)");
    if (static_cast<std::int64_t>(bin_size_) > offset)
      throw TokenizerError(bin_path + ": " + std::to_string(bin_size_) + " bytes, more than the " +
                           std::to_string(offset) + " " + idx_path + " describes: the two do not belong together");
    for (std::uint64_t d = 0; d + 1 < docs_count_; ++d)
      if (doc_index_[d] > doc_index_[d + 1])
        throw TokenizerError(idx_path + ": document " + std::to_string(d) + " starts after the next one");
    if (doc_index_[0] != 0 || doc_index_[docs_count_ - 1] != static_cast<std::int64_t>(sizes_count_))
      throw TokenizerError(idx_path + ": its document index does not cover its sequences");
  } catch (...) {
    if (idx_) ::munmap(const_cast<std::uint8_t*>(idx_), idx_size_);
    if (bin_) ::munmap(const_cast<std::uint8_t*>(bin_), bin_size_);
    throw;
  }
}

TokenFile::~TokenFile() {
  if (idx_) ::munmap(const_cast<std::uint8_t*>(idx_), idx_size_);
  if (bin_) ::munmap(const_cast<std::uint8_t*>(bin_), bin_size_);
}

void TokenFile::read(std::int64_t start, std::int64_t count, std::int32_t* out) const {
  if (start < 0 || count < 0 || start + count > tokens_)
    throw TokenizerError(prefix_ + ".bin: tokens " + std::to_string(start) + " to " + std::to_string(start + count) +
                         " are outside its " + std::to_string(tokens_));
  if (item_bytes_ == 2) {
    const auto* p = reinterpret_cast<const std::uint16_t*>(bin_) + start;
    for (std::int64_t i = 0; i < count; ++i) out[i] = p[i];
  } else {
    std::memcpy(out, reinterpret_cast<const std::int32_t*>(bin_) + start, static_cast<std::size_t>(count) * 4);
  }
}

std::vector<std::int32_t> TokenFile::sequence(std::int64_t s) const {
  std::vector<std::int32_t> out(static_cast<std::size_t>(sizes_[s]));
  read(sequence_start(s), sizes_[s], out.data());
  return out;
}

std::pair<std::int32_t, std::int32_t> TokenFile::id_range() const {
  std::int32_t low = std::numeric_limits<std::int32_t>::max(), high = -1;
  std::vector<std::int32_t> chunk(1 << 16);
  for (std::int64_t at = 0; at < tokens_; at += static_cast<std::int64_t>(chunk.size())) {
    const auto n = std::min<std::int64_t>(static_cast<std::int64_t>(chunk.size()), tokens_ - at);
    read(at, n, chunk.data());
    for (std::int64_t i = 0; i < n; ++i) {
      low = std::min(low, chunk[static_cast<std::size_t>(i)]);
      high = std::max(high, chunk[static_cast<std::size_t>(i)]);
    }
  }
  return {tokens_ > 0 ? low : 0, high};
}

}  // namespace xpuperf::text
