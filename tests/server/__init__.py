"""The dispatch core: tools, prompts, resources, listen streams, notifications, MRTR, extensions, limits, tracing."""
