"""Throwaway systemd + sshd test hosts (systemd-nspawn on a tmpfs overlay) for specadmin tests."""

from .host import (
    STATE_FILE,
    TestHost,
    TestHostError,
    boot_host,
    boot_hosts,
    find_leftovers,
    pick_free_ports,
    reap_leftovers,
    stop_all,
)
from .install import HOST_CONFIG, HOST_LIB, double_config, install_doubles

__all__ = [
    "HOST_CONFIG",
    "HOST_LIB",
    "STATE_FILE",
    "TestHost",
    "TestHostError",
    "boot_host",
    "boot_hosts",
    "double_config",
    "find_leftovers",
    "install_doubles",
    "pick_free_ports",
    "reap_leftovers",
    "stop_all",
]
