// The C shim over Google Benchmark (see gbench_shim.h).
#include "gbench_shim.h"

#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

struct gb_state {
    benchmark::State *st;
};

namespace {

std::vector<gb_result> results;

// Prints as the console reporter does and keeps the rates for the summary.
class CollectingReporter : public benchmark::ConsoleReporter {
  public:
    void ReportRuns(const std::vector<Run> &runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run &r : runs) {
            gb_result g{};
            std::strncpy(g.name, r.benchmark_name().c_str(), sizeof g.name - 1);
            auto f = r.counters.find("gflops");
            auto b = r.counters.find("gbps");
            g.gflops = f == r.counters.end() ? 0 : f->second.value;
            g.gbps = b == r.counters.end() ? 0 : b->second.value;
            g.error = r.error_occurred;
            g.seconds = r.iterations > 0 ? r.real_accumulated_time / static_cast<double>(r.iterations) : 0;
            results.push_back(g);
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
    results.clear();
    CollectingReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
}

extern "C" int gb_results(const gb_result **out) {
    *out = results.data();
    return static_cast<int>(results.size());
}
