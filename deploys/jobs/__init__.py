"""Deploy and probe jobs: plain step functions, a runner that records them, and the thin
django-q2 task wrappers that only enqueue and call the runner (docs/architecture.md,
"Jobs and steps")."""
