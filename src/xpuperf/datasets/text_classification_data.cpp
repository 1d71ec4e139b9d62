#include "xpuperf/datasets/text_classification_data.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "xpuperf/data/data_error.h"
#include "xpuperf/text/json_lines.h"
#include "xpuperf/text/tokenizer_error.h"

namespace xpuperf::datasets {

std::string data_file(const Config& cfg, const std::string& key) {
  const std::string value = cfg.get_string(key, "");
  if (value.empty()) throw ConfigError(cfg.at(key).source.str() + ": '" + key + "' is empty: name the file");
  if (std::filesystem::path(value).is_absolute()) return value;
  const std::string dir = cfg.get_string("data_dir", "");
  if (dir.empty())
    throw ConfigError("data_dir is empty: set it to the folder holding " + key + " '" + value +
                      "' (scripts/linux-doc-datasets.sh makes linux-doc-topics, docs/DATA.md)");
  return (std::filesystem::path(dir) / value).string();
}

text::WordPiece wordpiece_from(const Config& cfg) {
  try {
    return text::WordPiece::load(data_file(cfg, "vocab_file"), cfg.get_bool("lower_case", true));
  } catch (const text::TokenizerError& e) {
    throw data::DataError(std::string("vocab_file: ") + e.what());
  }
}

LabelledTexts read_labelled_jsonl(const std::string& path, const std::string& text_key, const std::string& label_key) {
  LabelledTexts out;
  const auto each = [&](const nlohmann::json& j, const std::string& where) {
    if (!j.is_object() || !j.contains(text_key) || !j[text_key].is_string())
      throw data::DataError(where + " has no string \"" + text_key + "\"");
    if (!j.contains(label_key) || !(j[label_key].is_string() || j[label_key].is_number_integer()))
      throw data::DataError(where + " has no \"" + label_key + "\" (a string or an integer)");
    out.texts.push_back(j[text_key].get<std::string>());
    out.labels.push_back(j[label_key].is_string() ? j[label_key].get<std::string>() : j[label_key].dump());
  };
  try {
    text::for_each_json_line(path, "JSON lines: one {\"" + text_key + "\": ..., \"" + label_key + "\": ...} a line",
                             each);
  } catch (const text::TokenizerError& e) {
    throw data::DataError(e.what());
  }
  if (out.texts.empty()) throw data::DataError(path + ": no labelled texts");
  return out;
}

namespace {

std::vector<torch::Tensor> tensors_of(const LabelledTexts& t, const std::map<std::string, std::int64_t>& ids_of,
                                      const TextEncoder& encode, const TextFraming& f, std::int64_t length,
                                      const std::string& path, std::int64_t& truncated) {
  const auto n = static_cast<std::int64_t>(t.texts.size());
  auto ids = torch::full({n, length}, static_cast<std::int64_t>(f.pad), torch::kLong);
  auto keep = torch::zeros({n, length}, torch::kBool);
  auto labels = torch::empty({n}, torch::kLong);
  auto* id = ids.data_ptr<std::int64_t>();
  auto* kept = keep.data_ptr<bool>();
  for (std::int64_t i = 0; i < n; ++i) {
    const auto& name = t.labels[static_cast<std::size_t>(i)];
    const auto label = ids_of.find(name);
    if (label == ids_of.end())
      throw data::DataError(path + ": label '" + name + "' (text " + std::to_string(i + 1) +
                            ") is not among the training file's labels");
    labels[i] = label->second;
    const auto pieces = encode(t.texts[static_cast<std::size_t>(i)]);
    const std::int64_t framing = (f.begin >= 0 ? 1 : 0) + (f.end >= 0 ? 1 : 0);
    const auto room = static_cast<std::size_t>(length - framing);
    if (pieces.size() > room) ++truncated;
    const std::size_t used = std::min(pieces.size(), room);
    std::int64_t* row = id + i * length;
    std::int64_t at = 0;
    if (f.begin >= 0) row[at++] = f.begin;
    for (std::size_t k = 0; k < used; ++k) row[at++] = pieces[k];
    if (f.end >= 0) row[at++] = f.end;
    std::fill(kept + i * length, kept + i * length + at, true);
  }
  return {ids, torch::zeros({n, length}, torch::kLong), keep, labels};
}

}  // namespace

ClassificationData classification_data(const std::string& train_path, const std::string& eval_path,
                                       const TextEncoder& encode, const TextFraming& framing, std::int64_t length) {
  const std::int64_t needed = 1 + (framing.begin >= 0 ? 1 : 0) + (framing.end >= 0 ? 1 : 0);
  if (length < needed)
    throw data::DataError("seq_length " + std::to_string(length) + ": a text needs " + std::to_string(needed) +
                          " tokens with its framing");
  const auto train = read_labelled_jsonl(train_path), eval = read_labelled_jsonl(eval_path);
  ClassificationData d;
  d.label_names = train.labels;
  std::sort(d.label_names.begin(), d.label_names.end());
  d.label_names.erase(std::unique(d.label_names.begin(), d.label_names.end()), d.label_names.end());
  if (d.label_names.size() < 2)
    throw data::DataError(train_path + ": one label only ('" + d.label_names.front() + "'); a classification needs 2");
  std::map<std::string, std::int64_t> ids_of;
  for (std::size_t i = 0; i < d.label_names.size(); ++i) ids_of[d.label_names[i]] = static_cast<std::int64_t>(i);
  std::int64_t cut_train = 0, cut_eval = 0;
  auto train_set = tensors_of(train, ids_of, encode, framing, length, train_path, cut_train);
  auto eval_set = tensors_of(eval, ids_of, encode, framing, length, eval_path, cut_eval);
  const auto describe = [&](const std::string& path, const LabelledTexts& t, std::int64_t cut) {
    return path + ": " + std::to_string(t.texts.size()) + " labelled texts, " + std::to_string(d.label_names.size()) +
           " labels, " + framing.tokenizer + ", " + std::to_string(length) + " tokens a sequence (" +
           std::to_string(cut) + " texts cut to fit)";
  };
  d.train = std::make_shared<TensorDataset>(std::move(train_set), describe(train_path, train, cut_train));
  d.eval = std::make_shared<TensorDataset>(std::move(eval_set), describe(eval_path, eval, cut_eval));
  return d;
}

TextFraming wordpiece_framing(const text::WordPiece& wordpiece) {
  return {wordpiece.cls(), wordpiece.sep(), wordpiece.pad(), "WordPiece"};
}

}  // namespace xpuperf::datasets
