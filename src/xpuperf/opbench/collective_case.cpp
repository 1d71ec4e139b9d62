// The collectives as operator cases (all_reduce, all_gather, reduce_scatter, all_to_all): each row a
// collective × size × dtype over the case's ranks, timed like every operator row (rotated buffers,
// a flush before each call, the device's timeline), reported like nccl-tests (algbw = size / time,
// busbw = algbw × the collective's factor), with the algorithm the backend chose where it says
// (NCCL's tuning lines), the error against float64 and whether two calls agree bitwise.
//
// Every rank makes the same calls: a rank that timed blocks until `min_seconds` on its own clock
// could make more calls than its peers and wait for them forever, so a collective's row is its
// `samples` calls. Its time is the slowest rank's (a collective is done when its last rank is).

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "xpuperf/core/strings.h"
#include "xpuperf/opbench/nccl_tuning.h"
#include "xpuperf/opbench/op_case.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/distributed.h"

namespace xpuperf::opbench {
namespace {

using Inputs = std::vector<torch::Tensor>;

struct Collective {
  const char* name;
  const char* nccl;  // NCCL's name in its tuning lines; "" where c10d uses no NCCL collective
  const char* what;
  bool sums;  // a reduction: its error grows with the ranks' terms; else data moved exactly
  double factor(int n) const {
    return std::string(name) == "all_reduce" ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
  }
};

// nccl-tests' size is the larger buffer: all-gather's output, reduce-scatter's input.
constexpr Collective kCollectives[] = {
    {"all_reduce", "AllReduce", "the sum over the ranks of each rank's buffer, in place on every rank", true},
    {"all_gather", "AllGather", "each rank's share, gathered in rank order into every rank's buffer", false},
    {"reduce_scatter", "ReduceScatter", "the sum over the ranks of each rank's buffer, each rank keeping its share",
     true},
    {"all_to_all", "", "share j of each rank's buffer sent to rank j", false},
};

const Collective* find_collective(const std::string& name) {
  for (const auto& c : kCollectives)
    if (name == c.name) return &c;
  return nullptr;
}

// Input element i of rank r: its own normal draw (seed + r), rounded to the dtype; every rank can
// make every rank's, for the float64 reference.
torch::Tensor collective_values(std::int64_t count, int rank, torch::Dtype dtype, std::uint64_t seed) {
  torch::Generator gen = at::detail::createCPUGenerator(seed + static_cast<std::uint64_t>(rank));
  return at::normal(0.0, 1.0, {count}, gen).to(dtype);
}

// The collective once: `in` and `out` as the collective's buffers (all_reduce sums `in` in place).
void run_collective(const Collective& c, torchrt::Distributed& dist, torch::Tensor in, torch::Tensor out) {
  const std::string name = c.name;
  if (name == "all_reduce")
    dist.all_reduce_sum(in);
  else if (name == "all_gather")
    dist.all_gather(out, in);
  else if (name == "reduce_scatter")
    dist.reduce_scatter_sum(out, in);
  else
    dist.all_to_all(out, in);
}

// The buffers of a row: (in, out) with `count` elements in the larger one.
Inputs collective_buffers(const Collective& c, std::int64_t count, int n, const torch::TensorOptions& opts) {
  const std::int64_t share = count / n;
  const std::string name = c.name;
  if (name == "all_reduce") return {torch::zeros({count}, opts), torch::Tensor()};  // zeros stay zeros however summed
  if (name == "all_gather") return {torch::zeros({share}, opts), torch::empty({count}, opts)};
  if (name == "reduce_scatter") return {torch::zeros({count}, opts), torch::empty({share}, opts)};
  return {torch::zeros({count}, opts), torch::empty({count}, opts)};
}

// What rank `rank` must hold after the collective, in float64, from every rank's rounded inputs.
torch::Tensor collective_reference(const Collective& c, std::int64_t count, int n, int rank, torch::Dtype dtype,
                                   std::uint64_t seed) {
  const std::int64_t share = count / n;
  const std::string name = c.name;
  const auto values = [&](int r) {
    return collective_values(name == "all_gather" ? share : count, r, dtype, seed).to(torch::kFloat64);
  };
  if (name == "all_reduce" || name == "reduce_scatter") {
    torch::Tensor sum = values(0);
    for (int r = 1; r < n; ++r) sum += values(r);
    return name == "all_reduce" ? sum : sum.slice(0, rank * share, (rank + 1) * share);
  }
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < n; ++r)
    parts.push_back(name == "all_gather" ? values(r) : values(r).slice(0, rank * share, (rank + 1) * share));
  return torch::cat(parts);
}

struct CollectiveCheck {
  ErrorStats error;
  bool deterministic = false;
};

// The collective on this rank's own draws, twice: its output against the float64 reference, and
// whether the two outputs are bitwise equal.
CollectiveCheck check_collective(const Collective& c, torchrt::Distributed& dist, std::int64_t count, int n,
                                 torch::Dtype dtype, const torch::Device& device, std::uint64_t seed,
                                 const OperatorRow& row) {
  const int rank = dist.rank();
  const torch::Tensor mine =
      collective_values(std::string(c.name) == "all_gather" ? count / n : count, rank, dtype, seed);
  const auto result = [&] {
    Inputs b = collective_buffers(c, count, n, torch::TensorOptions().dtype(dtype).device(device));
    b[0].copy_(mine);
    run_collective(c, dist, b[0], b[1]);
    return (b[1].defined() ? b[1] : b[0]).to(torch::kCPU);
  };
  const torch::Tensor first = result(), second = result();
  CollectiveCheck out;
  out.error =
      error_stats(first, collective_reference(c, count, n, rank, dtype, seed), row.rtol, row.atol, row.default_atol);
  out.deterministic = torch::equal(first, second);
  return out;
}

// The largest of each value over the ranks (the slowest rank's times, the worst rank's errors).
std::vector<double> max_over_ranks(torchrt::Distributed& dist, const std::vector<double>& values,
                                   const torch::Device& device) {
  torch::Tensor t = torch::tensor(values, torch::TensorOptions().dtype(torch::kFloat64)).to(device);
  dist.all_reduce_max(t);
  t = t.to(torch::kCPU);
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

OperatorRow measure_collective(const Collective& c, torchrt::Distributed& dist, std::int64_t elements,
                               torch::Dtype dtype, const torch::Device& device, const MeasureOptions& options,
                               NcclTuningLog* tuning) {
  const int n = dist.world_size();
  OperatorRow row;
  row.op = c.name;
  row.implementation = "c10d " + dist.backend();
  row.dtype = dtype_name(dtype);
  row.device = torchrt::device_text(device.str());
  row.ranks = n;
  row.bus_factor = c.factor(n);
  const std::int64_t count = std::max<std::int64_t>(n, elements / n * n);  // every rank's share whole
  row.sizes = {count};
  std::tie(row.rtol, row.default_atol) = default_tolerance(dtype);
  row.atol = std::max(row.default_atol, c.sums ? 1e-4 * n : 0.0);
  const auto opts = torch::TensorOptions().dtype(dtype).device(device);
  const double set_bytes = static_cast<double>(count) * static_cast<double>(c10::elementSize(dtype)) * 2;
  const std::size_t copies =
      static_cast<std::size_t>(std::clamp(std::ceil(options.rotate_bytes / std::max(set_bytes, 1.0)), 1.0, 64.0));
  const std::string what = std::string(c.name) + " of " + std::to_string(count) + " " + row.dtype + " elements on " +
                           std::to_string(n) + " ranks";
  std::string chosen;
  try {
    std::vector<Inputs> sets;
    for (std::size_t i = 0; i < copies; ++i) sets.push_back(collective_buffers(c, count, n, opts));
    const OperatorCall call = [&](const Inputs& in) { run_collective(c, dist, in[0], in[1]); };
    torchrt::synchronize(device);
    dist.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    call(sets[0]);
    torchrt::synchronize(device);
    row.cold_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    MeasureOptions same_calls = options;
    same_calls.min_seconds = 0;
    same_calls.graph_calls = 0;
    if (tuning) tuning->take(c.nccl);  // the lines of the warm-up and the first call are not the row's
    time_operator_call(call, sets, device, same_calls, row);
    if (tuning) chosen = tuning->take(c.nccl);  // before the check's calls and the ranks' own all-reduces
    if (options.graph_calls > 0)
      row.graph_note = "a collective is not replayed in a device graph here (its backend's work is not captured)";
    if (options.check_accuracy) {
      const CollectiveCheck k = check_collective(c, dist, count, n, dtype, device, options.seed, row);
      row.error = k.error;
      row.deterministic = k.deterministic;
      row.checked = true;
    } else {
      row.deterministic = false;
    }
  } catch (const c10::Error& e) {
    throw row_error(what, e, set_bytes * static_cast<double>(copies) + options.flush_bytes, copies,
                    "a rank for its buffers", "lower the shape or rotate_mib",
                    "(a dtype the backend lacks? try another --dtype)");
  }
  // The slowest rank's times, the worst rank's errors; a rank whose calls differ makes the row's.
  const std::vector<double> worst =
      max_over_ranks(dist,
                     {row.median_ms, row.p10_ms, row.p90_ms, row.cv, row.host_ms, row.cold_ms, row.error.max_abs,
                      row.error.mean_abs, row.error.max_rel, row.error.mean_rel, row.error.worst_over_tolerance,
                      row.error.worst_over_default, row.deterministic ? 0.0 : 1.0},
                     device);
  row.median_ms = worst[0], row.p10_ms = worst[1], row.p90_ms = worst[2], row.cv = worst[3];
  row.host_ms = worst[4], row.cold_ms = worst[5];
  row.error = {worst[6], worst[7], worst[8], worst[9], worst[10], worst[11]};
  row.deterministic = row.checked && worst[12] == 0;
  row.accurate = row.checked && std::isfinite(row.error.worst_over_tolerance) && row.error.worst_over_tolerance <= 1;
  row.bytes = static_cast<double>(count) * static_cast<double>(c10::elementSize(dtype));
  if (row.median_ms > 0) {
    row.gb_per_s = row.bytes / (row.median_ms * 1e-3) / 1e9;
    row.bus_gb_per_s = row.gb_per_s * row.bus_factor;
  }
  row.flops_known = false;
  if (dist.backend() == "gloo" && dtype == torch::kBFloat16)
    row.algorithm = "not said by gloo; bf16 sent as fp32 (Gloo has no bf16): the wire carries twice the bytes counted";
  else if (dist.backend() != "nccl")
    row.algorithm = "not said by " + dist.backend();
  else if (!*c.nccl)
    row.algorithm = "sends and receives (c10d's all-to-all over NCCL)";
  else if (tuning && !tuning->why_not().empty())
    row.algorithm = "not known: " + tuning->why_not();
  else
    row.algorithm = chosen;
  if (dist.rank() == 0 && row.algorithm.empty()) row.algorithm = "not reported by this NCCL (2.23 and later say)";
  return row;
}

std::string collective_rows_table(const std::vector<OperatorRow>& rows) {
  std::ostringstream md;
  md << "| collective | elements | MiB | dtype | ranks | backend | algorithm | median ms | p10 – p90 ms | CV | n | "
        "host ms | cold ms | algbw GB/s | busbw GB/s | of datasheet | of measured | max rel err | accurate | "
        "deterministic |\n"
        "| --- | ---: | ---: | --- | ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
        "---: | ---: | --- | --- |\n";
  for (const auto& r : rows) {
    std::ostringstream rel;
    rel << std::setprecision(3) << r.error.max_rel;
    md << "| " << r.op << " | " << r.sizes[0] << " | " << fixed_digits(r.bytes / (1 << 20), 2) << " | " << r.dtype
       << " | " << r.ranks << " | " << r.implementation << " | " << r.algorithm << " | " << fixed_digits(r.median_ms, 4)
       << " | " << fixed_digits(r.p10_ms, 4) << " – " << fixed_digits(r.p90_ms, 4) << " | "
       << fixed_digits(100 * r.cv, 1) << " % | " << r.samples << (r.device_timed ? "" : " (host)") << " | "
       << fixed_digits(r.host_ms, 4) << " | " << fixed_digits(r.cold_ms, 3) << " | " << fixed_digits(r.gb_per_s, 1)
       << " | " << fixed_digits(r.bus_gb_per_s, 1) << " | " << percent_text(r.datasheet_fraction) << " | "
       << percent_text(r.measured_fraction) << " | " << (r.checked ? rel.str() : "–") << " | "
       << (!r.checked   ? "not checked"
           : r.accurate ? "yes"
                        : "NO")
       << " | " << (r.deterministic ? "yes" : "no") << " |\n";
  }
  return md.str();
}

}  // namespace

bool is_collective_case(const std::string& name) {
  return find_collective(name) != nullptr;
}

std::vector<std::string> collective_names() {
  std::vector<std::string> names;
  for (const auto& c : kCollectives) names.push_back(c.name);
  return names;
}

std::string collective_table_markdown() {
  std::ostringstream md;
  md << "| collective | shape | what | bytes | busbw factor (n ranks) |\n| --- | --- | --- | --- | --- |\n";
  for (const auto& c : kCollectives)
    md << "| " << c.name << " | [elements] (of the larger buffer, a multiple of n) | " << c.what
       << " | elements × dtype size | " << (std::string(c.name) == "all_reduce" ? "2(n−1)/n" : "(n−1)/n") << " |\n";
  return md.str();
}

int run_collective_case(const OperatorRequest& request, std::ostream& out, std::ostream& err) {
  const Collective& c = *find_collective(request.name);
  const bool lead = request.env.rank == 0;
  std::vector<std::int64_t> sizes;
  std::vector<torch::Dtype> dtypes;
  MeasureOptions options;
  try {
    if (request.env.world_size < 2)
      throw ConfigError(std::string(c.name) + " is a collective: run it over 2 ranks or more (xpuperf op --case " +
                        c.name + " --nproc 2, or the plan key " + c.name + ":HARDWARE:1:2:REPEAT)");
    std::vector<std::vector<std::int64_t>> shapes = request.shapes;
    if (shapes.empty()) {
      const std::string key = request.smoke ? "smoke_shapes" : "shapes";
      const ConfigEntry& e = request.config.at(key);
      if (!e.value.IsSequence()) throw ConfigError(e.source.str() + ": '" + key + "' must be a list of [elements]");
      for (const auto& item : e.value) {
        if (!item.IsSequence()) throw ConfigError(e.source.str() + ": each of '" + key + "' must be [elements]");
        std::vector<std::int64_t> shape;
        for (const auto& size : item) shape.push_back(size.as<std::int64_t>());
        shapes.push_back(shape);
      }
    }
    for (const auto& shape : shapes) {
      if (shape.size() != 1 || shape[0] < 1)
        throw ConfigError(std::string(request.shapes.empty() ? request.config.origin() : "--shape") + ": " + c.name +
                          " takes 1 size (the elements of its larger buffer), got " + std::to_string(shape.size()));
      sizes.push_back(shape[0]);
    }
    const std::vector<std::string> names =
        !request.dtypes.empty() ? request.dtypes : request.config.get_string_list("dtypes");
    for (const auto& name : names) {
      dtypes.push_back(parse_dtype(name));
      if (!c10::isFloatingType(dtypes.back()))
        throw ConfigError(std::string(c.name) + " here takes floating dtypes (fp32, bf16, fp16, fp64), got " + name);
    }
    options = measure_options(request.config, request.smoke);
  } catch (const std::exception& e) {
    if (lead) err << "xpuperf: error: " << e.what() << "\n";
    return 2;
  }
  torch::Device device = operator_device(request);
  if (!device.is_cpu()) device = torch::Device(device.type(), static_cast<c10::DeviceIndex>(request.env.local_rank));
  // NCCL reads its debug settings once, when it starts: before the process group.
  std::unique_ptr<NcclTuningLog> tuning;
  if (device.is_cuda())
    tuning = std::make_unique<NcclTuningLog>(
        (std::filesystem::temp_directory_path() / ("xpuperf-nccl-" + std::to_string(getpid()) + ".log")).string());
  std::unique_ptr<torchrt::Distributed> dist;
  try {
    dist = torchrt::Distributed::create(request.env, device, torchrt::DistributedOptions{});
  } catch (const std::exception& e) {
    err << "xpuperf: error: rank " << request.env.rank << ": " << e.what() << "\n";
    return 1;
  }
  std::vector<OperatorRow> rows;
  nlohmann::json failed = nlohmann::json::array();
  int status = 0;
  for (const auto elements : sizes)
    for (const auto dtype : dtypes) try {
        rows.push_back(measure_collective(c, *dist, elements, dtype, device, options, tuning.get()));
        OperatorRow& r = rows.back();
        r.datasheet_fraction = interconnect_fraction(request.datasheet_roof, r.bus_gb_per_s);
        r.measured_fraction = interconnect_fraction(request.measured_roof, r.bus_gb_per_s);
        if (r.checked && !r.accurate && !request.inaccurate_ok) status = 1;
      } catch (const std::runtime_error& e) {
        if (lead) err << "xpuperf: error: " << e.what() << "\n";
        failed.push_back({{"shape", {elements}}, {"dtype", dtype_name(dtype)}, {"error", e.what()}});
        status = 1;
      }
  if (tuning) {
    for (const auto& w : tuning->take_warnings()) err << w << "\n";
    std::filesystem::remove(tuning->path());
  }
  if (!lead) return status;
  out << collective_rows_table(rows);
  if (!request.measured_roof.empty()) out << "\nmeasured roof: " << request.measured_roof.source << "\n";
  for (const auto& r : rows)
    if (!r.kernels.empty())
      out << "kernels of " << r.op << " " << r.sizes[0] << " " << r.dtype << ": " << join_or_none(r.kernels) << "\n";
  log_operator_rows(out, request, device, rows, failed, {},
                    {{"ranks", request.env.world_size}, {"backend", dist->backend()}});
  write_rows_json(request, device, rows, {{"ranks", request.env.world_size}});
  return status;
}

}  // namespace xpuperf::opbench
