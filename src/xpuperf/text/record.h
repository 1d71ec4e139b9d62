#pragma once
// SuperGLUE's ReCoRD (Zhang et al., "ReCoRD: Bridging the Gap between Human and Machine
// Commonsense Reading Comprehension"), the task FlagPerf's glm case fine-tunes on, as its JSON
// lines hold it: one passage a line, {"idx", "passage": {"text", "entities": [{"start", "end"}]},
// "qas": [{"idx", "query", "answers": [{"start", "end", "text"}]}]}, entity offsets counting
// characters (code points) with the end included. Its official scores: exact match and token F1
// of the predicted entity against the best of the answers, after SQuAD's normalisation. Torch-free.

#include <string>
#include <vector>

namespace xpuperf::text {

struct RecordQuery {
  std::string passage;                  // GLM's spelling: each "@highlight\n" marker made "- "
  std::string query;                    // "@placeholder" where the entity goes
  std::vector<std::string> candidates;  // the passage's distinct entity texts, in order of first mention
  std::vector<std::string> answers;     // none in the test split
  std::string id;                       // "passage idx/query idx"
};

// Every query of the file, in order. TokenizerError naming the file and line of anything that is
// not a ReCoRD line (no passage text, an entity outside it, a query without "@placeholder").
std::vector<RecordQuery> read_record_jsonl(const std::string& path);

// SQuAD's normalisation: lower case, punctuation and the articles a / an / the dropped, spaces
// collapsed.
std::string normalize_answer(const std::string& text);
// ReCoRD's exact match and F1 of a prediction: the best over the answers (0 with none).
double record_exact_match(const std::string& prediction, const std::vector<std::string>& answers);
double record_f1(const std::string& prediction, const std::vector<std::string>& answers);

}  // namespace xpuperf::text
