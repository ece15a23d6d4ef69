"""Differential proof of the linter's Exec model against real systemd."""
