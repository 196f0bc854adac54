"""The graph tests (a package, so its conftest never shadows the top-level ``conftest``)."""
