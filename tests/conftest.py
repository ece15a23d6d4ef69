"""Shared pytest configuration: plugins that provide session-wide fixtures."""
