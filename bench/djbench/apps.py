from django.apps import AppConfig


class BenchConfig(AppConfig):
    name = "bench.djbench"
    label = "djbench"
