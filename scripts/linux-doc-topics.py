#!/usr/bin/env python3
"""A sequence-classification dataset with real labels, from the Linux kernel's documentation:
each paragraph of prose labelled with the top-level Documentation/ folder it comes from
(networking, filesystems, ...). Whole files are held out for validation, so no file's paragraphs
are on both sides.

  scripts/linux-doc-topics.py DOC_DIR OUT_DIR [--folders a,b,...] [--per-label N] [--valid-every K]

Writes OUT_DIR/train.jsonl and OUT_DIR/valid.jsonl, one {"text": ..., "label": ...} a line (the
format the bert_finetune case reads), and OUT_DIR/README.txt saying how they were made. A
paragraph is a blank-line-separated block of 200 to 2,000 characters, mostly letters, not
indented (code), not a table, title or directive. Every K-th file of a folder (sorted by path,
K = 5) goes to validation; training keeps at most N paragraphs a label (1,500) so the labels
weigh alike. Deterministic: the same documentation gives the same files.
"""
import argparse
import gzip
import json
import os
import re
import sys

DEFAULT_FOLDERS = ["admin-guide", "core-api", "driver-api", "filesystems", "hwmon", "networking", "process", "userspace-api"]


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def paragraphs(text):
    for block in re.split(r"\n[ \t]*\n", text):
        if not block.strip() or block[0] in " \t":  # indented: code, quoted output
            continue
        lines = block.strip().splitlines()
        if any(re.match(r"^([=\-~^*+#`:.])\1{2,}\s*$", l) for l in lines):  # titles, table rules
            continue
        if lines[0].startswith(("..", "|", "+-", ":")):  # directives, tables, field lists
            continue
        joined = " ".join(l.strip() for l in lines)
        letters = sum(c.isalpha() for c in joined)
        if 200 <= len(joined) <= 2000 and letters >= 0.7 * len(joined):
            yield joined


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("doc_dir")
    a.add_argument("out_dir")
    a.add_argument("--folders", default=",".join(DEFAULT_FOLDERS))
    a.add_argument("--per-label", type=int, default=1500)
    a.add_argument("--valid-every", type=int, default=5)
    o = a.parse_args()
    folders = [f for f in o.folders.split(",") if f]
    missing = [f for f in folders if not os.path.isdir(os.path.join(o.doc_dir, f))]
    if missing:
        sys.exit(f"linux-doc-topics: no folder {', '.join(missing)} under {o.doc_dir}")
    train, valid = [], []
    counts = {}
    for label in folders:
        files = []
        for root, _, names in os.walk(os.path.join(o.doc_dir, label)):
            files += [os.path.join(root, n) for n in names if re.search(r"\.(rst|txt)(\.gz)?$", n)]
        kept = 0
        for i, path in enumerate(sorted(files)):
            held_out = i % o.valid_every == o.valid_every - 1
            for p in paragraphs(read(path)):
                if held_out:
                    valid.append({"text": p, "label": label})
                elif kept < o.per_label:
                    train.append({"text": p, "label": label})
                    kept += 1
        counts[label] = (kept, sum(1 for v in valid if v["label"] == label))
    os.makedirs(o.out_dir, exist_ok=True)
    for name, rows in (("train.jsonl", train), ("valid.jsonl", valid)):
        with open(os.path.join(o.out_dir, name + ".partial"), "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        os.replace(os.path.join(o.out_dir, name + ".partial"), os.path.join(o.out_dir, name))
    with open(os.path.join(o.out_dir, "README.txt"), "w") as f:
        f.write("Paragraphs of the Linux kernel's documentation labelled by their top-level folder "
                f"(scripts/linux-doc-topics.py {o.doc_dir}; every {o.valid_every}th file held out).\n")
        for label, (t, v) in counts.items():
            f.write(f"{label}: {t} train, {v} valid\n")
    print(f"linux-doc-topics: {len(train)} train and {len(valid)} validation paragraphs, {len(folders)} labels "
          f"({', '.join(f'{l} {t}/{v}' for l, (t, v) in counts.items())}) in {o.out_dir}")


if __name__ == "__main__":
    main()
