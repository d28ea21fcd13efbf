"""python -m tessera info: version, devices per backend, CPU features,
tuning tables, and the ctypes layout check."""

import sys


def _info(out=sys.stdout):
    try:
        import tessera
        from tessera import _lib as L
    except ImportError as e:
        print(f"python -m tessera info: {e}", file=sys.stderr)
        return 1

    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"tessera {tessera.version()}")
    p(f"  library: {L.path}")
    problems = L.check_layout()
    try:
        with tessera.Context("cpu") as cpu:
            problems += L.check_info_layout(cpu.handle)
    except tessera.TesseraError as e:
        problems.append(f"no cpu context to check tsr_context_info with: {e}")
    p("  ctypes structs: " + ("match the library" if not problems else "MISMATCH: " + "; ".join(problems)))
    p("devices:")
    for name in L.BACKENDS:
        for dev in range(16):
            try:
                ctx = tessera.Context(name, dev)
            except tessera.NoDeviceError as e:
                if dev == 0:
                    p(f"  {name}: none ({e.message})")
                break
            except tessera.TesseraError as e:
                p(f"  {name}:{dev}: error: {e}")
                break
            i = ctx.info()
            line = f"  {name}:{dev}: {i['device_name'] or '?'}, arch {i['arch']}, {i['compute_units']} compute units"
            if name == "cpu":
                line += f", {i['num_threads']} threads"
            if i["driver"]:  # the backend's own version text (CUDA: "driver X, runtime Y")
                line += f", {i['driver']}"
            p(line)
            if name == "cpu":
                feats = " ".join(i["cpu_features"]) or "(none of avx2/fma/f16c/avx512*)"
                p(f"      ISA features: {feats}")
            p(f"      tuning table: {i['table_path'] or '(none)'}")
            if i["table_status"]:
                p(f"      table status: {i['table_status']}")
            ctx.close()
    return 1 if problems else 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print("usage: python -m tessera info\n  info: version, library path, devices per backend, CPU "
              "features, tuning tables")
        return 0 if argv else 2
    if argv[0] == "info":
        return _info()
    print(f"python -m tessera: unknown command {argv[0]!r} (try: info)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
