"""Command-line entry points. Thin: parse arguments, call the API, print."""

from __future__ import annotations


def run_main() -> int:
    from awm_runtime.cli._run import main

    return main()


def worlds_main() -> int:
    from awm_runtime.cli._worlds import main

    return main()


def bench_main() -> int:
    from awm_runtime.cli._bench import main

    return main()


def serve_main() -> int:
    from awm_runtime.cli._serve import main

    return main()


def report_main() -> int:
    from awm_runtime.cli._report import main

    return main()


def fork_main() -> int:
    from awm_runtime.cli._fork import main

    return main()


def view_main() -> int:
    from awm_runtime.cli._view import main

    return main()


def export_main() -> int:
    from awm_runtime.cli._export import main

    return main()


__all__ = ["bench_main", "export_main", "report_main", "run_main", "serve_main", "view_main", "worlds_main"]
