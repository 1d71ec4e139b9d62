#include "xpuperf/report/history.h"

#include <pwd.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

namespace xpuperf::report {
namespace fs = std::filesystem;

namespace {

using Db = std::unique_ptr<sqlite3, decltype(&sqlite3_close)>;
using Statement = std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)>;

Db open(const std::string& path) {
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open(path.c_str(), &raw);
  Db db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) throw HistoryError("cannot open the history " + path + ": " + sqlite3_errmsg(raw));
  sqlite3_busy_timeout(raw, 5000);  // another xpuperf may be writing
  return db;
}

void exec(sqlite3* db, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw HistoryError("history: " + message);
  }
}

Statement prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK)
    throw HistoryError(std::string("history: ") + sqlite3_errmsg(db));
  return Statement(raw, &sqlite3_finalize);
}

void bind_text(sqlite3_stmt* s, int i, const std::string& text) {
  sqlite3_bind_text(s, i, text.c_str(), -1, SQLITE_TRANSIENT);
}

void bind_figure(sqlite3_stmt* s, int i, const Round& round, const char* figure) {
  if (const double* v = round.find(figure))
    sqlite3_bind_double(s, i, *v);
  else
    sqlite3_bind_null(s, i);
}

const char* kSchema =
    "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, run TEXT, run_dir TEXT UNIQUE, vendor TEXT, "
    "launcher TEXT, xpuperf_version TEXT, recorded_unix REAL);"
    "CREATE TABLE IF NOT EXISTS rounds (run_id INTEGER REFERENCES runs(id) ON DELETE CASCADE, case_key TEXT, "
    "round INTEGER, status TEXT, reason TEXT, samples_per_second REAL, e2e_time REAL, raw_train_time REAL, "
    "final_metric REAL, converged INTEGER, energy_j REAL, energy_per_sample_j REAL, peak_host_mem_bytes REAL, "
    "peak_device_mem_bytes REAL);";

}  // namespace

std::string default_history_path() {
  if (const char* p = std::getenv("XPUPERF_HISTORY"); p && *p) return p;
  if (const char* d = std::getenv("XDG_DATA_HOME"); d && *d) return std::string(d) + "/xpuperf/history.db";
  // HOME unset (a cron job, `env -i`): the account's home from the password database, never the
  // working folder, which would scatter a .local/ into wherever the run started.
  const char* home = std::getenv("HOME");
  std::string folder = home && *home ? home : "";
  if (folder.empty())
    if (const passwd* account = ::getpwuid(::getuid()); account && account->pw_dir && *account->pw_dir)
      folder = account->pw_dir;
  if (folder.empty()) folder = "/tmp";
  return folder + "/.local/share/xpuperf/history.db";
}

void record_run(const std::string& db_path, const Summary& summary, const std::string& run_dir) {
  Db db = open(db_path);
  exec(db.get(), "PRAGMA foreign_keys = ON;");
  exec(db.get(), kSchema);
  exec(db.get(), "BEGIN;");
  const std::string dir = fs::absolute(run_dir).lexically_normal().string();
  {
    auto del = prepare(db.get(), "DELETE FROM runs WHERE run_dir = ?;");
    bind_text(del.get(), 1, dir);
    sqlite3_step(del.get());
  }
  auto run = prepare(db.get(),
                     "INSERT INTO runs (run, run_dir, vendor, launcher, xpuperf_version, recorded_unix) "
                     "VALUES (?, ?, ?, ?, ?, strftime('%s','now'));");
  bind_text(run.get(), 1, summary.run);
  bind_text(run.get(), 2, dir);
  bind_text(run.get(), 3, summary.vendor);
  bind_text(run.get(), 4, summary.launcher);
  bind_text(run.get(), 5, summary.xpuperf_version);
  if (sqlite3_step(run.get()) != SQLITE_DONE) throw HistoryError(std::string("history: ") + sqlite3_errmsg(db.get()));
  const auto run_id = sqlite3_last_insert_rowid(db.get());
  auto round = prepare(db.get(), "INSERT INTO rounds VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);");
  for (const auto& c : summary.cases) {
    for (const auto& r : c.rounds) {
      sqlite3_reset(round.get());
      sqlite3_bind_int64(round.get(), 1, run_id);
      bind_text(round.get(), 2, c.key);
      sqlite3_bind_int(round.get(), 3, r.number);
      bind_text(round.get(), 4, r.status);
      bind_text(round.get(), 5, r.reason);
      bind_figure(round.get(), 6, r, "training_samples_per_second");
      bind_figure(round.get(), 7, r, "e2e_time");
      bind_figure(round.get(), 8, r, "raw_train_time");
      bind_figure(round.get(), 9, r, "final_metric");
      if (r.converged)
        sqlite3_bind_int(round.get(), 10, *r.converged ? 1 : 0);
      else
        sqlite3_bind_null(round.get(), 10);
      bind_figure(round.get(), 11, r, "energy_j");
      bind_figure(round.get(), 12, r, "energy_per_sample_j");
      bind_figure(round.get(), 13, r, "peak_host_mem_bytes");
      bind_figure(round.get(), 14, r, "peak_device_mem_bytes");
      if (sqlite3_step(round.get()) != SQLITE_DONE)
        throw HistoryError(std::string("history: ") + sqlite3_errmsg(db.get()));
    }
  }
  exec(db.get(), "COMMIT;");
}

std::vector<HistoryRow> list_history(const std::string& db_path, const std::string& case_filter) {
  std::vector<HistoryRow> rows;
  std::error_code ec;
  if (!fs::exists(db_path, ec)) return rows;
  Db db = open(db_path);
  exec(db.get(), kSchema);
  auto q = prepare(db.get(),
                   "SELECT runs.run, runs.run_dir, runs.vendor, rounds.case_key, COUNT(*), "
                   "SUM(rounds.status = 'ok'), SUM(rounds.converged = 1 AND rounds.status = 'ok'), "
                   "AVG(CASE WHEN rounds.status = 'ok' THEN rounds.samples_per_second END) "
                   "FROM runs JOIN rounds ON rounds.run_id = runs.id WHERE rounds.case_key LIKE ? || '%' "
                   "GROUP BY runs.id, rounds.case_key ORDER BY runs.id, rounds.case_key;");
  bind_text(q.get(), 1, case_filter);
  while (sqlite3_step(q.get()) == SQLITE_ROW) {
    HistoryRow r;
    auto text = [&q](int i) {
      const unsigned char* t = sqlite3_column_text(q.get(), i);
      return std::string(t ? reinterpret_cast<const char*>(t) : "");
    };
    r.run = text(0);
    r.run_dir = text(1);
    r.vendor = text(2);
    r.case_key = text(3);
    r.rounds = sqlite3_column_int(q.get(), 4);
    r.rounds_ok = sqlite3_column_int(q.get(), 5);
    r.rounds_converged = sqlite3_column_int(q.get(), 6);
    r.mean_samples_per_second = sqlite3_column_double(q.get(), 7);
    rows.push_back(r);
  }
  return rows;
}

}  // namespace xpuperf::report
