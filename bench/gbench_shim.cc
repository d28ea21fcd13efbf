// The C shim over Google Benchmark (see gbench_shim.h).
#include "gbench_shim.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

struct gb_state {
    benchmark::State *st;
};

namespace {

// Each benchmark's repetitions (--benchmark_repetitions; with
// --benchmark_enable_random_interleaving they arrive shuffled among the
// others'), gathered by name; the summaries read their medians.
struct Repeats {
    gb_result first;
    std::vector<double> gflops, gbps, seconds;
};
std::vector<Repeats> repeats;
std::vector<gb_result> results;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Prints as the console reporter does and keeps the rates for the summary:
// the runs themselves, not Google Benchmark's aggregates of them (its
// _stddev and _cv rows carry the rate counters too, and share the run's
// name up to their suffix).
class CollectingReporter : public benchmark::ConsoleReporter {
  public:
    void ReportRuns(const std::vector<Run> &runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run &r : runs) {
            if (r.run_type == Run::RT_Aggregate) continue;
            const std::string name = r.benchmark_name();
            auto it = std::find_if(repeats.begin(), repeats.end(),
                                   [&](const Repeats &x) { return name == x.first.name; });
            if (it == repeats.end()) {
                Repeats x{};
                std::strncpy(x.first.name, name.c_str(), sizeof x.first.name - 1);
                repeats.push_back(x);
                it = repeats.end() - 1;
            }
            auto f = r.counters.find("gflops");
            auto b = r.counters.find("gbps");
            it->gflops.push_back(f == r.counters.end() ? 0 : f->second.value);
            it->gbps.push_back(b == r.counters.end() ? 0 : b->second.value);
            it->seconds.push_back(r.iterations > 0 ? r.real_accumulated_time / static_cast<double>(r.iterations) : 0);
            it->first.error |= r.error_occurred;
        }
    }
};

}  // namespace

static benchmark::internal::Benchmark *register_one(const char *name, gb_fn fn, void *arg, double flops,
                                                    double bytes, int calls) {
    return benchmark::RegisterBenchmark(name, [fn, arg, flops, bytes, calls](benchmark::State &st) {
        gb_state s{&st};
        fn(&s, arg);
        if (calls > 0) st.counters["calls"] = calls;
        if (flops > 0)
            st.counters["gflops"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
        if (bytes > 0)
            st.counters["gbps"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    });
}

extern "C" void gb_register(const char *name, gb_fn fn, void *arg, double flops, double bytes) {
    register_one(name, fn, arg, flops, bytes, 0)->UseRealTime()->Unit(benchmark::kMillisecond);
}

extern "C" void gb_register_ns(const char *name, gb_fn fn, void *arg) {
    register_one(name, fn, arg, 0, 0, 0)->UseRealTime()->Unit(benchmark::kNanosecond);
}

extern "C" void gb_register_manual(const char *name, gb_fn fn, void *arg, double flops, double bytes,
                                   int calls) {
    register_one(name, fn, arg, flops, bytes, calls)->UseManualTime()->Unit(benchmark::kMicrosecond);
}

extern "C" void gb_set_iteration_time(gb_state *s, double seconds) { s->st->SetIterationTime(seconds); }

extern "C" int gb_keep_running(gb_state *s) { return s->st->KeepRunning(); }

extern "C" void gb_skip_with_error(gb_state *s, const char *msg) { s->st->SkipWithError(msg); }

extern "C" void gb_initialize(int *argc, char **argv) { benchmark::Initialize(argc, argv); }

extern "C" void gb_run(void) {
    repeats.clear();
    results.clear();
    CollectingReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    for (const Repeats &x : repeats) {
        gb_result g = x.first;
        g.gflops = median(x.gflops), g.gbps = median(x.gbps), g.seconds = median(x.seconds);
        results.push_back(g);
    }
}

extern "C" int gb_results(const gb_result **out) {
    *out = results.data();
    return static_cast<int>(results.size());
}
