"""The tasks extension: creation, reads, updates, cancellation, failures, the store and its fast paths, the fleet."""
