#include "xpuperf/text/record.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "xpuperf/text/json_lines.h"
#include "xpuperf/text/tokenizer_error.h"
#include "xpuperf/text/unicode.h"

namespace xpuperf::text {

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

std::vector<RecordQuery> read_record_jsonl(const std::string& path) {
  std::vector<RecordQuery> out;
  std::int64_t passages = 0;
  for_each_json_line(
      path, "SuperGLUE's ReCoRD: one {\"passage\": ..., \"qas\": [...]} a line",
      [&](const nlohmann::json& j, const std::string& where) {
        ++passages;
        if (!j.is_object() || !j.contains("passage") || !j["passage"].is_object() || !j["passage"].contains("text") ||
            !j["passage"]["text"].is_string())
          throw TokenizerError(where + " has no \"passage\": {\"text\": ...} (is it ReCoRD's format?)");
        if (!j.contains("qas") || !j["qas"].is_array())
          throw TokenizerError(where + " has no \"qas\" list (is it ReCoRD's format?)");
        const auto text = j["passage"]["text"].get<std::string>();
        const auto chars = utf8_to_code_points(text);
        const auto span = [&](const nlohmann::json& e, const std::string& what) {
          if (!e.is_object() || !e.contains("start") || !e.contains("end") || !e["start"].is_number_integer() ||
              !e["end"].is_number_integer())
            throw TokenizerError(where + ": " + what + " without integer \"start\" and \"end\"");
          const auto start = e["start"].get<std::int64_t>(), end = e["end"].get<std::int64_t>();
          if (start < 0 || end < start || end >= static_cast<std::int64_t>(chars.size()))
            throw TokenizerError(where + ": " + what + " [" + std::to_string(start) + ", " + std::to_string(end) +
                                 "] lies outside the passage's " + std::to_string(chars.size()) + " characters");
          return to_utf8(std::vector<char32_t>(chars.begin() + start, chars.begin() + end + 1));
        };
        std::vector<std::string> candidates;
        std::set<std::string> seen;
        if (j["passage"].contains("entities") && j["passage"]["entities"].is_array())
          for (const auto& e : j["passage"]["entities"]) {
            auto entity = span(e, "an entity");
            if (seen.insert(entity).second) candidates.push_back(std::move(entity));
          }
        const std::string passage = replace_all(text, "@highlight\n", "- ");
        const std::string passage_id = j.contains("idx") ? j["idx"].dump() : std::to_string(passages - 1);
        for (const auto& qa : j["qas"]) {
          if (!qa.is_object() || !qa.contains("query") || !qa["query"].is_string())
            throw TokenizerError(where + ": a query without a \"query\" string");
          RecordQuery q;
          q.passage = passage;
          q.query = qa["query"].get<std::string>();
          if (q.query.find("@placeholder") == std::string::npos)
            throw TokenizerError(where + ": the query '" + q.query.substr(0, 60) + "' has no @placeholder");
          q.candidates = candidates;
          if (qa.contains("answers") && qa["answers"].is_array())
            for (const auto& a : qa["answers"]) {
              if (!a.is_object() || !a.contains("text") || !a["text"].is_string())
                throw TokenizerError(where + ": an answer without a \"text\" string");
              q.answers.push_back(a["text"].get<std::string>());
            }
          q.id = passage_id + "/" + (qa.contains("idx") ? qa["idx"].dump() : std::to_string(out.size()));
          out.push_back(std::move(q));
        }
      });
  if (out.empty()) throw TokenizerError(path + ": no ReCoRD queries");
  return out;
}

std::string normalize_answer(const std::string& text) {
  std::string lower;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 128 && std::ispunct(u)) continue;  // Python's string.punctuation: ASCII only
    lower.push_back(u < 128 ? static_cast<char>(std::tolower(u)) : c);
  }
  std::string out;
  for (const auto& w : words(lower)) {
    if (w == "a" || w == "an" || w == "the") continue;
    if (!out.empty()) out.push_back(' ');
    out += w;
  }
  return out;
}

double record_exact_match(const std::string& prediction, const std::vector<std::string>& answers) {
  const auto p = normalize_answer(prediction);
  for (const auto& a : answers)
    if (normalize_answer(a) == p) return 1.0;
  return 0.0;
}

double record_f1(const std::string& prediction, const std::vector<std::string>& answers) {
  const auto p = words(normalize_answer(prediction));
  double best = 0.0;
  for (const auto& answer : answers) {
    const auto a = words(normalize_answer(answer));
    std::map<std::string, int> counts;
    for (const auto& w : a) ++counts[w];
    int common = 0;
    for (const auto& w : p)
      if (counts[w]-- > 0) ++common;
    if (common == 0) continue;
    const double precision = static_cast<double>(common) / static_cast<double>(p.size());
    const double recall = static_cast<double>(common) / static_cast<double>(a.size());
    best = std::max(best, 2 * precision * recall / (precision + recall));
  }
  return best;
}

}  // namespace xpuperf::text
