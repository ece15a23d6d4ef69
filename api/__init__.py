"""The REST API for CI and scripts (docs/api.md): per-user tokens, reads of profiles,
versions, hosts, requests, jobs, benchmark results and history, and the writes a
requester may make (versions, imports, lint, deploy requests). Never an approval."""
