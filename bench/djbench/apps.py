import os

from django.apps import AppConfig


class BenchConfig(AppConfig):
    name = "bench.djbench"
    label = "djbench"

    def ready(self) -> None:
        if os.environ.get("BENCH_COUNT_QUERIES") == "1":
            from .querycount import enable

            enable()
