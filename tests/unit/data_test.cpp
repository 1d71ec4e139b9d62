#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>

#ifdef XPUPERF_HAVE_NVJPEG
#include <cuda_runtime.h>
#endif

#include "test_util.h"
#include "xpuperf/data/device_jpeg.h"
#include "xpuperf/data/idx.h"
#include "xpuperf/data/image_folder.h"
#include "xpuperf/data/release_order.h"
#include "xpuperf/data/shard_sampler.h"

namespace xpuperf::data {
namespace {

std::string idx_bytes(const std::vector<std::uint32_t>& shape, const std::vector<std::uint8_t>& values) {
  std::string out = {0, 0, 0x08, static_cast<char>(shape.size())};
  for (std::uint32_t d : shape)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((d >> shift) & 0xff));
  out.append(values.begin(), values.end());
  return out;
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::string error_of(const std::string& path) {
  try {
    read_idx(path);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Idx, ReadsPlainAndGzippedFiles) {
  test::TempDir dir;
  const std::string bytes = idx_bytes({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const std::string plain = dir.write("a-idx3-ubyte", bytes);
  write_gz(dir.path() + "/b-idx3-ubyte.gz", bytes);
  for (const std::string& path : {plain, dir.path() + "/b-idx3-ubyte.gz"}) {
    const IdxArray a = read_idx(path);
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 2, 3}));
    EXPECT_EQ(a.values.size(), 12u);
    EXPECT_EQ(a.values[11], 12);
  }
}

TEST(Idx, BadFilesAreClearErrors) {
  test::TempDir dir;
  EXPECT_EQ(error_of(dir.path() + "/none"), dir.path() + "/none: file not found");
  EXPECT_NE(error_of(dir.write("empty", "")).find("empty or truncated"), std::string::npos);
  EXPECT_NE(error_of(dir.write("text", "hello world, not idx")).find("not an IDX file"), std::string::npos);
  std::string floats = idx_bytes({1}, {0, 0, 0, 0});
  floats[2] = 0x0d;
  EXPECT_NE(error_of(dir.write("floats", floats)).find("not unsigned bytes"), std::string::npos);
  const std::string full = idx_bytes({10, 28, 28}, std::vector<std::uint8_t>(10 * 28 * 28, 7));
  EXPECT_NE(error_of(dir.write("cut", full.substr(0, full.size() - 100))).find("truncated"), std::string::npos);
  write_gz(dir.path() + "/cut.gz", full.substr(0, full.size() - 100));
  EXPECT_NE(error_of(dir.path() + "/cut.gz").find("truncated"), std::string::npos);
  EXPECT_NE(error_of(dir.write("long", full + "xx")).find("longer than its header"), std::string::npos);
}

TEST(Idx, ImageSetsAreCheckedTogether) {
  test::TempDir dir;
  dir.write("train-images-idx3-ubyte", idx_bytes({3, 2, 2}, std::vector<std::uint8_t>(12, 1)));
  dir.write("train-labels-idx1-ubyte", idx_bytes({3}, {0, 9, 4}));
  const IdxImageSet set = read_idx_image_set(dir.path(), "train", 10);
  EXPECT_EQ(set.images.shape[0], 3);
  EXPECT_EQ(set.labels.values[1], 9);

  dir.write("bad-images-idx3-ubyte", idx_bytes({3, 2, 2}, std::vector<std::uint8_t>(12, 1)));
  dir.write("bad-labels-idx1-ubyte", idx_bytes({2}, {0, 1}));
  EXPECT_THROW(read_idx_image_set(dir.path(), "bad", 10), DataError);
  dir.write("big-images-idx3-ubyte", idx_bytes({1, 2, 2}, std::vector<std::uint8_t>(4, 1)));
  dir.write("big-labels-idx1-ubyte", idx_bytes({1}, {42}));
  try {
    read_idx_image_set(dir.path(), "big", 10);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("label 42 is outside 0..9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_idx_image_set(dir.path() + "/nope", "train", 10), DataError);
}

TEST(Idx, PrefersTheGzippedFile) {
  test::TempDir dir;
  dir.write("t10k-images-idx3-ubyte.gz", "x");
  EXPECT_EQ(find_idx_file(dir.path(), "t10k", "images", 3), dir.path() + "/t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(find_idx_file(dir.path(), "t10k", "labels", 1), dir.path() + "/t10k-labels-idx1-ubyte");
}

TEST(ShardSampler, RanksShareOneShuffleAndSplitIt) {
  const std::int64_t n = 103;
  std::multiset<std::int64_t> seen;
  std::size_t sizes = 0;
  for (int rank = 0; rank < 4; ++rank) {
    const auto mine = shard_indices({n, rank, 4, true, 7, true}, 3);
    if (rank == 0) sizes = mine.size();
    EXPECT_EQ(mine.size(), sizes);  // equal step counts on every rank
    EXPECT_EQ(static_cast<std::int64_t>(mine.size()), padded_shard_size(n, 4));
    seen.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(seen.size(), 104u);  // 103 samples + 1 repeated to pad
  for (std::int64_t i = 0; i < n; ++i) EXPECT_GE(seen.count(i), 1u) << i;
}

TEST(ShardSampler, ShuffleDependsOnEpochAndSeedOnly) {
  const ShardSpec spec{1000, 0, 1, true, 42, true};
  EXPECT_EQ(shard_indices(spec, 1), shard_indices(spec, 1));
  EXPECT_NE(shard_indices(spec, 1), shard_indices(spec, 2));
  ShardSpec other = spec;
  other.seed = 43;
  EXPECT_NE(shard_indices(spec, 1), shard_indices(other, 1));
  // A fixed sequence: the order must not change between builds or standard libraries.
  const auto first = shard_indices({10, 0, 1, true, 1, true}, 0);
  EXPECT_EQ(first, shard_indices({10, 0, 1, true, 1, true}, 0));
}

TEST(ShardSampler, EvaluationSplitCountsEverySampleOnce) {
  std::multiset<std::int64_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    const auto mine = shard_indices({10, rank, 3, false, 0, false}, 0);
    seen.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(seen.size(), 10u);
  for (std::int64_t i = 0; i < 10; ++i) EXPECT_EQ(seen.count(i), 1u);
  EXPECT_EQ(shard_indices({5, 0, 1, false, 0, false}, 0), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace xpuperf::data

namespace xpuperf::data {
namespace {

TEST(ImageFolder, ClassesAndImagesAreSortedLikeTorchvision) {
  test::TempDir dir;
  dir.write("val/n02/b.JPEG", "x");
  dir.write("val/n02/a.jpg", "x");
  dir.write("val/n02/notes.txt", "not an image");
  dir.write("val/n01/z.png", "x");
  const ImageFolder f = list_image_folder(dir.path() + "/val");
  ASSERT_EQ(f.classes, (std::vector<std::string>{"n01", "n02"}));
  ASSERT_EQ(f.images.size(), 3u);
  EXPECT_EQ(f.images[0].path, dir.path() + "/val/n01/z.png");
  EXPECT_EQ(f.images[0].label, 0);
  EXPECT_EQ(f.images[1].path, dir.path() + "/val/n02/a.jpg");
  EXPECT_EQ(f.images[2].label, 1);
}

TEST(ImageFolder, MissingOrEmptyFoldersAreClearErrors) {
  test::TempDir dir;
  try {
    list_image_folder(dir.path() + "/nope");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("'" + dir.path() + "/nope' does not exist"), std::string::npos) << e.what();
  }
  dir.write("flat/a.jpg", "x");
  EXPECT_THROW(list_image_folder(dir.path() + "/flat"), DataError);  // no class folders
  dir.write("val/n01/readme.txt", "x");
  try {
    list_image_folder(dir.path() + "/val");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("n01' has no images"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xpuperf::data

#include <sstream>

#include "xpuperf/core/progress.h"
#include "xpuperf/data/image_loader.h"
#include "xpuperf/data/image_tools.h"
#include "xpuperf/data/jpeg.h"

namespace xpuperf::data {
namespace {

TEST(Jpeg, RoundTripsAnImageAndRejectsBadBytesWithAReason) {
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  RgbImage image{48, 32, {}};
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 48; ++x)
      for (int c = 0; c < 3; ++c) image.pixels.push_back(static_cast<std::uint8_t>(x * 3 + y + c * 20));
  JpegCodec codec;
  const auto jpeg = codec.encode(image, 95);
  RgbImage back;
  std::string error;
  ASSERT_TRUE(codec.decode(jpeg.data(), jpeg.size(), back, error)) << error;
  EXPECT_EQ(back.width, 48);
  EXPECT_EQ(back.height, 32);
  int worst = 0;
  for (std::size_t i = 0; i < back.pixels.size(); ++i)
    worst = std::max(worst, std::abs(back.pixels[i] - image.pixels[i]));
  EXPECT_LE(worst, 12) << "lossy, but close";
  // Progressive files (some of ImageNet's are), and baseline ones again from the same codec.
  const auto progressive = codec.encode(image, 95, true);
  EXPECT_NE(progressive, jpeg);
  ASSERT_TRUE(codec.decode(progressive.data(), progressive.size(), back, error)) << error;
  const auto again = codec.encode(image, 95);
  EXPECT_EQ(again, jpeg);
  ASSERT_TRUE(codec.decode(again.data(), again.size(), back, error)) << error;

  // Cut in the middle of the scan: libjpeg-turbo's warning is an error here.
  const std::vector<std::uint8_t> cut(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(jpeg.size() * 9 / 10));
  EXPECT_FALSE(codec.decode(cut.data(), cut.size(), back, error));
  EXPECT_NE(error.find("Premature end"), std::string::npos) << error;
  const std::vector<std::uint8_t> headers_only(jpeg.begin(), jpeg.begin() + 100);
  EXPECT_FALSE(codec.decode(headers_only.data(), headers_only.size(), back, error));
  EXPECT_FALSE(error.empty());
  const std::string text = "not an image";
  EXPECT_FALSE(codec.decode(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), back, error));
  EXPECT_EQ(error, "not a JPEG file (no start-of-image marker)");
}

// A copy of `jpeg` whose start-of-frame header claims width × height.
std::vector<std::uint8_t> with_frame_size(std::vector<std::uint8_t> jpeg, int width, int height) {
  for (std::size_t i = 2; i + 9 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC2)) {  // SOF0 / SOF2: length, precision, H, W
      jpeg[i + 5] = static_cast<std::uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<std::uint8_t>(height & 0xFF);
      jpeg[i + 7] = static_cast<std::uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<std::uint8_t>(width & 0xFF);
      return jpeg;
    }
  ADD_FAILURE() << "no start-of-frame marker";
  return jpeg;
}

RgbImage gradient(int width, int height) {
  RgbImage image{width, height, {}};
  for (int i = 0; i < width * height * 3; ++i) image.pixels.push_back(static_cast<std::uint8_t>(i * 7));
  return image;
}

// The start-of-frame header's component count and the luma's sampling factors (H << 4 | V).
std::pair<int, int> frame_sampling(const std::vector<std::uint8_t>& jpeg) {
  for (std::size_t i = 2; i + 11 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC2)) return {jpeg[i + 9], jpeg[i + 11]};
  ADD_FAILURE() << "no start-of-frame marker";
  return {0, 0};
}

TEST(Jpeg, EncodesEachChromaSamplingAndGreyDecodesToEqualChannels) {
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  JpegCodec codec;
  const RgbImage image = gradient(33, 17);
  EXPECT_EQ(frame_sampling(codec.encode(image, 90)), std::make_pair(3, 0x22));
  EXPECT_EQ(frame_sampling(codec.encode(image, 90, false, ChromaSampling::s420)), std::make_pair(3, 0x22));
  EXPECT_EQ(frame_sampling(codec.encode(image, 90, false, ChromaSampling::s422)), std::make_pair(3, 0x21));
  EXPECT_EQ(frame_sampling(codec.encode(image, 90, false, ChromaSampling::s444)), std::make_pair(3, 0x11));
  const auto grey = codec.encode(image, 90, false, ChromaSampling::grey);
  EXPECT_EQ(frame_sampling(grey).first, 1);
  RgbImage back;
  std::string error;
  ASSERT_TRUE(codec.decode(grey.data(), grey.size(), back, error)) << error;
  ASSERT_EQ(back.pixels.size(), image.pixels.size());
  for (std::size_t i = 0; i < back.pixels.size(); i += 3) {
    EXPECT_EQ(back.pixels[i], back.pixels[i + 1]);
    EXPECT_EQ(back.pixels[i], back.pixels[i + 2]);
  }
}

TEST(Jpeg, AFileThatFailsLeavesTheCodecGoodForTheNext) {
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  JpegCodec codec;
  const auto good = codec.encode(gradient(32, 32), 90);
  const auto zero_width = with_frame_size(good, 0, 32);
  RgbImage out;
  std::string error;
  EXPECT_FALSE(codec.decode(zero_width.data(), zero_width.size(), out, error));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(codec.decode(good.data(), good.size(), out, error)) << i << ": " << error;
}

TEST(Jpeg, AHeaderClaimingMorePixelsThanTheLimitIsRefusedBeforeDecoding) {
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  JpegCodec codec;
  const auto bomb = with_frame_size(codec.encode(gradient(32, 32), 90), 60000, 60000);
  RgbImage out;
  std::string error;
  EXPECT_FALSE(codec.decode(bomb.data(), bomb.size(), out, error));
  EXPECT_NE(error.find("60000x60000"), std::string::npos) << error;
  EXPECT_NE(error.find("max_image_pixels"), std::string::npos) << error;
  EXPECT_TRUE(out.pixels.empty()) << "nothing was allocated for it";
  codec.set_max_pixels(32 * 32 - 1);
  const auto good = codec.encode(gradient(32, 32), 90);
  EXPECT_FALSE(codec.decode(good.data(), good.size(), out, error));
  codec.set_max_pixels(32 * 32);
  EXPECT_TRUE(codec.decode(good.data(), good.size(), out, error)) << error;
}

TEST(ImageTools, OneBadFileAmongGoodOnesIsTheOnlyOneSkipped) {
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  test::TempDir dir;
  JpegCodec codec;
  const auto good = codec.encode(gradient(32, 32), 90);
  const auto write = [&](const std::string& name, const std::vector<std::uint8_t>& bytes) {
    dir.write(name, std::string(bytes.begin(), bytes.end()));
  };
  // Names sort the bad ones first, so every good file is decoded after them on the same thread.
  write("a/00_zero_width.JPEG", with_frame_size(good, 0, 32));
  write("b/00_bomb.JPEG", with_frame_size(good, 60000, 60000));
  for (int i = 1; i <= 20; ++i) {
    write("a/" + std::to_string(10 + i) + ".JPEG", good);
    write("b/" + std::to_string(10 + i) + ".JPEG", good);
  }
  for (int threads : {1, 2}) {
    const FolderCheck c = check_image_folder(dir.path(), threads, nullptr, kDefaultMaxImagePixels);
    ASSERT_EQ(c.unreadable.size(), 2u) << threads << " threads; first: " << c.unreadable.front().second;
    EXPECT_EQ(c.unreadable[0].first, dir.path() + "/a/00_zero_width.JPEG");
    EXPECT_EQ(c.unreadable[1].first, dir.path() + "/b/00_bomb.JPEG");
    EXPECT_NE(c.unreadable[1].second.find("max_image_pixels"), std::string::npos) << c.unreadable[1].second;
  }
  // The training loader: one batch of everything, in order, skipping exactly the two.
  ImageLoaderOptions o;
  o.image_size = 16;
  o.resize_to = 16;
  o.train = false;
  o.batch_size = 42;
  o.threads = 1;
  ImageFolderLoader loader(list_image_folder(dir.path()), o);
  loader.start_epoch(0);
  ASSERT_TRUE(loader.next().has_value());
  EXPECT_EQ(loader.skipped_files(),
            (std::set<std::string>{dir.path() + "/a/00_zero_width.JPEG", dir.path() + "/b/00_bomb.JPEG"}));
}

TEST(ImageTools, GreyUpscaledToRgbKeepsItsValues) {
  const std::uint8_t flat[4] = {100, 100, 100, 100};
  for (std::uint8_t v : grey_to_rgb_resized(flat, 2, 2, 8)) EXPECT_EQ(v, 100);
  const std::uint8_t ramp[2] = {0, 200};  // 2 × 1
  const auto rgb = grey_to_rgb_resized(ramp, 2, 1, 4);
  EXPECT_EQ(rgb[0], 0);        // the left edge
  EXPECT_EQ(rgb[3 * 3], 200);  // the right edge of the first row
  EXPECT_EQ(rgb[0], rgb[2]) << "grey in every channel";
}

TEST(ImageTools, FashionMnistBecomesAJpegFolderThatChecksClean) {
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  const std::string idx = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(idx)) GTEST_SKIP() << "apt-get install dataset-fashion-mnist";
  test::TempDir dir;
  FashionJpegOptions o;
  o.idx_dir = idx;
  o.out_dir = dir.path();
  o.size = 32;
  o.train_per_class = 3;
  o.val_per_class = 2;
  std::size_t last_done = 0, last_total = 0;
  const auto r = write_fashion_mnist_jpeg(o, [&](std::size_t d, std::size_t t) {
    last_done = d;
    last_total = t;
  });
  EXPECT_EQ(r.train_images, 30);
  EXPECT_EQ(r.val_images, 20);
  EXPECT_EQ(last_done, 50u);
  EXPECT_EQ(last_total, 50u);
  const auto folder = list_image_folder(dir.path() + "/train");
  EXPECT_EQ(folder.classes.front(), "0_tshirt_top");
  EXPECT_EQ(folder.classes.back(), "9_ankle_boot");

  FolderCheck c = check_image_folder(dir.path() + "/val", 2, nullptr, kDefaultMaxImagePixels);
  EXPECT_EQ(c.classes, 10u);
  EXPECT_EQ(c.images, 20u);
  EXPECT_EQ(c.min_per_class, 2u);
  EXPECT_TRUE(c.unreadable.empty());
  EXPECT_EQ(c.mean_width, 32);
  dir.write("val/3_dress/broken.JPEG", "\xff\xd8 cut off");
  c = check_image_folder(dir.path() + "/val", 2, nullptr, kDefaultMaxImagePixels);
  ASSERT_EQ(c.unreadable.size(), 1u);
  EXPECT_EQ(c.unreadable[0].first, dir.path() + "/val/3_dress/broken.JPEG");
  EXPECT_EQ(c.max_per_class, 3u);
}

TEST(Progress, OffATerminalALineEachTenthAndTheLast) {
  std::ostringstream out;
  ProgressBar bar("work", 100, out, false);
  for (std::size_t i = 0; i <= 100; ++i) bar.update(i);
  bar.finish();
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 11) << text;  // 0 %, 10 % … 90 %, and the end
  EXPECT_NE(text.find("work [##############################] 100% 100/100"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

}  // namespace
}  // namespace xpuperf::data

#include "xpuperf/data/image_loader.h"
#include "xpuperf/data/image_transforms.h"

namespace xpuperf::data {
namespace {

TEST(ImageTransforms, RandomResizedCropStaysInsideAndCoversEightToHundredPercent) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 500; ++i) {
    const CropBox b = random_resized_crop_box(500, 375, rng);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_LE(b.x + b.width, 500);
    ASSERT_LE(b.y + b.height, 375);
    const double share = static_cast<double>(b.width) * b.height / (500.0 * 375.0);
    EXPECT_GE(share, 0.075);
    EXPECT_LE(share, 1.0);
  }
  std::mt19937_64 a(9), b(9);
  const CropBox first = random_resized_crop_box(640, 480, a), second = random_resized_crop_box(640, 480, b);
  EXPECT_EQ(first.x, second.x);
  EXPECT_EQ(first.width, second.width);
}

TEST(ImageTransforms, TheEvaluationCropIsResize256ThenCentre224) {
  const CropBox b = center_crop_box(500, 375, 256, 224);  // the shorter side 375 -> 256
  EXPECT_EQ(b.width, 328);                                // 224 × 375 / 256
  EXPECT_EQ(b.height, 328);
  EXPECT_EQ(b.x, 86);
  EXPECT_EQ(b.y, 23);
}

TEST(ImageTransforms, AnUnscaledCropCopiesAndAFlipMirrors) {
  RgbImage img{4, 2, {}};
  for (int i = 0; i < 4 * 2 * 3; ++i) img.pixels.push_back(static_cast<std::uint8_t>(i * 10));
  std::vector<std::uint8_t> out(4 * 2 * 3);
  resize_crop(img, {0, 0, 4, 2}, 4, 2, false, out.data());
  EXPECT_EQ(out, img.pixels);
  resize_crop(img, {0, 0, 4, 2}, 4, 2, true, out.data());
  EXPECT_EQ(out[0], img.pixels[9]) << "the first pixel is the row's last";
  EXPECT_EQ(out[9 + 2], img.pixels[2]);
}

// A small Fashion-MNIST JPEG folder in `dir` (train/ and val/), for the loader's tests.
void write_small_jpeg_folder(const test::TempDir& dir, int size, std::int64_t train_per_class) {
  FashionJpegOptions f;
  f.idx_dir = "/usr/share/datasets/fashion-mnist";
  f.out_dir = dir.path();
  f.size = size;
  f.train_per_class = train_per_class;
  f.val_per_class = 1;
  write_fashion_mnist_jpeg(f, nullptr);
}

TEST(ImageLoader, BatchesAreTheSameWhateverTheThreadsAndBadFilesAreSkippedOnce) {
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "no Fashion-MNIST";
  test::TempDir dir;
  write_small_jpeg_folder(dir, 40, 3);

  ImageLoaderOptions o;
  o.image_size = 32;
  o.batch_size = 4;
  o.seed = 5;
  auto batches = [&](int threads) {
    o.threads = threads;
    ImageFolderLoader loader(list_image_folder(dir.path() + "/train"), o);
    loader.start_epoch(1);
    EXPECT_EQ(loader.batches_in_epoch(), 7);  // 30 images, the last partial batch dropped
    std::vector<ImageBatch> out;
    while (auto b = loader.next()) out.push_back(std::move(*b));
    return out;
  };
  const auto one = batches(1), three = batches(3);
  ASSERT_EQ(one.size(), 7u);
  ASSERT_EQ(three.size(), 7u);
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].size, 4);
    EXPECT_EQ(one[i].pixels.size(), 4u * 32 * 32 * 3);
    EXPECT_EQ(one[i].pixels, three[i].pixels) << "batch " << i;
    EXPECT_EQ(one[i].labels, three[i].labels);
    for (auto label : one[i].labels) EXPECT_TRUE(label >= 0 && label < 10);
  }

  dir.write("val/2_pullover/truncated.JPEG", "\xff\xd8\xff");
  o.train = false;
  o.resize_to = 36;
  o.threads = 2;
  ImageFolderLoader eval(list_image_folder(dir.path() + "/val"), o);
  for (int epoch = 0; epoch < 2; ++epoch) {
    eval.start_epoch(epoch);
    EXPECT_EQ(eval.batches_in_epoch(), 3);  // 11 files, the last batch of 3 kept
    std::int64_t seen = 0;
    while (auto b = eval.next()) seen += b->size;
    EXPECT_EQ(seen, 11) << "the bad file's place is taken, the batch keeps its size";
  }
  EXPECT_EQ(eval.skipped_files(), (std::set<std::string>{dir.path() + "/val/2_pullover/truncated.JPEG"}));
}

TEST(ImageLoader, StoppingMidEpochLeavesNoThreadBehind) {
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "no Fashion-MNIST";
  test::TempDir dir;
  write_small_jpeg_folder(dir, 32, 10);
  ImageLoaderOptions o;
  o.image_size = 28;
  o.batch_size = 2;
  o.threads = 3;
  ImageFolderLoader loader(list_image_folder(dir.path() + "/train"), o);
  loader.start_epoch(0);
  ASSERT_TRUE(loader.next());
  loader.start_epoch(1);  // the next epoch before the end of this one
  ASSERT_TRUE(loader.next());
}  // the destructor joins the workers

}  // namespace
}  // namespace xpuperf::data

namespace xpuperf::data {
namespace {

TEST(ImageTools, PhotoCropsLookLikeImageNetAndAreTheSameForTheSameSeed) {
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  test::TempDir dir;
  // A "photograph": 1200 x 900 of noisy gradients, so the crops carry detail.
  RgbImage photo{1200, 900, std::vector<std::uint8_t>(1200 * 900 * 3)};
  std::mt19937 noise(3);
  for (std::size_t i = 0; i < photo.pixels.size(); ++i)
    photo.pixels[i] = static_cast<std::uint8_t>((i / 3 % 1200) / 5 + noise() % 40);
  JpegCodec codec;
  const auto jpeg = codec.encode(photo, 92);
  dir.write("photos/one.jpg", std::string(jpeg.begin(), jpeg.end()));
  dir.write("photos/notes.txt", "not a photo, not listed\n");

  PhotoCropOptions o;
  o.sources = {dir.path() + "/photos"};
  o.out_dir = dir.path() + "/out";
  o.classes = 3;
  o.train_per_class = 4;
  o.val_per_class = 1;
  o.threads = 2;
  const PhotoCropResult r = write_photo_crops(o, nullptr);
  EXPECT_EQ(r.train_images, 12);
  EXPECT_EQ(r.val_images, 3);
  EXPECT_EQ(r.sources, 1);
  const FolderCheck c = check_image_folder(o.out_dir + "/train", 2, nullptr, kDefaultMaxImagePixels);
  EXPECT_EQ(c.classes, 3u);
  EXPECT_EQ(c.images, 12u);
  EXPECT_TRUE(c.unreadable.empty());
  EXPECT_GE(c.mean_width, 333);  // ImageNet's sizes: 333 to 640 pixels a side
  EXPECT_LE(c.mean_width, 640);
  const std::string first = test::read_file(o.out_dir + "/train/class_00000/train_00000_000000.JPEG");
  o.out_dir = dir.path() + "/again";
  write_photo_crops(o, nullptr);
  EXPECT_EQ(test::read_file(o.out_dir + "/train/class_00000/train_00000_000000.JPEG"), first);

  o.sources = {dir.path() + "/nowhere"};
  try {
    write_photo_crops(o, nullptr);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path() + "/nowhere does not exist"), std::string::npos) << e.what();
  }
  RgbImage small{200, 100, std::vector<std::uint8_t>(200 * 100 * 3, 9)};
  const auto tiny = codec.encode(small, 90);
  dir.write("small/icon.jpg", std::string(tiny.begin(), tiny.end()));
  o.sources = {dir.path() + "/small"};
  EXPECT_THROW(write_photo_crops(o, nullptr), DataError);
}

}  // namespace
}  // namespace xpuperf::data

namespace xpuperf::data {
namespace {

// Batches in device memory, back on the host.
std::vector<std::uint8_t> to_host(const ImageBatch& batch) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(batch.size * batch.height * batch.width * 3));
#ifdef XPUPERF_HAVE_NVJPEG
  EXPECT_EQ(cudaMemcpy(out.data(), batch.device_pixels, out.size(), cudaMemcpyDeviceToHost), cudaSuccess);
#endif
  return out;
}

// NVIDIA's JPEG decoder, where the build has it (the plug-in registers it as the binary loads).
const DeviceJpegBackend* nvjpeg() {
  return device_jpeg_named("nvjpeg");
}

TEST(NvJpeg, LoaderBatchesMatchTheCpuDecoderAndBadFilesAreSkippedTheSame) {
  if (!nvjpeg()) GTEST_SKIP() << "built without nvJPEG";
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "no Fashion-MNIST";
  try {
    nvjpeg()->make_decoder(0, 32, true);
  } catch (const DataError& e) {
    GTEST_SKIP() << e.what();
  }
  test::TempDir dir;
  write_small_jpeg_folder(dir, 96, 4);
  // What the GPU leaves to the CPU (progressive), and what neither decodes.
  {
    JpegCodec codec;
    RgbImage image;
    std::string error;
    const std::string path = std::filesystem::directory_iterator(dir.path() + "/train/3_dress")->path().string();
    std::vector<std::uint8_t> bytes;
    ASSERT_TRUE(read_file_bytes(path, bytes, error)) << error;
    ASSERT_TRUE(codec.decode(bytes.data(), bytes.size(), image, error)) << error;
    const auto progressive = codec.encode(image, 95, true);
    dir.write("train/3_dress/progressive.JPEG", std::string(progressive.begin(), progressive.end()));
    dir.write("train/4_coat/truncated.JPEG",
              std::string(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 2)));
    dir.write("train/5_sandal/notes.JPEG", "not a picture\n");
    // Colour, where the two decoders' chroma upsampling may differ.
    std::mt19937 rng(7);
    for (int k = 0; k < 3; ++k) {
      RgbImage colour;
      colour.width = 120 + 10 * k;
      colour.height = 90;
      colour.pixels.resize(static_cast<std::size_t>(colour.width * colour.height * 3));
      for (int y = 0; y < colour.height; ++y)
        for (int x = 0; x < colour.width; ++x)
          for (int c = 0; c < 3; ++c)
            colour.pixels[static_cast<std::size_t>((y * colour.width + x) * 3 + c)] =
                static_cast<std::uint8_t>((x * (c + 1) + y * (3 - c) + static_cast<int>(rng() % 24)) % 256);
      const auto jpeg = codec.encode(colour, 90);
      dir.write("train/6_shirt/colour" + std::to_string(k) + ".JPEG", std::string(jpeg.begin(), jpeg.end()));
    }
  }
  ImageLoaderOptions o;
  o.image_size = 64;
  o.batch_size = 8;
  o.seed = 3;
  o.threads = 2;
  auto epoch = [&](bool on_gpu, bool train) {
    o.device_decoder = on_gpu ? nvjpeg() : nullptr;
    o.train = train;
    ImageFolderLoader loader(list_image_folder(dir.path() + "/train"), o);
    loader.start_epoch(2);
    std::vector<ImageBatch> out;
    std::int64_t images = 0;
    while (auto b = loader.next()) {
      images += b->size;
      if (b->device_pixels) {
        b->pixels = to_host(*b);
        loader.release(*b, nullptr);
      }
      out.push_back(std::move(*b));
    }
    if (on_gpu) {
      // Each image once: the GPU's, or the CPU's (the progressive one, where the hardware decodes).
      EXPECT_EQ(loader.device_decoded() + loader.cpu_fallbacks(), images);
      EXPECT_GE(loader.device_decoded(), images - 1);
      std::cout << loader.decoder() << ": " << loader.device_decoded() << " on the GPU, " << loader.cpu_fallbacks()
                << " on the CPU\n";
    }
    return std::make_pair(out, loader.skipped_files());
  };
  for (bool train : {true, false}) {
    const auto [cpu, cpu_skipped] = epoch(false, train);
    const auto [gpu, gpu_skipped] = epoch(true, train);
    EXPECT_EQ(gpu_skipped, cpu_skipped);
    EXPECT_EQ(gpu_skipped.size(), 2u);
    ASSERT_EQ(gpu.size(), cpu.size());
    double worst_mean = 0;
    for (std::size_t b = 0; b < cpu.size(); ++b) {
      EXPECT_EQ(gpu[b].labels, cpu[b].labels) << "batch " << b;
      ASSERT_EQ(gpu[b].pixels.size(), cpu[b].pixels.size());
      // The two decoders' inverse DCTs differ by a level here and there (the GPU converts YCbCr
      // and upsamples chroma as libjpeg does); a wrong crop box, flip or colour by tens.
      double sum = 0;
      for (std::size_t i = 0; i < cpu[b].pixels.size(); ++i) sum += std::abs(gpu[b].pixels[i] - cpu[b].pixels[i]);
      worst_mean = std::max(worst_mean, sum / static_cast<double>(cpu[b].pixels.size()));
    }
    EXPECT_LT(worst_mean, 0.25) << (train ? "training" : "evaluation") << " crops";
    std::cout << (train ? "training" : "evaluation") << ": mean |gpu - cpu| of the worst batch " << worst_mean << "\n";
  }
}

}  // namespace
}  // namespace xpuperf::data

#include <thread>

namespace xpuperf::data {
namespace {

TEST(ReleaseOrder, BuffersComeBackInTheOrderTheyWereGivenBack) {
  ReleaseOrder order(3);
  EXPECT_EQ(order.take(), 0);
  EXPECT_EQ(order.take(), 1);
  EXPECT_EQ(order.take(), 2);
  order.give_back(2);
  order.give_back(0);
  order.give_back(1);
  EXPECT_EQ(order.take(), 2);  // not the lowest number: the one given back first
  EXPECT_EQ(order.take(), 0);
  order.give_back(2);
  EXPECT_EQ(order.take(), 1);
  EXPECT_EQ(order.take(), 2);
}

TEST(ReleaseOrder, TakeWaitsUntilOneIsGivenBack) {
  ReleaseOrder order(1);
  ASSERT_EQ(order.take(), 0);
  int taken = -1;
  std::thread waiter([&] { taken = order.take(); });
  order.give_back(0);
  waiter.join();
  EXPECT_EQ(taken, 0);
}

int cuda_devices() {
  int devices = 0;
#ifdef XPUPERF_HAVE_NVJPEG
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
#endif
  return devices;
}

TEST(NvJpeg, DeviceBuffersAreAcquiredInTheOrderTheyWereReleased) {
  if (!nvjpeg()) GTEST_SKIP() << "built without nvJPEG";
  if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device";
  const auto buffers = nvjpeg()->make_buffers(0, 1024, 3);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(buffers->acquire(), i);
  buffers->release(1, nullptr);
  buffers->release(2, nullptr);
  buffers->release(0, nullptr);
  EXPECT_EQ(buffers->acquire(), 1);
  EXPECT_EQ(buffers->acquire(), 2);
  EXPECT_EQ(buffers->acquire(), 0);
}

}  // namespace
}  // namespace xpuperf::data

namespace xpuperf::data {
namespace {

// A colourful test picture: gradients with noise, so that chroma varies between neighbours.
RgbImage colour_picture(int width, int height, unsigned seed) {
  RgbImage image;
  image.width = width;
  image.height = height;
  image.pixels.resize(static_cast<std::size_t>(width * height * 3));
  std::mt19937 rng(seed);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c)
        image.pixels[static_cast<std::size_t>((y * width + x) * 3 + c)] =
            static_cast<std::uint8_t>((x * (c + 2) + y * (4 - c) + static_cast<int>(rng() % 32)) % 256);
  return image;
}

TEST(NvJpeg, BothDecodersGiveTheCpuDecodersCropsForEveryChromaSampling) {
  if (!nvjpeg()) GTEST_SKIP() << "built without nvJPEG";
  if (!have_jpeg_codec()) GTEST_SKIP() << "built without libjpeg-turbo";
  if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device";
  constexpr int out = 48;
  JpegCodec codec;
  // Odd sizes: the chroma planes' last column and row are half-used.
  const std::vector<std::pair<ChromaSampling, const char*>> samplings = {{ChromaSampling::s420, "4:2:0"},
                                                                         {ChromaSampling::s422, "4:2:2"},
                                                                         {ChromaSampling::s444, "4:4:4"},
                                                                         {ChromaSampling::grey, "grey"}};
  std::vector<std::vector<std::uint8_t>> files;
  std::vector<RgbImage> cpu_images;
  for (std::size_t k = 0; k < samplings.size(); ++k) {
    files.push_back(codec.encode(colour_picture(121 + 10 * static_cast<int>(k), 93, 11u + static_cast<unsigned>(k)), 92,
                                 false, samplings[k].first));
    RgbImage decoded;
    std::string error;
    ASSERT_TRUE(codec.decode(files.back().data(), files.back().size(), decoded, error)) << error;
    cpu_images.push_back(std::move(decoded));
  }
  const auto buffers = nvjpeg()->make_buffers(0, files.size() * out * out * 3, 1);
  std::uint8_t* device = buffers->data(buffers->acquire());
  for (bool hardware : {true, false}) {
    const auto decoder = nvjpeg()->make_decoder(0, out, hardware);
    auto& gpu = *decoder;
    // A GPU without the hardware decoder gives the CUDA decoder when asked for the hardware one.
    if (hardware && gpu.backend().find("hardware") == std::string::npos) continue;
    std::vector<DeviceCropJob> jobs;
    std::vector<std::uint8_t*> outs;
    for (std::size_t k = 0; k < files.size(); ++k) {
      DeviceCropJob job;
      job.data = files[k].data();
      job.size = files[k].size();
      bool batchable = false;
      std::string error;
      ASSERT_TRUE(gpu.probe(job.data, job.size, job.shape, batchable, error)) << error;
      ASSERT_TRUE(batchable) << samplings[k].second;
      EXPECT_EQ(job.shape.width, cpu_images[k].width);
      EXPECT_EQ(job.shape.grey, samplings[k].first == ChromaSampling::grey);
      job.box = {7, 5, 90, 70};
      job.flip = k % 2 == 1;
      jobs.push_back(job);
      outs.push_back(device + k * out * out * 3);
    }
    std::string error;
    ASSERT_TRUE(gpu.decode_crops(jobs, outs, error)) << error;
    std::vector<std::uint8_t> got(files.size() * out * out * 3);
#ifdef XPUPERF_HAVE_NVJPEG
    ASSERT_EQ(cudaMemcpy(got.data(), device, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
#endif
    for (std::size_t k = 0; k < files.size(); ++k) {
      std::vector<std::uint8_t> want(out * out * 3);
      resize_crop(cpu_images[k], jobs[k].box, out, out, jobs[k].flip, want.data());
      double sum = 0;
      int worst = 0;
      for (std::size_t i = 0; i < want.size(); ++i) {
        const int d = std::abs(got[k * want.size() + i] - want[i]);
        sum += d;
        worst = std::max(worst, d);
      }
      const double mean = sum / static_cast<double>(want.size());
      std::cout << gpu.backend() << ", " << samplings[k].second << ": mean |gpu - cpu| " << mean << ", worst " << worst
                << "\n";
      // Only the inverse DCTs differ (a level here and there); wrong chroma siting, a swapped
      // plane or colour conversion shows as tens of levels.
      EXPECT_LT(mean, 0.5) << gpu.backend() << ", " << samplings[k].second;
      EXPECT_LE(worst, 4) << gpu.backend() << ", " << samplings[k].second;
    }
  }
}

}  // namespace
}  // namespace xpuperf::data
