"""xpuperf's WordPiece (a token dataset made by `xpuperf data tokenize --tokenizer wordpiece`)
against Hugging Face's BertTokenizer on the same files: every document's ids equal?
Usage: python3 bench/wordpiece_vs_hf.py PREFIX VOCAB_TXT FILE...   (the FILEs in the order they
were given to `data tokenize`; .gz files are read compressed, as the tokeniser reads them)."""
import gzip
import json
import sys

import numpy as np
import transformers

prefix, vocab, files = sys.argv[1], sys.argv[2], sys.argv[3:]
idx = open(prefix + ".idx", "rb").read()
assert idx[:9] == b"MMIDIDX\x00\x00"
code = idx[17]
sequences, docs = np.frombuffer(idx[18:34], dtype=np.uint64)
off = 34
sizes = np.frombuffer(idx[off:off + 4 * int(sequences)], dtype=np.int32)
off += 12 * int(sequences)
doc_index = np.frombuffer(idx[off:off + 8 * int(docs)], dtype=np.int64)
ids = np.fromfile(prefix + ".bin", dtype=np.uint16 if code == 8 else np.int32)
starts = np.concatenate([[0], np.cumsum(sizes)])
tok = transformers.BertTokenizer(vocab, do_lower_case=True)
same = differ = tokens = d = 0
for path in files:
    text = (gzip.open if path.endswith(".gz") else open)(path, "rb").read().decode("utf-8", "replace")
    theirs = tok(text, add_special_tokens=False)["input_ids"]
    if not theirs:
        continue  # a file without tokens is no document
    ours = ids[starts[doc_index[d]]:starts[doc_index[d + 1]]].tolist()
    d += 1
    tokens += len(theirs)
    if ours == theirs:
        same += 1
    else:
        differ += 1
        i = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
        print(json.dumps({"file": path, "ours": len(ours), "hf": len(theirs), "first_difference": i,
                          "ours_there": tok.convert_ids_to_tokens(ours[max(0, i - 3):i + 4]),
                          "hf_there": tok.convert_ids_to_tokens(theirs[max(0, i - 3):i + 4])}))
print(json.dumps({"documents": d, "dataset_documents": int(docs) - 1, "identical": same, "different": differ, "hf_tokens": tokens,
                  "transformers": transformers.__version__}))
